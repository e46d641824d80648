#!/usr/bin/env bash
# Sets everything up and runs the demo: builds the server (and the web app, when its build
# script is present), then starts `host-server --demo` and prints the URL.
# Extra arguments go to host-server, e.g. `--model openai:gpt-4.1-mini` or `--listen ADDR`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --profile server -p host-server-cli
args=(--demo)
if [ -x scripts/build-www.sh ] || [ -f scripts/build-www.sh ]; then
  bash scripts/build-www.sh
  args+=(--static www/dist)
else
  echo "[demo] the web app (issue #7) is not in this checkout yet: serving the API only" >&2
fi
echo "[demo] without OPENAI_API_KEY/ANTHROPIC_API_KEY and --model, the scripted model answers" >&2
exec target/server/host-server "${args[@]}" "$@"
