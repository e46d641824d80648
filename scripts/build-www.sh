#!/usr/bin/env bash
# Builds the demo app the way a user of our npm package would: the package first
# (host-wasm/pkg, by scripts/build-wasm.sh), packed as npm publishes it, then www's locked
# dependencies, which install that tarball, then the production bundle in www/dist.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[build-www]\033[0m %s\n' "$*"; }

if [ ! -f scripts/build-wasm.sh ]; then
  echo "scripts/build-wasm.sh does not exist yet, so the @dpas/host package (host-wasm/pkg) cannot be built." >&2
  exit 1
fi
say "building the @dpas/host package"
bash scripts/build-wasm.sh
if [ ! -f host-wasm/pkg/package.json ]; then
  echo "scripts/build-wasm.sh did not produce host-wasm/pkg/package.json" >&2
  exit 1
fi

. scripts/lib/package.sh
say "packing it (host-wasm/dist/dpas-host.tgz)"
pack_host
say "npm ci in www (installs the tarball)"
install_host www

say "type-checking and bundling www (vite build)"
(cd www && npm run build)
say "www/dist is ready"
