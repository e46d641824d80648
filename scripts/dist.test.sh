#!/usr/bin/env bash
# Runs scripts/dist.sh and checks what it leaves in dist/: the tarball, the binary and
# SHA256SUMS, nothing else; the checksums; the two lines it prints for the user; a static
# binary; the tarball's package.json (@dpas/host at the workspace's version); and that the
# binary starts on the demo, answers GET /api/health with 200 and exits 0 on SIGTERM; and,
# where systemd-analyze and caddy are installed, deploy/'s unit and Caddyfile.
# DIST_TARGET_DIR is passed on to dist.sh (it builds in target/dist/ without it).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m[dist.test]\033[0m %s\n' "$*"; }
fail() { printf '\033[1m[dist.test]\033[0m FAIL: %s\n' "$*" >&2; exit 1; }

source scripts/lib/serve.sh
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
tarball=dpas-host-$version.tgz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "bash scripts/dist.sh"
bash scripts/dist.sh | tee "$work/dist.out"

say "dist/ holds $tarball, host-server and SHA256SUMS, and nothing else"
actual=$(cd dist && ls -A | sort | tr '\n' ' ')
expected=$(printf '%s\n' "$tarball" host-server SHA256SUMS | sort | tr '\n' ' ')
[ "$actual" = "$expected" ] || fail "dist/ holds: $actual; expected: $expected"
[ -x dist/host-server ] || fail "dist/host-server is not executable"

say "sha256sum -c SHA256SUMS"
listed=$(awk '{print $2}' dist/SHA256SUMS | sort | tr '\n' ' ')
[ "$listed" = "$(printf '%s\n' "$tarball" host-server | sort | tr '\n' ' ')" ] \
  || fail "SHA256SUMS lists: $listed"
(cd dist && sha256sum --check --strict SHA256SUMS)

say "the two lines printed for the user"
grep -qx "npm install ./dist/$tarball" "$work/dist.out" || fail "no line 'npm install ./dist/$tarball'"
grep -qx './dist/host-server --demo --listen 127.0.0.1:8080' "$work/dist.out" \
  || fail "no line './dist/host-server --demo --listen 127.0.0.1:8080'"

say "host-server is statically linked"
ldd dist/host-server 2>&1 | grep -Eq 'not a dynamic executable|statically linked' \
  || fail "dist/host-server is dynamically linked: $(ldd dist/host-server 2>&1)"

say "the tarball's package.json: @dpas/host $version, with the wasm"
tar -xzf "dist/$tarball" -C "$work"
node -e '
  const pkg = require(process.argv[1]);
  if (pkg.name !== "@dpas/host" || pkg.version !== process.argv[2]) {
    console.error(`package.json says ${pkg.name}@${pkg.version}, expected @dpas/host@${process.argv[2]}`);
    process.exit(1);
  }' "$work/package/package.json" "$version"
[ -s "$work/package/dpas_host_bg.wasm" ] || fail "the tarball has no dpas_host_bg.wasm"

# deploy/'s files, where the tools to read them are installed (neither is in scripts/setup.sh).
if command -v systemd-analyze >/dev/null; then
  say "systemd-analyze verify deploy/host-server@.service (ExecStart on dist/host-server)"
  mkdir "$work/units"
  sed "s|/usr/local/bin/host-server|$PWD/dist/host-server|" deploy/host-server@.service \
    >"$work/units/host-server@.service"
  systemd-analyze verify "$work/units/host-server@1.service"
else
  say "skipped: systemd-analyze verify deploy/host-server@.service (no systemd-analyze)"
fi
if command -v caddy >/dev/null; then
  say "caddy validate deploy/Caddyfile"
  caddy validate --adapter caddyfile --config deploy/Caddyfile 2>&1 | tail -n1
else
  say "skipped: caddy validate deploy/Caddyfile (no caddy)"
fi

say "dist/host-server --demo --database sqlite::memory: --listen 127.0.0.1:0"
serve dist/host-server --demo --database sqlite::memory: --listen 127.0.0.1:0
trap 'kill "$serve_pid" 2>/dev/null || true; rm -rf "$serve_dir" "$work"' EXIT
say "$url"

node -e '
  fetch(process.argv[1] + "/api/health").then(async (res) => {
    const body = await res.text();
    if (res.status !== 200) { console.error(`GET /api/health: ${res.status} ${body}`); process.exit(1); }
    console.log(`  GET /api/health: ${res.status} ${body}`);
  }, (err) => { console.error(`GET /api/health: ${err.cause ?? err}`); process.exit(1); });' "$url"

say "SIGTERM: the server drains and exits 0"
kill -TERM "$serve_pid"
# fd 3 (the server's stdout, see serve.sh) stays open: the drain prints a line on it.
for _ in $(seq 1 200); do
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$serve_pid" 2>/dev/null && fail "the server was still running 20 s after SIGTERM"
rc=0
wait "$serve_pid" || rc=$?
[ "$rc" -eq 0 ] || { cat "$serve_dir/stderr" >&2; fail "the server exited with $rc after SIGTERM"; }

say "ok"
