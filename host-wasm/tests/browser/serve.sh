# Sourced by the browser test scripts: `serve LOG COMMAND...` starts COMMAND in the background
# (killed on exit) and sets `url` to the http://127.0.0.1:PORT it reports as "listening on …".
serve() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  local pid=$!
  # shellcheck disable=SC2064 # the pid and log are fixed now
  trap "kill $pid 2>/dev/null || true; rm -f '$log'" EXIT
  url=""
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$url" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; return 1; fi
    sleep 0.1
  done
  echo "$1 did not report its address" >&2
  cat "$log" >&2
  return 1
}
