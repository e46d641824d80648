#!/usr/bin/env bash
# The step benchmark: host-server (release, `--profile server`, in-memory SQLite, scripted model)
# and its peer (bench/peers/node: the same step on the Vercel AI SDK) under the same wrk load,
# posting the reference browser's Carla step 0 (bench/carla-step0.request.json). Prints one
# table and writes the figures to target/bench/bench.json. Never run by CI: figures are
# printed, not asserted.
#
# A stored thread holds at most 400 messages (a step adds 3), so the same-conversation loads
# and the decay run post 133 steps into a conversation and then move on to the next one
# (bench/wrk/step.lua): every step they count is a stored step. Answers that still say
# `thread.full` (answered, not stored) are counted and printed beside the figures.
#
#   scripts/bench.sh              # 5 s per load; about 2 minutes once built
#   BENCH_SECONDS=10 scripts/bench.sh
#   BENCH_PEER=0 scripts/bench.sh # host-server only
#   scripts/bench.sh --replicas 2 --database postgres  # see scripts/bench-replicas.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  replicas="" database=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --replicas) replicas=${2:-}; shift 2 ;;
      --database) database=${2:-}; shift 2 ;;
      *) echo "unknown argument $1 (expected --replicas N --database postgres)" >&2; exit 2 ;;
    esac
  done
  case "$replicas" in '' | *[!0-9]* | 0) echo "--replicas takes a whole number of at least 1" >&2; exit 2 ;; esac
  [ "$database" = postgres ] || { echo "--replicas needs --database postgres (SQLite is one process's)" >&2; exit 2; }
  exec scripts/bench-replicas.sh "$replicas"
fi
root=$(pwd)
# shellcheck source=scripts/lib/serve.sh
. scripts/lib/serve.sh
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh

seconds=${BENCH_SECONDS:-5}
decay_steps=${BENCH_DECAY_STEPS:-10000}
with_peer=${BENCH_PEER:-1}
body="$root/bench/carla-step0.request.json"
lua="$root/bench/wrk/step.lua"
out_dir="$root/target/bench"
mkdir -p "$out_dir"
work=$(mktemp -d)

if ! command -v wrk >/dev/null; then
  echo "wrk is missing: run scripts/setup.sh (or apt-get install wrk)" >&2
  exit 1
fi

echo "building host-server (--profile server)…" >&2
cargo build -q --profile server -p host-server-cli
if [ "$with_peer" = 1 ] && [ ! -d bench/peers/node/node_modules ]; then
  (cd bench/peers/node && npm ci --no-audit --no-fund >&2)
fi

# load NAME CONNECTIONS MODE [wrk args…] → writes $work/NAME.json
load() {
  local name=$1 conns=$2 mode=$3
  shift 3
  local threads=$((conns < 2 ? conns : 2))
  BENCH_BODY="$body" BENCH_MODE="$mode" BENCH_COOKIE="$cookie" BENCH_OUT="$work/$name.json" \
    BENCH_THREADS="$threads" wrk -t"$threads" -c"$conns" -s "$lua" "$@" "$url/agent/chat" >"$work/$name.txt"
}

# measure LABEL: runs every load against $url and records the figures under LABEL.
measure() {
  local label=$1
  cookie=$(sign_in "$url")
  # One warm-up second, then the peak is measured from here.
  load "$label-warm" 8 fresh -d1s
  echo 5 >"/proc/$serve_pid/clear_refs"
  BENCH_OUT="$work/$label-health.json" wrk -t2 -c8 -d"${seconds}s" -s "$root/bench/wrk/health.lua" \
    "$url/api/health" >/dev/null
  for conns in 1 8 64; do
    for mode in same fresh; do
      echo "  $label: $mode conversation, $conns connection(s)…" >&2
      # Each load's conversations are its own (a fresh server's threads, not another load's).
      BENCH_CONVERSATION="cnv_${mode}_${conns}_$RANDOM" load "$label-$mode-$conns" "$conns" "$mode" -d"${seconds}s"
    done
  done
  rss_kb "$serve_pid" VmHWM >"$work/$label-peak-kb"
}

# replays LABEL: the same step posted again and again (answered from its record), at 1 and 8
# connections, beside the fresh-conversation loads above. Ours only: the peer keeps no record.
replays() {
  local label=$1
  for conns in 1 8; do
    echo "  $label: replayed step, $conns connection(s)…" >&2
    BENCH_CONVERSATION="r${conns}_$RANDOM" load "$label-replay-$conns" "$conns" replay -d"${seconds}s"
  done
}

# store_growth: BENCH_GROWTH_STEPS fresh steps into a SQLite file, then what the file and its
# step records hold per retained step (bench/store-growth.py reads the file).
store_growth() {
  local db="$work/growth.db"
  echo "host-server on a SQLite file: store growth per retained step…" >&2
  serve "$root/target/server/host-server" --demo --model scripted --database "sqlite://$db" \
    --listen 127.0.0.1:0 --max-concurrent-steps 1024
  cookie=$(sign_in "$url")
  python3 "$root/bench/store-growth.py" "$db" >"$work/growth-before.json"
  load growth 8 fresh -d"${seconds}s"
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
  python3 "$root/bench/store-growth.py" "$db" >"$work/growth-after.json"
}

# next_generation FILE → the conversation after the last one a same-conversation load posted to.
next_generation() { sed -n 's/.*"generation":\([0-9]*\).*/\1/p' "$1" | awk '{print $1 + 1}'; }

# decay LABEL: BENCH_DECAY_STEPS stored steps, 133 to a conversation: the first second, the
# fill, then the last second, with the resident memory at both ends.
decay() {
  local label=$1 conv="cnv_decay_$RANDOM"
  echo "  $label: $decay_steps steps, 133 to a conversation…" >&2
  rss_kb "$serve_pid" VmRSS >"$work/$label-decay-rss-start"
  BENCH_CONVERSATION=$conv load "$label-decay-first" 8 same -d1s
  # wrk runs for a duration, not a count: fill for as long as the first second's rate needs.
  local first fill
  first=$(sed -n 's/.*"requests":\([0-9]*\).*/\1/p' "$work/$label-decay-first.json")
  fill=$(((decay_steps - first + first - 1) / (first > 0 ? first : 1)))
  fill=$((fill > 60 ? 60 : fill)) # keeps the whole run within ~3 minutes on a slow machine
  local generation
  generation=$(next_generation "$work/$label-decay-first.json")
  if [ "$fill" -gt 0 ]; then
    BENCH_CONVERSATION=$conv BENCH_GENERATION=$generation load "$label-decay-fill" 8 same -d"${fill}s"
    generation=$(next_generation "$work/$label-decay-fill.json")
  fi
  BENCH_CONVERSATION=$conv BENCH_GENERATION=$generation load "$label-decay-last" 8 same -d1s
  rss_kb "$serve_pid" VmRSS >"$work/$label-decay-rss-end"
}

echo "host-server…" >&2
# One signed-in user drives up to 64 connections here: lift the per-user step limit (default 4)
# so the figures are steps, not 429s.
serve "$root/target/server/host-server" --demo --model scripted --database sqlite::memory: \
  --listen 127.0.0.1:0 --max-concurrent-steps 1024
measure ours
replays ours
decay ours
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
store_growth

if [ "$with_peer" = 1 ]; then
  echo "peer (Node, Vercel AI SDK)…" >&2
  serve node "$root/bench/peers/node/server.mjs" 0
  measure peer
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
fi

WORK="$work" SECONDS_PER_LOAD="$seconds" DECAY_STEPS="$decay_steps" WITH_PEER="$with_peer" \
  OUT="$out_dir/bench.json" node "$root/bench/report.mjs"
rm -rf "$work"
