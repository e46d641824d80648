# Sourced by the scripts that start a server for browser tests (scripts/e2e.sh,
# host-wasm/tests/browser/run-*.sh): `serve COMMAND...` starts COMMAND in the background
# (killed on exit) and sets `url` to the http://127.0.0.1:PORT of the "listening on …" line it
# prints first. That line is read through a FIFO, kept open on fd 3 while the server runs
# (no polling); stderr goes to a file shown if the server fails to start.
serve() {
  serve_dir=$(mktemp -d)
  mkfifo "$serve_dir/stdout"
  "$@" >"$serve_dir/stdout" 2>"$serve_dir/stderr" &
  serve_pid=$!
  trap 'kill "$serve_pid" 2>/dev/null || true; rm -rf "$serve_dir"' EXIT
  exec 3<"$serve_dir/stdout"
  local line=""
  read -r -t 60 line <&3 || true
  url=$(printf '%s\n' "$line" | sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p')
  if [ -z "$url" ]; then
    echo "$1 did not report its address: ${line:-nothing}" >&2
    cat "$serve_dir/stderr" >&2
    return 1
  fi
}
