#!/usr/bin/env bash
# Slow vendors, many steps in flight: host-server (release, `--profile server`, a SQLite file in
# the bench's temp dir, `--model openai:bench`) in front of an OpenAI-compatible stand-in that
# streams each reply over BENCH_STREAM_MS (tests/examples/vendor_stand_in.rs), loaded by wrk with
# as many connections as steps should be in flight, level by level. The peer (bench/peers/node, the Vercel AI SDK's
# OpenAI provider at the same stand-in) runs the same levels. Prints one table and writes the
# figures to target/bench/vendor.json. Never run by CI: figures are printed, not asserted.
#
# Per level: steps/s against the ideal (connections / stream time), p50 and p99, the server's
# own overhead at p99 (the step's p99 minus the stand-in's own p99 stream time), non-2xx answers,
# 200 answers whose stream ends in an `error` frame (the vendor call failed; the last code shown),
# refused connections (wrk's connect errors) and the other socket errors (reset, timed out), the
# connections wrk held open at most (sampled with `ss`: below the level, the load was not the
# level's), the stand-in's streams in flight at most, and the server's peak RSS above its idle
# RSS, per step in flight.
#
#   scripts/bench-vendor.sh                              # levels 100 1000 2000 5000
#   BENCH_LEVELS="100 500" BENCH_STREAM_MS=2000 scripts/bench-vendor.sh
#   BENCH_PEER=0 scripts/bench-vendor.sh                 # host-server only
#   BENCH_SERVER=/tmp/host-server.a scripts/bench-vendor.sh   # that binary, not a fresh build
#   BENCH_VENDOR_HTTP2=1 scripts/bench-vendor.sh         # h2c to the stand-in: one connection
#   BENCH_SECONDS=30 scripts/bench-vendor.sh             # each level's load, in seconds
#
# CARGO_TARGET_DIR is honoured (default: the workspace's target/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bins="$(realpath -m "${CARGO_TARGET_DIR:-target}")/server"
# shellcheck source=scripts/lib/serve.sh
. scripts/lib/serve.sh
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh

levels=${BENCH_LEVELS:-100 1000 2000 5000}
stream_ms=${BENCH_STREAM_MS:-2000}
with_peer=${BENCH_PEER:-1}
body="$root/bench/carla-step0.request.json"
lua="$root/bench/wrk/step.lua"
out_dir="$root/target/bench"
mkdir -p "$out_dir"
work=$(mktemp -d)

command -v wrk >/dev/null || { echo "wrk is missing: run scripts/setup.sh (or apt-get install wrk)" >&2; exit 1; }
# Each step in flight holds two sockets in the server (the browser's and the vendor's) and one
# in wrk and in the stand-in: every process started below inherits the limit.
ulimit -n "$(ulimit -Hn)"
echo "file descriptors: $(ulimit -n)" >&2

server=${BENCH_SERVER:-}
echo "building host-server and the vendor stand-in (--profile server)…" >&2
if [ -z "$server" ]; then
  cargo build -q --profile server -p host-server-cli
  server="$bins/host-server"
fi
cargo build -q --profile server -p dpas-tests --features vendor-stand-in --example vendor-stand-in
if [ "$with_peer" = 1 ] && [ ! -d bench/peers/node/node_modules ]; then
  (cd bench/peers/node && npm ci --no-audit --no-fund >&2)
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# held_max PORT PID → the most connections to 127.0.0.1:PORT established at once while the
# process PID (the level's wrk) runs, sampled every 200 ms.
held_max() {
  local port=$1 load=$2 most=0 now
  while kill -0 "$load" 2>/dev/null; do
    now=$(ss -Htn state established "( dport = :$port )" | wc -l)
    [ "$now" -gt "$most" ] && most=$now
    sleep 0.2
  done
  echo "$most"
}

# ramp LABEL: every level against $url, with the stand-in's stats before and after each.
ramp() {
  local label=$1 cookie
  cookie=$(sign_in "$url")
  # Warm-up: one short level, then the idle RSS the levels are measured above.
  BENCH_BODY="$body" BENCH_MODE=fresh BENCH_RUN="$label-warm" BENCH_COOKIE="$cookie" BENCH_OUT=/dev/null \
    wrk -t2 -c16 -d"$(((stream_ms / 1000) + 2))s" --timeout 60s -s "$lua" "$url/agent/chat" >/dev/null
  rss_kb "$app_pid" VmRSS >"$work/$label-idle-kb"
  for n in $levels; do
    echo "  $label: $n steps in flight…" >&2
    echo 5 >"/proc/$app_pid/clear_refs"
    curl -fsS "$vendor_url/stats" >"$work/$label-$n-vendor-before.json"
    # Three stream times per connection at least, and the connections' ramp-up on top; a
    # server slower than that at a level needs BENCH_SECONDS (a step longer than the load is
    # never counted).
    local seconds=${BENCH_SECONDS:-$(((stream_ms * 3) / 1000 + 4))}
    BENCH_BODY="$body" BENCH_MODE=fresh BENCH_RUN="$label-$n" BENCH_COOKIE="$cookie" BENCH_OUT="$work/$label-$n.json" \
      BENCH_THREADS=2 BENCH_COUNT_ERRORS=1 wrk -t2 -c"$n" -d"${seconds}s" --timeout 60s -s "$lua" "$url/agent/chat" \
      >"$work/$label-$n.txt" &
    local load=$!
    held_max "${url##*:}" "$load" >"$work/$label-$n-held"
    wait "$load"
    cp "$work/$label-$n.txt" "$out_dir/vendor-$label-$n.wrk.txt"
    curl -fsS "$vendor_url/stats" >"$work/$label-$n-vendor-after.json"
    rss_kb "$app_pid" VmHWM >"$work/$label-$n-peak-kb"
  done
}

# A stand-in of its own for each side, so one side's streams never count in the other's.
start_vendor() {
  serve "$bins/examples/vendor-stand-in" --stream-ms "$stream_ms"
  trap cleanup EXIT # serve's own trap would replace it
  vendor_url=$url vendor_pid=$serve_pid
  pids+=("$vendor_pid")
}

echo "host-server…" >&2
start_vendor
# One signed-in user drives every connection: lift the per-user step limit.
# A file, as a deployment's: an in-memory database grows with every finished step, which would
# count as memory per step in flight.
OPENAI_BASE_URL="$vendor_url/v1" OPENAI_HTTP2_PRIOR_KNOWLEDGE="${BENCH_VENDOR_HTTP2:-0}" \
  serve "$server" --demo \
  --model openai:bench --database "sqlite://$work/bench.db" --listen 127.0.0.1:0 \
  --max-concurrent-steps 1000000 --model-timeout 120
trap cleanup EXIT
app_pid=$serve_pid
pids+=("$app_pid")
ramp ours
kill "$app_pid" "$vendor_pid" 2>/dev/null || true

if [ "$with_peer" = 1 ]; then
  echo "peer (Node, Vercel AI SDK, its OpenAI provider)…" >&2
  start_vendor
  PEER_OPENAI_BASE_URL="$vendor_url/v1" serve node "$root/bench/peers/node/server.mjs" 0
  trap cleanup EXIT
  app_pid=$serve_pid
  pids+=("$app_pid")
  ramp peer
  kill "$app_pid" "$vendor_pid" 2>/dev/null || true
fi

WORK="$work" LEVELS="$levels" STREAM_MS="$stream_ms" WITH_PEER="$with_peer" \
  OUT="$out_dir/vendor.json" node "$root/bench/report-vendor.mjs"
