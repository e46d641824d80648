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

pg_bin=${DPAS_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is missing: run scripts/setup.sh" >&2; exit 1; }

if [ -z "${BENCH_BIN:-}" ]; then
  echo "building host-server (--profile server)…" >&2
  cargo build -q --profile server -p host-server-cli
fi

work=$(mktemp -d)
chmod 711 "$work" # the postgres user reaches its folder inside
pids=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  as_pg "$pg_bin/pg_ctl" stop -m immediate -D "$work/pg/data" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg"
as_pg "$pg_bin/initdb" -A trust -U postgres --no-sync -E UTF8 -D "$work/pg/data" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$pg_bin/pg_ctl" start -w -D "$work/pg/data" -l "$work/pg/log" \
  -o "-p $port -k $work/pg -c listen_addresses=127.0.0.1 -c max_connections=200" >/dev/null

# start_replica DATABASE → appends the server's pid to pids and its URL to urls.
urls=()
start_replica() {
  local n=${#pids[@]} fd line
  mkfifo "$work/out$n"
  "$bin" --demo --model scripted --database "postgres://postgres@127.0.0.1:$port/$1" \
    --session-secret "$secret" --listen 127.0.0.1:0 --max-concurrent-steps 1024 \
    >"$work/out$n" 2>"$work/err$n" &
  pids+=($!)
  exec {fd}<"$work/out$n"
  read -r -t 60 line <&"$fd" || true
  urls+=("$(printf '%s\n' "$line" | sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p')")
  if [ -z "${urls[$n]}" ]; then
    echo "replica $n did not start: ${line:-nothing}" >&2
    cat "$work/err$n" >&2
    exit 1
  fi
}

cookie_of() {
  curl -fsS -D - -o /dev/null -H 'content-type: application/json' \
    -d '{"role":"controller"}' "$1/api/session" |
    tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -n1
}

# run LABEL URL… → one wrk per URL at once; prints the summed steps/s, p50 and errors.
run() {
  local label=$1 i=0 url
  shift
  local cookie
  cookie=$(cookie_of "$1")
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

as_pg "$pg_bin/psql" -h "$work/pg" -p "$port" -U postgres -qc 'CREATE DATABASE one' -c 'CREATE DATABASE many' >/dev/null
start_replica one
single=("${urls[0]}")
for _ in $(seq 1 "$replicas"); do start_replica many; done
echo "replicas on one PostgreSQL: ${conns} connection(s) of fresh conversations per replica, ${seconds} s" >&2
printf 'setup\treplicas\tsteps/s (sum)\tp50 ms (worst)\terrors\n'
run "1-replica" "${single[@]}"
run "${replicas}-replicas" "${urls[@]:1}"
