#!/usr/bin/env bash
# The golden browser test: builds host-server and the wasm package (release build +
# wasm-bindgen --target web, as scripts/build-wasm.sh does, without the size gate), lays out a
# page beside it, serves both with `host-server --demo --static` on a free 127.0.0.1 port, and
# runs golden.test.mjs (node's test runner + playwright-core driving Debian's Chromium).
#
# Why a page driven from node rather than wasm-bindgen-test: the turn needs the server's
# session cookie, and the page must share the server's origin for it (the server has no CORS);
# wasm-bindgen-test-runner serves tests from an origin of its own.
set -euo pipefail
cd "$(dirname "$0")/../../.."

say() { printf '\033[1m[golden]\033[0m %s\n' "$*"; }

cargo build -p host-server-cli
cargo build --release --target wasm32-unknown-unknown -p host-wasm
site=target/host-wasm-golden
rm -rf "$site"
mkdir -p "$site/pkg"
wasm-bindgen --target web --out-dir "$site/pkg" --out-name dpas_host \
  target/wasm32-unknown-unknown/release/host_wasm.wasm
cp host-wasm/tests/browser/golden/index.html host-wasm/tests/browser/golden/golden.js \
  host-wasm/tests/browser/golden/cancel.js host-wasm/tests/browser/golden/session.js "$site/"
# The npm entry around the bindings, for the page that drives the package's Conversation.
cp host-wasm/npm/index.js host-wasm/npm/schema.js host-wasm/npm/tabs.js "$site/pkg/"

if [ ! -d host-wasm/tools/node_modules/playwright-core ]; then
  (cd host-wasm/tools && npm ci --no-audit --no-fund)
fi

. scripts/lib/serve.sh
serve target/debug/host-server --demo --static "$site" --database sqlite::memory: --listen 127.0.0.1:0
say "host-server --demo at $url"

GOLDEN_URL="$url" node --test --test-timeout=120000 host-wasm/tests/browser/golden.test.mjs

# A model that streams a little and then nothing: the package's cancel against a step that
# is really mid-run on the server.
kill "$serve_pid"
serve target/debug/host-server --demo --static "$site" --database sqlite::memory: --listen 127.0.0.1:0 \
  --model scripted:host-wasm/tests/browser/golden/silent.json
say "host-server --demo (a silent model) at $url"
CANCEL_URL="$url" node --test --test-timeout=120000 host-wasm/tests/browser/cancel.test.mjs
