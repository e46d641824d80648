#!/usr/bin/env bash
# Replicas on one PostgreSQL (`scripts/bench.sh --replicas N --database postgres`): starts a
# throwaway PostgreSQL cluster (initdb + pg_ctl in a temporary folder, as the `postgres` user
# when run as root), then measures, in the same run, one host-server and N host-servers with
# one secret on it, each replica under its own wrk load of fresh conversations, and prints the
# combined steps per second beside the single replica's. Never run by CI: figures are printed,
# not asserted.
#
#   scripts/bench.sh --replicas 2 --database postgres
#   BENCH_SECONDS=10 BENCH_CONNECTIONS=16 scripts/bench.sh --replicas 3 --database postgres
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

replicas=${1:?usage: bench-replicas.sh REPLICAS}
seconds=${BENCH_SECONDS:-5}
conns=${BENCH_CONNECTIONS:-8}
bin=${BENCH_BIN:-$root/target/server/host-server}
body="$root/bench/carla-step0.request.json"
lua="$root/bench/wrk/step.lua"
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# shellcheck source=scripts/lib/bench.sh
. scripts/lib/bench.sh
# shellcheck source=scripts/lib/pg.sh
. scripts/lib/pg.sh
for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/setup.sh" >&2; exit 1; }
done

if [ -z "${BENCH_BIN:-}" ]; then
  echo "building host-server (--profile server)…" >&2
  cargo build -q --profile server -p host-server-cli
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

# start_replica DATABASE → one host-server on it (its pid in pids, its URL in urls).
start_replica() {
  spawn "$work" "$bin" --demo --model scripted --database "$(pg_url "$1")" \
    --session-secret "$secret" --listen 127.0.0.1:0 --max-concurrent-steps 1024
}

# run LABEL URL… → one wrk per URL at once; prints the summed steps/s, p50 and errors.
run() {
  local label=$1 i=0 url
  shift
  local cookie
  cookie=$(sign_in "$1")
  local loads=()
  for url in "$@"; do
    BENCH_BODY="$body" BENCH_MODE=fresh BENCH_COOKIE="$cookie" BENCH_OUT="$work/$label-$i.json" \
      wrk -t2 -c"$conns" -d"${seconds}s" -s "$lua" "$url/agent/chat" >/dev/null &
    loads+=($!)
    i=$((i + 1))
  done
  wait "${loads[@]}"
  cat "$work/$label"-*.json | node -e '
    const rows = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
    const rps = rows.reduce((s, r) => s + r.rps, 0);
    const bad = rows.reduce((s, r) => s + r.non2xx + r.socket_errors, 0);
    const p50 = Math.max(...rows.map((r) => r.p50_ms));
    console.log([process.argv[1], rows.length, rps.toFixed(0), p50.toFixed(2), bad].join("\t"));
  ' "$label"
}

pg_createdb "$work" one many
start_replica one
single=("${urls[0]}")
for _ in $(seq 1 "$replicas"); do start_replica many; done
echo "replicas on one PostgreSQL: ${conns} connection(s) of fresh conversations per replica, ${seconds} s" >&2
printf 'setup\treplicas\tsteps/s (sum)\tp50 ms (worst)\terrors\n'
run "1-replica" "${single[@]}"
run "${replicas}-replicas" "${urls[@]:1}"
