-- wrk script of the API server's admission benchmark (benchmarks/src/realhost/apiserver.rs):
-- sends the body in the file named after `--` with the method, content type and bearer token
-- given after it, as the user and group after those when given, and when done prints report.lua's
-- line of figures. Each `@SEQ@` of the body becomes the fifth argument and the request's number:
-- the name of each object a stream creates (the API server's generated names collide now and then
-- over thousands of objects, and it answers a collision with an error).

local template, tag, sequence = nil, nil, 0

function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.method = args[2]
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = args[3]
  wrk.headers["Authorization"] = "Bearer " .. args[4]
  -- The writer the stream's input names, impersonated by the token's user.
  if args[6] and args[6] ~= "" then
    wrk.headers["Impersonate-User"] = args[6]
    wrk.headers["Impersonate-Group"] = args[7]
  end
  if string.find(wrk.body, "@SEQ@", 1, true) then
    template, tag = wrk.body, args[5]
  end
end

function request()
  if not template then
    return wrk.format()
  end
  sequence = sequence + 1
  return wrk.format(nil, nil, nil, (string.gsub(template, "@SEQ@", tag .. "-" .. sequence)))
end

-- The first few refused requests, on stderr, for the harness's message: which status and why.
local shown = 0
function response(status, headers, body)
  if status >= 300 and shown < 3 then
    shown = shown + 1
    io.stderr:write(string.format("HTTP %d: %s\n", status, body))
  end
end

-- report.lua, from the folder this script is in, prints the figures when done.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
