-- wrk script for scripts/bench.sh: POSTs the step request in BENCH_BODY with the session cookie
-- in BENCH_COOKIE. BENCH_MODE=fresh gives every request a conversation id of its own, unique
-- beyond this run too (each wrk thread's ids carry a random tag, after BENCH_RUN when set): a
-- load after another on the same server, or beside another on a replica sharing its database,
-- posts ids never posted before, not a step answered from an earlier one's record or refused
-- for another body (`STEP_CONFLICT`);
-- BENCH_MODE=same posts every request into one conversation (BENCH_CONVERSATION, else the
-- file's id) until it holds BENCH_STEPS_PER_CONVERSATION steps, then into the next one
-- (`<id>_1`, `<id>_2`, … from BENCH_GENERATION on): a stored thread is capped (400 messages),
-- and a step past the cap is answered but not stored, so without the turn-over a long run
-- would measure refused writes. Each wrk thread posts the same share of every conversation's
-- steps, so together they fill it exactly once. Answers carrying a `thread.full` frame (steps
-- not stored) are counted all the same. Every request is a turn of its own (its `turnId` is
-- the thread's and the request's number): the same ids posted again would be the same step,
-- answered from its record instead of run. BENCH_MODE=replay posts exactly that: one step of
-- a conversation per wrk thread, the same body every time, so every request after the
-- thread's first is answered from the step's record (`dpas-step-replay: true`, counted as
-- `replayed`). BENCH_MODE=fresh with BENCH_COUNT_ERRORS=1 counts the answers whose stream
-- carries an `error` frame. At the end it writes the figures as JSON to BENCH_OUT.

local body_file = os.getenv("BENCH_BODY")
local mode = os.getenv("BENCH_MODE") or "same"
local out = os.getenv("BENCH_OUT")
local fixed = os.getenv("BENCH_CONVERSATION")
local per_conversation = tonumber(os.getenv("BENCH_STEPS_PER_CONVERSATION") or "133")
local first_generation = tonumber(os.getenv("BENCH_GENERATION") or "0")
local wrk_threads = tonumber(os.getenv("BENCH_THREADS") or "1")
-- random_tag() → 8 hex digits from the kernel's random source.
local function random_tag()
  local f = assert(io.open("/dev/urandom", "rb"))
  local bytes = f:read(4)
  f:close()
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

-- This thread's tag (each wrk thread runs the script in a Lua state of its own).
local run = (os.getenv("BENCH_RUN") or "") .. random_tag()

local threads = {}
local counter = 1

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local prefix, middle, suffix, n, id, replay_request = nil, nil, nil, 0, nil, nil
-- This thread's share of a conversation's steps and the requests it has sent; the answers
-- that said the step was not stored, and the conversation posted to last (read by `done`).
local share, sent = math.max(1, math.floor(per_conversation / wrk_threads)), 0
full, generation, replayed = 0, first_generation, 0

function init(args)
  local f = assert(io.open(body_file, "rb"))
  local body = f:read("*a")
  f:close()
  local s, e = body:find('"conversationId"%s*:%s*"[^"]*"')
  assert(s, "the request has no conversationId")
  prefix = body:sub(1, s - 1) .. '"conversationId": "'
  local rest = body:sub(e + 1)
  local ts, te = rest:find('"turnId"%s*:%s*"[^"]*"')
  assert(ts, "the request has no turnId after its conversationId")
  middle = '"' .. rest:sub(1, ts - 1) .. '"turnId": "'
  suffix = '"' .. rest:sub(te + 1)
  id = fixed or body:sub(s, e):match('"([^"]*)"$')
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Cookie"] = os.getenv("BENCH_COOKIE")
  replay_request = wrk.format(nil, nil, nil,
    prefix .. "cnv_replay_" .. (fixed or id) .. "_" .. tid .. middle .. "trn_replay" .. suffix)
end

function request()
  if mode == "replay" then
    return replay_request
  end
  if mode == "fresh" then
    n = n + 1
    local turn = "trn_b" .. run .. "_" .. tid .. "_" .. n
    return wrk.format(nil, nil, nil, prefix .. "cnv_b" .. run .. "_" .. tid .. "_" .. n .. middle .. turn .. suffix)
  end
  generation = first_generation + math.floor(sent / share)
  sent = sent + 1
  local conversation = generation == 0 and id or (id .. "_" .. generation)
  local turn = "trn_b" .. tid .. "_" .. sent
  return wrk.format(nil, nil, nil, prefix .. conversation .. middle .. turn .. suffix)
end

if mode == "replay" then
  function response(status, headers, body)
    if headers["dpas-step-replay"] == "true" or headers["Dpas-Step-Replay"] == "true" then
      replayed = replayed + 1
    end
  end
end

if mode == "same" then
  -- Only the same-conversation loads read the answers (wrk then keeps each body).
  function response(status, headers, body)
    if body:find('"thread.full"', 1, true) then
      full = full + 1
    end
  end
end

-- With BENCH_COUNT_ERRORS=1, a fresh step answered 200 whose stream carries an `error` frame
-- (the model call failed or timed out) is counted, with the code of the last one seen.
failed, failed_code = 0, ""
if mode == "fresh" and os.getenv("BENCH_COUNT_ERRORS") == "1" then
  function response(status, headers, body)
    if headers["dpas-step-replay"] == "true" or headers["Dpas-Step-Replay"] == "true" then
      replayed = replayed + 1
    end
    local at = body:find('"type":"error"', 1, true)
    if at then
      failed = failed + 1
      failed_code = body:match('"code":"([%u_]+)"', at) or failed_code
    end
  end
end

function done(summary, latency, requests)
  if not out then return end
  local not_stored, last_generation, replays, failures, failure_code = 0, first_generation, 0, 0, ""
  for _, t in ipairs(threads) do
    not_stored = not_stored + (t:get("full") or 0)
    failures = failures + (t:get("failed") or 0)
    local code = t:get("failed_code")
    if code and code ~= "" then failure_code = code end
    replays = replays + (t:get("replayed") or 0)
    last_generation = math.max(last_generation, t:get("generation") or 0)
  end
  local f = assert(io.open(out, "w"))
  local seconds = summary.duration / 1e6
  local e = summary.errors
  f:write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"non2xx":%d,"socket_errors":%d,"connect_errors":%d,"not_stored":%d,"generation":%d,"replayed":%d,"error_frames":%d,"error_code":"%s"}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e.status, e.connect + e.read + e.write + e.timeout, e.connect, not_stored, last_generation, replays,
    failures, failure_code))
  f:close()
end
