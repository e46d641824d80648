#!/usr/bin/env bash
# Long fuzz campaigns on stable Rust (tests/tests/fuzz.rs: proptest targets over the request
# decoder, the NDJSON frame decoder, the vendor SSE decoders and the /rpc input path).
#   FUZZ_CASES   cases per target (default 100000)
#   FUZZ_PROFILE cargo profile (default `server`: optimised, panics unwind so findings shrink)
# Prints each target's executions and findings; exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

cases="${FUZZ_CASES:-100000}"
profile="${FUZZ_PROFILE:-server}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
FUZZ_CASES="$cases" cargo test --profile "$profile" -p dpas-tests --test fuzz -- --nocapture --test-threads 1 \
  >"$log" 2>&1 || status=$?
grep -E '^(test )?.*fuzz [^:]+: [0-9]+ executions' "$log" | sed -E 's/^test [a-z_]+ \.\.\. //'
grep -E 'finding:|panicked' "$log" || true
total=$(grep -oE '[0-9]+ executions' "$log" | awk '{s+=$1} END {print s+0}')
findings=$(grep -oE '[0-9]+ findings' "$log" | awk '{s+=$1} END {print s+0}')
echo "fuzz: ${total} executions in all, ${findings} findings"
if [ "$status" -ne 0 ]; then
  tail -40 "$log"
  exit "$status"
fi
