-- wrk script of the real-host benchmark (benchmarks/src/realhost/load.rs): POSTs the body in the
-- file named after `--` on every request, and when done prints report.lua's line of figures.

function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.method = "POST"
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = "application/json"
end

-- report.lua, from the folder this script is in, prints the figures when done.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
