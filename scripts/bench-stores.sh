#!/usr/bin/env bash
# The step on the stores deployments use: host-server (release, `--profile server`, scripted
# model) posting the reference browser's Carla step 0 (bench/carla-step0.request.json), a fresh
# conversation per request, under wrk at 1, 8 and 64 connections, on
#   - SQLite in memory (`sqlite::memory:`, the figure the others are read against),
#   - a SQLite file (WAL, `synchronous = NORMAL`),
#   - PostgreSQL, one replica, and two replicas with one secret on one database (a throwaway
#     cluster started here, on the same machine: it shares the cores with the servers and wrk;
#     two replicas split the connections, the single connection goes to the first),
# and beside them the peer (bench/peers/node: the same step on the Vercel AI SDK, better-sqlite3)
# in memory and on a SQLite file (WAL), measured the same way in the same run. Prints one
# table (with the CPU time a step took at 8 connections in the server and, on PostgreSQL, in the
# database's processes) and writes the figures to target/bench/stores.json. Never run by CI:
# figures are printed, not asserted.
#
#   scripts/bench-stores.sh                 # 5 s per load; about 3 minutes once built
#   BENCH_SECONDS=10 BENCH_PEER=0 scripts/bench-stores.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh
# shellcheck source=scripts/lib/pg.sh
. scripts/lib/pg.sh

seconds=${BENCH_SECONDS:-5}
with_peer=${BENCH_PEER:-1}
levels="1 8 64"
bin=${BENCH_BIN:-$root/target/server/host-server}
body="$root/bench/carla-step0.request.json"
lua="$root/bench/wrk/step.lua"
out_dir="$root/target/bench"
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
mkdir -p "$out_dir"
if [ -z "${BENCH_BIN:-}" ]; then
  echo "building host-server (--profile server)…" >&2
  cargo build -q --profile server -p host-server-cli
fi
if [ "$with_peer" = 1 ] && [ ! -d bench/peers/node/node_modules ]; then
  (cd bench/peers/node && npm ci --no-audit --no-fund >&2)
fi

work=$(mktemp -d)
pids=()
urls=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
pg_start "$work"
pg_createdb "$work" one two

# ours DATABASE → one host-server on DATABASE.
ours() {
  spawn "$work" "$bin" --demo --model scripted --database "$1" --session-secret "$secret" \
    --listen 127.0.0.1:0 --max-concurrent-steps 1024
}

# ticks PID… → the CPU time (user + system, in clock ticks) the processes have used so far.
ticks() {
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}

# pg_ticks → the CPU ticks all of the cluster's processes have used so far.
pg_ticks() {
  # shellcheck disable=SC2046
  ticks $(pgrep -u postgres 2>/dev/null || true)
}

# measure SETUP FIRST: runs every level against urls[FIRST…] (the servers started for SETUP),
# splitting the connections between them, then stops them and records their peak RSS. Each
# level also records the CPU ticks the servers and PostgreSQL's processes used during it
# ("$setup-$conns-cpu.json").
measure() {
  local setup=$1 first=$2 targets i conns share cookie h0 d0
  targets=("${urls[@]:$first}")
  cookie=$(sign_in "${targets[0]}")
  BENCH_BODY="$body" BENCH_MODE=fresh BENCH_COOKIE="$cookie" BENCH_OUT=/dev/null \
    wrk -t2 -c8 -d1s -s "$lua" "${targets[0]}/agent/chat" >/dev/null
  for conns in $levels; do
    echo "  $setup: $conns connection(s)…" >&2
    local loads=() n=${#targets[@]}
    [ "$conns" -lt "$n" ] && n=$conns
    h0=$(ticks "${pids[@]:$first}")
    d0=$(pg_ticks)
    for ((i = 0; i < n; i++)); do
      share=$((conns / n + (i < conns % n ? 1 : 0)))
      BENCH_BODY="$body" BENCH_MODE=fresh BENCH_COOKIE="$cookie" BENCH_THREADS=$((share < 2 ? share : 2)) \
        BENCH_OUT="$work/$setup-$conns-$i.json" \
        wrk -t$((share < 2 ? share : 2)) -c"$share" -d"${seconds}s" -s "$lua" "${targets[$i]}/agent/chat" >/dev/null &
      loads+=($!)
    done
    wait "${loads[@]}"
    echo "{\"server\": $(($(ticks "${pids[@]:$first}") - h0)), \"database\": $(($(pg_ticks) - d0))}" \
      >"$work/$setup-$conns-cpu.json"
  done
  local kb=0 pid
  for pid in "${pids[@]:$first}"; do
    kb=$((kb + $(rss_kb "$pid" VmHWM)))
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
  echo "$kb" >"$work/$setup-peak-kb"
}

echo "host-server, SQLite in memory…" >&2
ours sqlite::memory:
measure memory $((${#urls[@]} - 1))
echo "host-server, SQLite file…" >&2
ours "sqlite://$work/ours.db"
measure file $((${#urls[@]} - 1))
echo "host-server, PostgreSQL, one replica…" >&2
ours "$(pg_url one)"
measure pg1 $((${#urls[@]} - 1))
echo "host-server, PostgreSQL, two replicas…" >&2
ours "$(pg_url two)"
ours "$(pg_url two)"
measure pg2 $((${#urls[@]} - 2))
if [ "$with_peer" = 1 ]; then
  echo "peer, in memory…" >&2
  spawn "$work" node "$root/bench/peers/node/server.mjs" 0
  measure peer-memory $((${#urls[@]} - 1))
  echo "peer, SQLite file…" >&2
  spawn "$work" env PEER_DATABASE="$work/peer.db" node "$root/bench/peers/node/server.mjs" 0
  measure peer-file $((${#urls[@]} - 1))
fi

WORK="$work" LEVELS="$levels" SECONDS_PER_LOAD="$seconds" WITH_PEER="$with_peer" CLK_TCK="$(getconf CLK_TCK)" \
  OUT="$out_dir/stores.json" node "$root/bench/report-stores.mjs"
