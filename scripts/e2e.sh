#!/usr/bin/env bash
# Browser end-to-end tests: builds the server and the app, starts the demo server on a free
# port serving www/dist, and runs tests/e2e (node's test runner + playwright-core driving
# Debian's Chromium). Screenshots land in tests/e2e/artifacts/.
#   SKIP_BUILD=1 reuses an existing target/debug/host-server and www/dist.
#   CARGO_TARGET_DIR is honoured (default: the workspace's target/).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/host-server"

say() { printf '\033[1m[e2e]\033[0m %s\n' "$*"; }

if [ "${SKIP_BUILD:-}" != "1" ]; then
  say "building host-server"
  cargo build -p host-server-cli
  bash scripts/build-www.sh
fi
for need in "$bin" www/dist/index.html /usr/bin/chromium; do
  [ -e "$need" ] || { echo "missing $need" >&2; exit 1; }
done

say "npm ci in tests/e2e"
(cd tests/e2e && npm ci --no-audit --no-fund)

# Starts the server and reads its "listening on" line (scripts/lib/serve.sh); logs go to a file.
. scripts/lib/serve.sh
serve "$bin" --demo --static www/dist --database sqlite::memory: --listen 127.0.0.1:0
say "demo server at $url"

cd tests/e2e
E2E_BASE_URL="$url" HOST_SERVER_BIN="$bin" WWW_DIST="$PWD/../../www/dist" \
  node --test --test-concurrency=1 --test-timeout=600000 ./*.test.mjs
