#!/usr/bin/env bash
# Builds the two release artifacts into dist/, with their checksums:
#   dist/dpas-host-<version>.tgz   the npm package @dpas/host (scripts/build-wasm.sh, npm pack)
#   dist/host-server               the server binary (`--profile server`), statically linked
#                                  against musl: it runs on any x86_64 Linux, no glibc needed
#   dist/SHA256SUMS                `sha256sum -c SHA256SUMS` in dist/ checks both
# Everything is built in target/dist/ (DIST_TARGET_DIR), not target/: a dist build neither waits
# for the workspace's own cargo builds nor replaces what they built (host-wasm/pkg included).
# Installs what it needs first (scripts/setup.sh dist). Tested by scripts/dist.test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf '\033[1m[dist]\033[0m %s\n' "$*"; }
fail() { printf '\033[1m[dist]\033[0m %s\n' "$*" >&2; exit 1; }

[ "$(uname -s)" = Linux ] || fail "dist.sh builds a Linux binary on Linux; this is $(uname -s)"
for tool in cargo rustup node npm sha256sum; do
  command -v "$tool" >/dev/null || fail "$tool is missing: install Rust (rustup) and Node, then run again"
done

bash scripts/setup.sh dist

target_dir=${DIST_TARGET_DIR:-$root/target/dist}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
export CARGO_TARGET_DIR=$target_dir
rust_target="$(uname -m)-unknown-linux-musl"
out=$root/dist
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$version" ] || fail "could not read the workspace version from Cargo.toml"

# The package first: its budget check fails fast, before the longer server build.
say "the npm package (scripts/build-wasm.sh in $target_dir)"
WASM_PKG_DIR=$target_dir/pkg bash scripts/build-wasm.sh

say "host-server: cargo build --locked --profile server --target $rust_target"
cargo build --locked --profile server --target "$rust_target" -p host-server-cli
binary=$target_dir/$rust_target/server/host-server
[ -x "$binary" ] || fail "cargo did not produce $binary"
# A dynamic binary would need this machine's libraries wherever it is copied to: refuse it.
if ! ldd "$binary" 2>&1 | grep -Eq 'not a dynamic executable|statically linked'; then
  ldd "$binary" >&2 || true
  fail "$binary is dynamically linked (above); dist/ ships a static binary only"
fi

rm -rf "$out"
mkdir -p "$out"
tarball=$(cd "$target_dir/pkg" && npm pack --silent --pack-destination "$out" | tail -n1)
[ "$tarball" = "dpas-host-$version.tgz" ] || fail "npm pack wrote $tarball, expected dpas-host-$version.tgz"
cp "$binary" "$out/host-server"
(cd "$out" && sha256sum "$tarball" host-server >SHA256SUMS)

say "dist/ is ready:"
(cd "$out" && ls -l "$tarball" host-server SHA256SUMS | awk '{printf "  %-24s %10d bytes\n", $9, $5}')
echo
echo "Next: install the package in your app, and start the server on the demo:"
echo "npm install ./dist/$tarball"
echo "./dist/host-server --demo --listen 127.0.0.1:8080"
