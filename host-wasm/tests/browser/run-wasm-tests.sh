#!/usr/bin/env bash
# The JS-boundary tests (src/web/tests.rs) in headless Chromium through wasm-bindgen-test:
# starts the scripted stub (stub-server.mjs) on a free 127.0.0.1 port, hands its URL to the
# build as HOST_WASM_STUB_URL, and runs them with wasm-bindgen-test-runner + chromedriver
# (Chromium's flags are in host-wasm/webdriver.json).
set -euo pipefail
cd "$(dirname "$0")/../.."

. ../scripts/lib/serve.sh
serve node tests/browser/stub-server.mjs

HOST_WASM_STUB_URL="$url" \
  CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" \
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test -p host-wasm --target wasm32-unknown-unknown --lib
