#!/usr/bin/env bash
# Installs what builds and tests need, only where it is missing. Idempotent; used by people
# and by CI alike. Needs root (or sudo) for apt on a fresh Debian machine.
#   bash scripts/setup.sh        what builds and tests need: 1 to 6 below
#   bash scripts/setup.sh dist   what scripts/dist.sh needs (it runs this): 1 without the lint
#                                tools, 2, host-wasm/tools of 4, and 7
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
case "${1:-all}" in
  all | dist) only=${1:-all} ;;
  *) echo "usage: scripts/setup.sh [dist]" >&2; exit 2 ;;
esac
all() { [ "$only" = all ]; }

# 1. Rust: the wasm target and the lint tools.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
for component in clippy rustfmt; do
  if all && ! rustup component list --installed | grep -q "^${component}"; then
    rustup component add "$component"
  fi
done

# 2. wasm-bindgen-cli at exactly the version the workspace pins (the CLI and the crate must
#    agree byte for byte on the ABI). Installed only when missing or different.
pinned=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml)
if [ -z "$pinned" ]; then
  echo "could not read the pinned wasm-bindgen version from Cargo.toml" >&2
  exit 1
fi
installed=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$installed" != "$pinned" ]; then
  say "installing wasm-bindgen-cli $pinned (found: ${installed:-none}); this takes a few minutes"
  # Not --locked: the registry lacks one of its locked dependencies.
  cargo install wasm-bindgen-cli --version "$pinned"
fi

# 3. Chromium and its driver, from Debian, for browser tests.
if all && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  say "installing chromium and chromium-driver"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
fi

# 4. Node modules, exactly as locked. www, the apps of tests/packaging and examples/react-todo
#    install the packed @dpas/host, so their npm ci runs after the package is built
#    (build-www.sh, packaging.sh, examples.sh).
dirs="host-wasm/tools"
if all; then dirs="$dirs tests/e2e tests/interop"; fi
for dir in $dirs; do
  if [ -f "$dir/package-lock.json" ]; then
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
      say "npm ci in $dir"
      (cd "$dir" && npm ci --no-audit --no-fund)
    fi
  fi
done

# 5. wrk, the load generator of scripts/bench.sh (never run by CI's tests), and ss (iproute2),
#    which the server suite reads a listening socket's backlog with and bench-vendor.sh counts
#    held connections with.
if all && { ! command -v wrk >/dev/null || ! command -v ss >/dev/null; }; then
  say "installing wrk and iproute2"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk iproute2
fi

# 6. PostgreSQL's server binaries, from Debian: the PostgreSQL tests start throwaway clusters
#    of their own (initdb + pg_ctl in a temporary folder); no service is started or used.
if all && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  say "installing postgresql"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
fi

# 7. (dist only) The static (musl) target of dist.sh's host-server, and Debian's musl-tools: the
#    C parts of the server's dependencies (the bundled SQLite, ring) are compiled with
#    x86_64-linux-musl-gcc, which cc-rs looks for and musl-tools provides.
musl_target="$(uname -m)-unknown-linux-musl"
if ! all && ! rustup target list --installed | grep -qx "$musl_target"; then
  say "adding the $musl_target target"
  rustup target add "$musl_target"
fi
if ! all && ! command -v "$(uname -m)-linux-musl-gcc" >/dev/null; then
  say "installing musl-tools"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools
fi

say "ready"
