#!/usr/bin/env bash
# The browser half's per-step cost in headless Chromium (host-wasm/tests/browser/bench/):
# builds the @dpas/host package as shipped (scripts/build-wasm.sh), then prints, for 16 and
# 128 registered capabilities, step-finish → next request (a read; an action with its
# settle-wait), and the decoding of a recorded step, each beside plain JS doing JSON work on
# the same bytes in the same page. Figures only, never asserted; not run by CI.
# BENCH_RUNS=<n> sets the runs per figure (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh
if [ ! -d host-wasm/tools/node_modules/playwright-core ]; then
  (cd host-wasm/tools && npm ci --no-audit --no-fund)
fi
node host-wasm/tests/browser/bench/bench.mjs
