#!/usr/bin/env bash
# The cost curves: CPU per step against the history's length (2, 50, 200, 400 messages) and
# the catalog's size (24 and 128 tools, and meta mode for a registry beyond the frontend
# limit, 512 capabilities), host-server (release, `--profile server`, in-memory SQLite, scripted model) beside
# its peer (bench/peers/node) in the same run. Requests come from bench/request.mjs; each is
# posted by wrk on one connection, a fresh conversation per request, and the CPU a step costs
# is the server process's user + system time over the load (/proc/PID/stat) divided by its
# steps. The share of it that is reading the request is `decode_request` on the same bodies
# (`cargo bench -p dpas-protocol`, BENCH_REQUESTS). Prints two tables and writes the figures
# to target/bench/curves.json. Never run by CI: figures are printed, not asserted.
#
#   scripts/bench-curves.sh               # 5 s per point; about 3 minutes once built
#   BENCH_SECONDS=10 BENCH_PEER=0 scripts/bench-curves.sh
# CARGO_TARGET_DIR is honoured (default: the workspace's target/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin="$(realpath -m "${CARGO_TARGET_DIR:-target}")/server/host-server"
# shellcheck source=scripts/lib/serve.sh
. scripts/lib/serve.sh
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh

seconds=${BENCH_SECONDS:-5}
with_peer=${BENCH_PEER:-1}
lua="$root/bench/wrk/step.lua"
out_dir="$root/target/bench"
mkdir -p "$out_dir"
work=$(mktemp -d)
command -v wrk >/dev/null || { echo "wrk is missing: run scripts/setup.sh" >&2; exit 1; }

histories="2 50 200 400"
# Frontend descriptors: with the server's 8 domain tools, 24 (Carla's) and 128 tools in all.
catalogs="16 120 meta"
for m in $histories; do node bench/request.mjs --messages "$m" >"$work/history-$m.json"; done
for c in $catalogs; do
  if [ "$c" = meta ]; then
    node bench/request.mjs --mode meta >"$work/catalog-$c.json"
  else
    node bench/request.mjs --tools "$c" >"$work/catalog-$c.json"
  fi
done
requests=$(find "$work" -name '*.json' | sort | paste -sd:)

echo "building host-server (--profile server) and the protocol's bench…" >&2
cargo build -q --profile server -p host-server-cli
if [ "$with_peer" = 1 ] && [ ! -d bench/peers/node/node_modules ]; then
  (cd bench/peers/node && npm ci --no-audit --no-fund >&2)
fi

echo "decoding the requests (cargo bench -p dpas-protocol)…" >&2
BENCH_REQUESTS="$requests" cargo bench -q -p dpas-protocol --bench hot_paths 2>/dev/null |
  sed -n 's/^decode_request (\([^)]*\)\.json) *\([0-9.]*\) µs\/op.*/\1 \2/p' >"$work/decode.txt"

# cpu_ticks PID → user + system time of the process so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# point LABEL NAME: one connection posting $work/NAME.json for $seconds, a fresh conversation
# per request; writes $work/LABEL-NAME.json (wrk's figures) and LABEL-NAME.ticks.
point() {
  local label=$1 name=$2 before after
  before=$(cpu_ticks "$serve_pid")
  BENCH_BODY="$work/$name.json" BENCH_MODE=fresh BENCH_COOKIE="$cookie" BENCH_OUT="$work/$label-$name.wrk.json" \
    wrk -t1 -c1 -d"${seconds}s" -s "$lua" "$url/agent/chat" >/dev/null
  after=$(cpu_ticks "$serve_pid")
  echo $((after - before)) >"$work/$label-$name.ticks"
}

# curves LABEL: every point against $url.
curves() {
  local label=$1
  cookie=$(sign_in "$url")
  BENCH_BODY="$work/history-2.json" BENCH_MODE=fresh BENCH_COOKIE="$cookie" \
    wrk -t1 -c1 -d1s -s "$lua" "$url/agent/chat" >/dev/null
  for m in $histories; do
    echo "  $label: $m messages…" >&2
    point "$label" "history-$m"
  done
  for c in $catalogs; do
    echo "  $label: catalog $c…" >&2
    point "$label" "catalog-$c"
  done
}

echo "host-server…" >&2
serve "$bin" --demo --model scripted --database sqlite::memory: \
  --listen 127.0.0.1:0 --max-concurrent-steps 1024
curves ours
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true

if [ "$with_peer" = 1 ]; then
  echo "peer (Node, Vercel AI SDK)…" >&2
  serve node "$root/bench/peers/node/server.mjs" 0
  curves peer
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
fi

WORK="$work" HISTORIES="$histories" CATALOGS="$catalogs" WITH_PEER="$with_peer" \
  TICKS_PER_SECOND="$(getconf CLK_TCK)" OUT="$out_dir/curves.json" node "$root/bench/report-curves.mjs"
rm -rf "$work"
