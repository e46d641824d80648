#!/usr/bin/env bash
# Redraws the README's performance chart (docs/bench.svg) and table: runs the store, cost-curve
# and slow-vendor benchmarks (each prints its own table and writes its JSON under
# target/bench/), then bench/chart.mjs --publish. About 25 minutes once built. Never run by CI.
#
#   scripts/bench-chart.sh                  # every benchmark, then the chart
#   BENCH_CHART_ONLY=1 scripts/bench-chart.sh  # the chart from the JSON already in target/bench/
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_CHART_ONLY:-0}" != 1 ]; then
  bash scripts/bench-stores.sh
  bash scripts/bench-curves.sh
  bash scripts/bench-vendor.sh
fi
node bench/chart.mjs --publish
