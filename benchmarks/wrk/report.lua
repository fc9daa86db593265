-- The line of figures every wrk script of the benchmarks prints when done, the one line the
-- harness reads (benchmarks/src/realhost/load.rs): microseconds; errors are connect, read, write,
-- timeout and non-2xx answers. Loaded by post.lua and apiserver.lua from beside them.

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("taintguard-wrk requests=%d duration_us=%d p99_us=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
