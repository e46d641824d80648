#!/usr/bin/env bash
# The examples as a reader gets them: examples/todo-server (host-server as a library) built into
# the workspace's target/, examples/react-todo installed from the packed @dpas/host, type-checked
# and built, then scripted turns through both in headless Chromium (a confirmation in the
# browser, an approval on the server; every step request finishes, none is cancelled). Then
# examples/todo-backend: a Node backend in front of the workspace's host-server binary (no Rust
# of the app's), serving react-todo's build, and one scripted turn through it with an approval.
#   SKIP_BUILD=1 reuses host-wasm/pkg and host-wasm/dist/dpas-host.tgz (test.sh, after e2e.sh).
#   CARGO_TARGET_DIR is honoured (default: the workspace's target/).
set -euo pipefail
cd "$(dirname "$0")/.."
bins="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug"

say() { printf '\033[1m[examples]\033[0m %s\n' "$*"; }
. scripts/lib/package.sh

ready_host

say "examples/todo-server: cargo build"
cargo build -p todo-server
app=examples/react-todo
say "$app: install the packed package, tsc (strict), vite build"
install_host "$app"
(cd "$app" && npm run --silent build >/dev/null)
say "$app on todo-server: scripted turns in headless Chromium"
(cd "$app" && TODO_SERVER_BIN="$bins/todo-server" npm run --silent test:browser)

say "examples/todo-backend: cargo build -p host-server-cli, npm ci, its doors, then react-todo's build on it in headless Chromium"
cargo build -p host-server-cli
backend=examples/todo-backend
(cd "$backend" && npm ci --no-audit --no-fund)
(cd "$backend" && HOST_SERVER_BIN="$bins/host-server" npm test --silent)
say "ok"
