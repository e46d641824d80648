# Sourced by the benchmarks (scripts/bench*.sh).

# sign_in URL → the session cookie (name=value) of the demo controller.
sign_in() {
  curl -fsS -D - -o /dev/null -H 'content-type: application/json' \
    -d '{"role":"controller"}' "$1/api/session" |
    tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -n1
}

# rss_kb PID FIELD → VmHWM (peak) or VmRSS (now) of the process, in kB.
rss_kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# spawn DIR COMMAND… → starts a server in the background, appends its pid to `pids` and the
# http://127.0.0.1:PORT of the "listening on …" line it prints first to `urls` (the caller
# kills `pids` on exit). The line is read through a FIFO in DIR, kept open while it runs.
spawn() {
  local dir=$1 n=${#pids[@]} fd line
  shift
  mkfifo "$dir/out$n"
  "$@" >"$dir/out$n" 2>"$dir/err$n" &
  pids+=($!)
  exec {fd}<"$dir/out$n"
  read -r -t 60 line <&"$fd" || true
  urls+=("$(printf '%s\n' "$line" | sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p')")
  if [ -z "${urls[$n]}" ]; then
    echo "$1 did not start: ${line:-nothing}" >&2
    cat "$dir/err$n" >&2
    exit 1
  fi
}
