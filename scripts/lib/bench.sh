# Sourced by the benchmarks (scripts/bench.sh, scripts/bench-vendor.sh).

# sign_in URL → the session cookie (name=value) of the demo controller.
sign_in() {
  curl -fsS -D - -o /dev/null -H 'content-type: application/json' \
    -d '{"role":"controller"}' "$1/api/session" |
    tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -n1
}

# rss_kb PID FIELD → VmHWM (peak) or VmRSS (now) of the process, in kB.
rss_kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
