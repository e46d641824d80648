#!/usr/bin/env bash
# Runs every check and test. CI runs exactly this (after scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "format"
cargo fmt --all -- --check

step "clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "protocol builds for wasm32"
cargo build -p dpas-protocol --target wasm32-unknown-unknown

step "tests"
cargo test --workspace
