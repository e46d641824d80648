# Sourced by the benchmarks that need PostgreSQL (scripts/bench-replicas.sh,
# scripts/bench-stores.sh). `pg_start DIR` starts a throwaway cluster in DIR/pg (initdb + pg_ctl,
# as the `postgres` user when run as root; no service is used) and sets `pg_port`; `pg_stop DIR`
# stops it; `pg_createdb DIR NAME…` creates databases; `pg_url NAME` is a database's URL.
pg_bin=${DPAS_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_start() {
  local dir=$1
  [ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is missing: run scripts/setup.sh" >&2; return 1; }
  chmod 711 "$dir" # the postgres user reaches its folder inside
  mkdir -p "$dir/pg"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir/pg"; fi
  as_pg "$pg_bin/initdb" -A trust -U postgres --no-sync -E UTF8 -D "$dir/pg/data" >/dev/null
  pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$pg_bin/pg_ctl" start -w -D "$dir/pg/data" -l "$dir/pg/log" \
    -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c max_connections=300" >/dev/null
}

pg_stop() { as_pg "$pg_bin/pg_ctl" stop -m immediate -D "$1/pg/data" >/dev/null 2>&1 || true; }

pg_createdb() {
  local dir=$1 name
  shift
  for name in "$@"; do
    as_pg "$pg_bin/psql" -h "$dir/pg" -p "$pg_port" -U postgres -qc "CREATE DATABASE $name" >/dev/null
  done
}

pg_url() { echo "postgres://postgres@127.0.0.1:$pg_port/$1"; }
