# Sourced by the scripts that install @dpas/host the way its users get it (scripts/build-www.sh,
# scripts/packaging.sh): the packed tarball of host-wasm/pkg, not a link to the folder.
#   pack_host                 host-wasm/pkg → host-wasm/dist/dpas-host.tgz (npm pack)
#   install_host DIR          npm ci in DIR, then checks that DIR got this build's wasm
#   ready_host                build-wasm.sh + pack_host, unless SKIP_BUILD=1 (then the tarball
#                             already built is reused); fails when there is no tarball
# The lockfiles that name the tarball carry no integrity hash for it on purpose: with one, npm
# ci would install the copy cached under that hash, an older build, without a word.
pack_host() {
  [ -f host-wasm/pkg/package.json ] || { echo "host-wasm/pkg is not built (scripts/build-wasm.sh)" >&2; return 1; }
  rm -rf host-wasm/dist
  mkdir -p host-wasm/dist
  local name
  name=$(cd host-wasm/pkg && npm pack --silent --pack-destination ../dist | tail -n1)
  mv "host-wasm/dist/$name" host-wasm/dist/dpas-host.tgz
}

install_host() {
  local dir=$1
  (cd "$dir" && npm ci --no-audit --no-fund)
  if ! cmp -s host-wasm/pkg/dpas_host_bg.wasm "$dir/node_modules/@dpas/host/dpas_host_bg.wasm"; then
    echo "$dir installed another build of @dpas/host than host-wasm/pkg (an integrity hash for" >&2
    echo "the tarball in $dir/package-lock.json? remove it: the tarball changes with every build)" >&2
    return 1
  fi
}

ready_host() {
  if [ "${SKIP_BUILD:-}" != "1" ]; then
    bash scripts/build-wasm.sh
    pack_host
  fi
  [ -f host-wasm/dist/dpas-host.tgz ] || { echo "host-wasm/dist/dpas-host.tgz is missing" >&2; return 1; }
}
