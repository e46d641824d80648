-- wrk script for scripts/bench.sh: plain GETs (the HTTP floor); writes the figures as JSON to
-- BENCH_OUT when it is set.
local out = os.getenv("BENCH_OUT")

function done(summary, latency, requests)
  if not out then return end
  local f = assert(io.open(out, "w"))
  local seconds = summary.duration / 1e6
  f:write(string.format('{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
  f:close()
end
