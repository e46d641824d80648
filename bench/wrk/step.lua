-- wrk script for scripts/bench.sh: POSTs the step request in BENCH_BODY with the session cookie
-- in BENCH_COOKIE. BENCH_MODE=fresh gives every request a conversation id of its own;
-- BENCH_MODE=same keeps the file's id, or BENCH_CONVERSATION when set. At the end it writes the
-- figures as JSON to BENCH_OUT.

local body_file = os.getenv("BENCH_BODY")
local mode = os.getenv("BENCH_MODE") or "same"
local out = os.getenv("BENCH_OUT")
local fixed = os.getenv("BENCH_CONVERSATION")

local threads = {}
local counter = 1

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local prefix, suffix, n = nil, nil, 0

function init(args)
  local f = assert(io.open(body_file, "rb"))
  local body = f:read("*a")
  f:close()
  local s, e = body:find('"conversationId"%s*:%s*"[^"]*"')
  assert(s, "the request has no conversationId")
  prefix = body:sub(1, s - 1) .. '"conversationId": "'
  suffix = '"' .. body:sub(e + 1)
  if mode == "same" then
    local id = fixed or body:sub(s, e):match('"([^"]*)"$')
    wrk.body = prefix .. id .. suffix
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Cookie"] = os.getenv("BENCH_COOKIE")
end

function request()
  if mode == "fresh" then
    n = n + 1
    return wrk.format(nil, nil, nil, prefix .. "cnv_b" .. tid .. "_" .. n .. suffix)
  end
  return wrk.format()
end

function done(summary, latency, requests)
  if not out then return end
  local f = assert(io.open(out, "w"))
  local seconds = summary.duration / 1e6
  local e = summary.errors
  f:write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"non2xx":%d,"socket_errors":%d}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e.status, e.connect + e.read + e.write + e.timeout))
  f:close()
end
