-- wrk script of the real-host benchmark (benchmarks/src/realhost/load.rs): POSTs the body in the
-- file named after `--` on every request, and when done prints one line of figures the harness
-- reads (microseconds; errors are connect, read, write, timeout and non-2xx answers).

function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.method = "POST"
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("taintguard-wrk requests=%d duration_us=%d p99_us=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
