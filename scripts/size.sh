#!/usr/bin/env bash
# A side-by-side size report, measured in one run: @dpas/host (built by scripts/build-wasm.sh,
# which also enforces its budget) beside the leanest JS peer, the AI SDK's `useChat` client
# (npm `ai` + `@ai-sdk/react`, pinned in scripts/size/package-lock.json): what an app imports
# for it (scripts/size/entry.mjs) bundled by esbuild, minified, React left out as it is for
# us, gzip -9. Prints both, and our figure again with the JS glue minified by the same esbuild
# (what an app's bundler ships), and the ratios. Not part of CI: it needs the network once for
# `npm ci` in scripts/size.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[size]\033[0m %s\n' "$*"; }

bash scripts/build-wasm.sh
pkg=host-wasm/pkg

peer=scripts/size
if [ ! -x "$peer/node_modules/.bin/esbuild" ]; then
  say "npm ci in $peer (ai, @ai-sdk/react, esbuild)"
  (cd "$peer" && npm ci --no-audit --no-fund)
fi
esbuild="$peer/node_modules/.bin/esbuild"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gz() { gzip -9 -c "$1" | wc -c; }

# Ours, as the budget counts it: every file of the package that a page loads, gzipped apart.
ours=0
for file in "$pkg/dpas_host_bg.wasm" "$pkg/dpas_host.js" $(find "$pkg/snippets" -name '*.js' 2>/dev/null); do
  ours=$((ours + $(gz "$file")))
done
# Ours with the glue (and its snippets) bundled and minified like the peer: wasm + one JS file.
"$esbuild" "$pkg/dpas_host.js" --bundle --minify --format=esm --platform=browser \
  --log-level=warning --outfile="$tmp/ours.js"
ours_min=$(($(gz "$pkg/dpas_host_bg.wasm") + $(gz "$tmp/ours.js")))

"$esbuild" "$peer/entry.mjs" --bundle --minify --format=esm --platform=browser \
  --external:react --external:react-dom --external:react/jsx-runtime \
  --log-level=warning --outfile="$tmp/peer.js"
peer_gz=$(gz "$tmp/peer.js")
peer_version=$(node -p "['ai', '@ai-sdk/react'].map(n => n + ' ' + require('./$peer/node_modules/' + n + '/package.json').version).join(', ')")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
kb() { awk -v a="$1" 'BEGIN { printf "%.1f KB", a / 1024 }'; }
echo
printf '  %-52s %10s %9s\n' "what (gzip -9)" bytes KB
printf '  %-52s %10d %9s\n' "@dpas/host: wasm + JS glue (the budgeted figure)" "$ours" "$(kb "$ours")"
printf '  %-52s %10d %9s\n' "@dpas/host: wasm + glue minified by esbuild" "$ours_min" "$(kb "$ours_min")"
printf '  %-52s %10d %9s\n' "useChat client (AI SDK), esbuild min" "$peer_gz" "$(kb "$peer_gz")"
echo "  peer versions: $peer_version"
echo "  ratio @dpas/host / useChat: $(ratio "$ours" "$peer_gz") (budgeted), $(ratio "$ours_min" "$peer_gz") (glue minified)"
