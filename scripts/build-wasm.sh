#!/usr/bin/env bash
# Builds the @dpas/host npm package into host-wasm/pkg/ (or WASM_PKG_DIR; the cargo build goes
# to CARGO_TARGET_DIR when set, as cargo's own does: scripts/dist.sh builds in target/dist/):
#   cargo release build for wasm32 (the root [profile.release]: opt-level z, LTO, one codegen
#   unit, panic=abort) → wasm-bindgen --target web at the pinned version → wasm-opt -Oz with
#   the flags explained below (npm `binaryen`, host-wasm/tools) → the hand-written package.json
#   and README from host-wasm/npm/.
# Prints raw and gzip sizes and fails when .wasm + JS glue exceed the gzip budget.
#
# Why `--target web`: it is a plain ES module whose default export `init()` loads the .wasm
# through `new URL("…_bg.wasm", import.meta.url)`, which Vite (and every other bundler, and a
# bare <script type="module">) understands without a plugin; `--target bundler` needs the
# bundler to support the WebAssembly ESM integration (vite-plugin-wasm in Vite's case).
set -euo pipefail
cd "$(dirname "$0")/.."

# The built size plus 200 B of headroom. Lowered with each landed cut (host-wasm/README.md,
# "Size"), so none regresses.
BUDGET_GZIP_BYTES=${BUDGET_GZIP_BYTES:-98269}
say() { printf '\033[1m[build-wasm]\033[0m %s\n' "$*"; }

pinned=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml)
installed=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$installed" != "$pinned" ]; then
  echo "wasm-bindgen CLI $pinned is needed (found: ${installed:-none}); run scripts/setup.sh" >&2
  exit 1
fi
wasm_opt=host-wasm/tools/node_modules/.bin/wasm-opt
terser=host-wasm/tools/node_modules/.bin/terser
if [ ! -x "$wasm_opt" ] || [ ! -x "$terser" ]; then
  say "npm ci in host-wasm/tools (binaryen's wasm-opt, terser)"
  (cd host-wasm/tools && npm ci --no-audit --no-fund)
fi

say "cargo build --release --target wasm32-unknown-unknown -p host-wasm"
cargo build --release --target wasm32-unknown-unknown -p host-wasm

out=${WASM_PKG_DIR:-host-wasm/pkg}
rm -rf "$out"
mkdir -p "$out"
say "wasm-bindgen $pinned --target web"
wasm-bindgen --target web --out-dir "$out" --out-name dpas_host \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/host_wasm.wasm"

# -Oz --converge --one-caller-inline-max-function-size=20: the budget is gzip, and binaryen's
# default of inlining every function that has one caller, whatever its size, measured 7.2 KB
# gzip larger on this module (6 KB raw smaller): the merged bodies compress worse than the
# functions apart. Capped at 20 bytes, -Oz and -Os are equal after gzip; -Oz is smaller raw.
# --reorder-functions-by-name (before the names are stripped) puts the instances of one generic
# function side by side, within gzip's window of each other: 0.8 KB gzip.
# --low-memory-unused lets binaryen fold constant offsets into loads and stores: it assumes
# nothing lives in the lowest 1 KB of memory. rustc links wasm32 with the stack first (data
# from 1 MiB up, the stack growing down towards 0), so that kilobyte is reached only by a
# stack already within 1 KB of overflowing, and the flag turns a wrap past 0 into a trap.
say "wasm-opt -Oz --converge --one-caller-inline-max-function-size=20 --low-memory-unused"
"$wasm_opt" -Oz --converge --one-caller-inline-max-function-size=20 --low-memory-unused \
  --reorder-functions-by-name --strip-debug --strip-producers \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$out/dpas_host_bg.wasm" -o "$out/dpas_host_bg.wasm"

# The imports' names (wasm-bindgen's `__wbg_<function>_<16-digit hash>` under
# "./dpas_host_bg.js") as one or two letters under "a", in the .wasm and the glue alike; why not
# binaryen's own pass, and what the script refuses, is in scripts/lib/shorten-imports.mjs.
say "shorten the wasm's import names (scripts/lib/shorten-imports.mjs)"
node scripts/lib/shorten-imports.mjs "$out/dpas_host_bg.wasm" "$out/dpas_host.js"

# The JS glue and its snippets as the package ships them: minified by terser (pinned in
# host-wasm/tools) with its default, safe compressions and local names mangled, but every class
# and function keeping its name (`--keep-classnames --keep-fnames`): `Surface.name`, devtools'
# object labels, wasm-bindgen's "expected instance of …" errors and stack traces through the glue
# read as before. An app's bundler minifies them again (the peers in scripts/size.sh are measured
# that way), but a page served the package as it is, or a dev server that does not minify, gets
# these files: glue 7.1 → 3.7 KB gzip with the shortened import names. esbuild's whitespace and
# syntax minification kept every name and measured 0.5 KB larger; with its identifiers renamed
# the classes lose their names, and `--keep-names` to restore them costs 0.7 KB.
say "terser --module --compress --mangle --keep-classnames --keep-fnames (dpas_host.js and snippets)"
for file in "$out/dpas_host.js" $(find "$out/snippets" -name '*.js' 2>/dev/null); do
  "$terser" "$file" --module --compress --mangle --keep-classnames --keep-fnames \
    --output "$file.min" && mv "$file.min" "$file"
done

# The hand-written part of the package: package.json (conditional exports), README, the entries
# around the generated bindings (index: init-once and the before-init error; node: init from
# the file; react: @dpas/host/react) and their declarations; and the two licence texts its
# "MIT OR Apache-2.0" names (npm only adds files called LICENSE on its own).
cp host-wasm/npm/package.json host-wasm/npm/README.md host-wasm/npm/*.js host-wasm/npm/*.d.ts \
  LICENSE-MIT LICENSE-APACHE "$out/"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
sed -i "s/\"version\": \"[^\"]*\"/\"version\": \"$version\"/" "$out/package.json"

# The generated declarations must never fall back to `any`. The raw export table of `init()`
# (InitOutput: ABI-level signatures nobody calls) is typed `any` by wasm-bindgen: `unknown` there.
# The same table is declared again in dpas_host_bg.wasm.d.ts.
sed -i '/^export interface InitOutput/,/^}/s/\bany\b/unknown/g' "$out/dpas_host.d.ts"
sed -i 's/\bany\b/unknown/g' "$out/dpas_host_bg.wasm.d.ts"
# `[Symbol.dispose]()` needs lib esnext.disposable: a project on `lib: ["ES2022", "DOM"]` with
# `skipLibCheck: false` would fail inside our types. The method stays at runtime; `free()` is typed.
sed -i '/\[Symbol\.dispose\]/d' "$out/dpas_host.d.ts"
if grep -nE '(:|=>|<|\||,|\()\s*any\b' "$out/dpas_host.d.ts" "$out/dpas_host_bg.wasm.d.ts"; then
  echo "the generated declarations contain 'any' (above)" >&2
  exit 1
fi

raw_total=0
gz_total=0
# The wasm, the glue, and the glue's snippets (JS the crate ships through wasm-bindgen's
# `module = …` imports, e.g. src/web/handler.js), each gzipped on its own as a server would.
files=$(cd "$out" && { echo dpas_host_bg.wasm; echo dpas_host.js; find snippets -name '*.js' 2>/dev/null | sort; })
for file in $files; do
  raw=$(stat -c %s "$out/$file")
  gz=$(gzip -9 -c "$out/$file" | wc -c)
  raw_total=$((raw_total + raw))
  gz_total=$((gz_total + gz))
  printf '  %-20s %8d bytes raw %8d bytes gzip\n' "${file##*/}" "$raw" "$gz"
done
printf '  %-20s %8d bytes raw %8d bytes gzip (budget %d)\n' total "$raw_total" "$gz_total" "$BUDGET_GZIP_BYTES"
if [ "$gz_total" -gt "$BUDGET_GZIP_BYTES" ]; then
  echo "over budget: .wasm + JS glue are $gz_total bytes gzip, more than $BUDGET_GZIP_BYTES" >&2
  exit 1
fi
say "$out is ready"
