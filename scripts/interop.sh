#!/usr/bin/env bash
# Interop: the ecosystem's own, unmodified clients against host-server --demo (each test file
# starts its own server on a free 127.0.0.1 port): the MCP TypeScript SDK on /mcp (with the
# demo's token, and with an app's own JWT under --auth jwt) and the
# AI SDK's DefaultChatTransport + readUIMessageStream (Node) and useChat (Debian's headless
# Chromium via playwright-core) on /agent/ai-sdk, @ag-ui/client's
# HttpAgent on /agent/ag-ui, and assistant-ui's AG-UI adapter rendering a turn in Chromium. Node's test runner.
#   SKIP_BUILD=1 reuses an existing target/debug/host-server.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SKIP_BUILD:-}" != "1" ]; then
  cargo build -p host-server-cli
fi
if [ ! -d tests/interop/node_modules ]; then
  (cd tests/interop && npm ci --no-audit --no-fund)
fi
cd tests/interop
HOST_SERVER_BIN="$PWD/../../target/debug/host-server" \
  node --test --test-concurrency=1 --test-timeout=120000 ./*.test.mjs
