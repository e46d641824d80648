#!/usr/bin/env bash
# Runs every check and test. CI runs exactly this (after scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "standalone: no tracked file names a path outside the repository (fixtures/ has what the tests read)"
node scripts/check-standalone.mjs

step "format"
cargo fmt --all -- --check

step "server layers: no HTTP or SQL below host-server (cargo tree of each layer)"
# governance: no actix-web, sqlx or reqwest; engine: no actix-web or sqlx; store: no actix-web.
layer_gate() {
  local crate=$1 forbidden=$2
  if cargo tree -p "$crate" -e normal --prefix none | grep -E "^($forbidden) "; then
    echo "$crate depends on the crate(s) above, which its layer must not have" >&2
    exit 1
  fi
}
layer_gate dpas-governance 'actix-web|actix-http|sqlx|sqlx-core|reqwest'
layer_gate dpas-engine 'actix-web|actix-http|sqlx|sqlx-core'
layer_gate dpas-store 'actix-web|actix-http'

step "docs: every Markdown link resolves inside the repository; the standalone check's rules; the package build's import-name shortening; no import circle between a crate's files"
node --test scripts/check-docs.test.mjs scripts/check-standalone.test.mjs scripts/lib/shorten-imports.test.mjs scripts/check-imports.test.mjs

step "clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings
# The slow-vendor benchmark's stand-in is behind a feature (tests/Cargo.toml): linted here.
cargo clippy -p dpas-tests --features vendor-stand-in --examples -- -D warnings

step "protocol builds for wasm32"
cargo build -p dpas-protocol --target wasm32-unknown-unknown

step "tests"
cargo test --workspace

# `cargo test --workspace` unifies features: the server's turn on `serde-json-value`, so there
# `json::Value` is serde_json's. The browser build gets dpas-protocol's own `json::value`
# types; the protocol's and the core's tests run on those here. (Sequential: a second cargo
# beside the one above would wait for its lock on target/.)
step "tests on the browser build's json::Value (dpas-protocol without serde-json-value)"
cargo test -p dpas-protocol -p dpas-host-core --no-default-features

step "fuzz: a bounded run of the stable-Rust fuzz targets (scripts/fuzz.sh for long runs)"
FUZZ_CASES=4000 FUZZ_PROFILE=dev bash scripts/fuzz.sh

# ---- host-wasm: the wasm build and the browser (owned by host-wasm) --------------------------
step "host-core: no JS in the core's dependency tree (wasm-bindgen, js-sys, web-sys are host-wasm's)"
js_deps='^(wasm-bindgen|js-sys|web-sys)( |$)'
# The browser build's dependencies, read once for this check and the next.
wasm_tree=$(cargo tree -p host-wasm --target wasm32-unknown-unknown -e normal --prefix none)
grep -Eq "$js_deps" <<<"$wasm_tree"
if cargo tree -p dpas-host-core --target wasm32-unknown-unknown -e normal --prefix none | grep -E "$js_deps"; then
  echo "dpas-host-core depends on a JS binding crate (above): conversion belongs in host-wasm" >&2
  exit 1
fi

step "host-wasm: no serde_json, indexmap or hashbrown in the browser build (json::value instead)"
if grep -E '^(serde_json|indexmap|hashbrown) ' <<<"$wasm_tree"; then
  echo "the browser build links the crate(s) above: dpas-protocol's serde-json-value feature is on" >&2
  exit 1
fi

step "host-wasm: clippy for wasm32 (warnings are errors)"
cargo clippy -p host-wasm --target wasm32-unknown-unknown --all-targets -- -D warnings

step "host-wasm: the JS boundary in headless Chromium (wasm-bindgen-test)"
bash host-wasm/tests/browser/run-wasm-tests.sh

step "host-wasm: the golden turn in headless Chromium against host-server --demo"
bash host-wasm/tests/browser/run-golden.sh
# ---- end host-wasm ----------------------------------------------------------------------------

step "interop: the MCP TypeScript SDK, the AI SDK (Node and useChat), AG-UI's HttpAgent and assistant-ui's AG-UI adapter against host-server --demo"
bash scripts/interop.sh

step "browser end-to-end: the built demo app on host-server --demo (playwright-core, Chromium)"
bash scripts/e2e.sh

step "www: tsc --noEmit and ESLint with the React hooks rules (www's own devDependencies, installed by build-www.sh)"
(cd www && npx --no-install tsc --noEmit -p tsconfig.json && npx --no-install eslint src)

step "packaging: the packed @dpas/host in a Vite React app (tsc, build, vitest + jsdom, Chromium), a plain Node script, Vite 6 (dev recipe, build), Next.js 16 and a webpack 5 build"
SKIP_BUILD=1 bash scripts/packaging.sh

step "examples: react-todo on todo-server (host-server as a library) and on todo-backend (host-server from files), one scripted turn each in Chromium"
SKIP_BUILD=1 bash scripts/examples.sh
