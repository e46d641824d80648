#!/usr/bin/env bash
# Browser end-to-end tests: builds the server and the app, starts the demo server on a free
# port serving www/dist, and runs tests/e2e (node's test runner + playwright-core driving
# Debian's Chromium). Screenshots land in tests/e2e/artifacts/.
#   SKIP_BUILD=1 reuses an existing target/debug/host-server and www/dist.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[e2e]\033[0m %s\n' "$*"; }

if [ "${SKIP_BUILD:-}" != "1" ]; then
  say "building host-server"
  cargo build -p host-server --bin host-server
  bash scripts/build-www.sh
fi
for need in target/debug/host-server www/dist/index.html /usr/bin/chromium; do
  [ -e "$need" ] || { echo "missing $need" >&2; exit 1; }
done

say "npm ci in tests/e2e"
(cd tests/e2e && npm ci --no-audit --no-fund)

# The server prints one line on stdout once it listens ("listening on http://ADDR ..."); read
# it through a FIFO (kept open on fd 3 for the server's lifetime), logs go to a file.
work=$(mktemp -d)
mkfifo "$work/stdout"
target/debug/host-server --demo --static www/dist --database sqlite::memory: --listen 127.0.0.1:0 \
  >"$work/stdout" 2>"$work/stderr" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
exec 3<"$work/stdout"
line=""
read -r -t 60 line <&3 || true
url=$(printf '%s\n' "$line" | sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p')
if [ -z "$url" ]; then
  echo "host-server did not report its address: ${line:-nothing}" >&2
  cat "$work/stderr" >&2
  exit 1
fi
say "demo server at $url"

cd tests/e2e
E2E_BASE_URL="$url" HOST_SERVER_BIN="$PWD/../../target/debug/host-server" WWW_DIST="$PWD/../../www/dist" \
  node --test --test-concurrency=1 --test-timeout=600000 ./*.test.mjs
