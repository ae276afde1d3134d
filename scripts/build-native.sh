#!/usr/bin/env bash
# Builds roce-ts's optional native addon (native/) and its XDP program:
#   native/build/roce_filter.bpf.o         the XDP program (clang -O2 -target bpf)
#   native/build/Release/roce_native.node  the addon (node-gyp, node-addon-api)
# The pure-TypeScript stack and its tests work without it; the AF_XDP and
# AF_PACKET drivers (roce perftest, roce pingpong) and the batched ICRC need it.
# When something is missing it prints one line naming it and the commands that
# install it, and exits non-zero; with --optional (npm install's install step,
# npm run setup) it exits 0 after that line, so the caller carries on.
set -euo pipefail

optional=0
if [ "${1-}" = "--optional" ]; then
  optional=1
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
native="$root/native"
out="$native/build"

# One line: what is missing, what it costs, and the commands that fix it.
not_built() {
  echo "build-native: the native addon was not built ($1), so roce perftest/pingpong and the tests that need it cannot run; $2" >&2
  if [ "$optional" -eq 1 ]; then
    exit 0
  fi
  exit 1
}

fail() {
  not_built "$1" "install the system packages with \`sudo scripts/setup-system.sh\` (or \`npm run setup:system\` as root), then run \`npm run build:native\`"
}

missing=()
for cmd in clang pkg-config make g++ python3; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
for hdr in /usr/include/xdp/xsk.h:libxdp-dev /usr/include/bpf/libbpf.h:libbpf-dev \
  /usr/include/libelf.h:libelf-dev /usr/include/zlib.h:zlib1g-dev /usr/include/linux/if_xdp.h:linux-libc-dev; do
  [ -e "${hdr%%:*}" ] || missing+=("${hdr#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  fail "missing ${missing[*]}"
fi
if ! pkg-config --exists libxdp libbpf; then
  fail "pkg-config finds no libxdp/libbpf"
fi
# node-addon-api is an optional dependency: in this repository it is in node_modules/, in a
# project that installed roce-ts it may be beside it; node resolves it from native/ either way.
if ! (cd "$native" && node -e 'require.resolve("node-addon-api/package.json")') >/dev/null 2>&1; then
  not_built "node-addon-api is not installed" "run \`npm install\` (it is an optional dependency of roce-ts), then \`npm run build:native\`"
fi
# node-gyp: this repository's devDependency, or the one npm brings (on PATH in npm's scripts).
if [ -x "$root/node_modules/.bin/node-gyp" ]; then
  node_gyp=("$root/node_modules/.bin/node-gyp")
elif command -v node-gyp >/dev/null 2>&1; then
  node_gyp=(node-gyp)
elif [ -n "${npm_config_node_gyp-}" ] && [ -e "${npm_config_node_gyp}" ]; then
  node_gyp=(node "$npm_config_node_gyp")
else
  not_built "node-gyp is not installed" "run \`npm install\` in the repository, or \`npm run build:native\` through npm, which brings one"
fi

# Node's headers: node-gyp would download them, which needs the internet; use
# the ones installed with node when they are there.
node_prefix="$(node -p 'require("path").resolve(process.execPath, "..", "..")')"
gyp_args=()
if [ -e "$node_prefix/include/node/node_api.h" ]; then
  gyp_args+=("--nodedir=$node_prefix")
fi

# node-gyp rebuild starts from an empty build/: the addon first, then the BPF object.
cd "$native"
log="$native/node-gyp.log"
if ! "${node_gyp[@]}" rebuild "${gyp_args[@]}" -j 2 >"$log" 2>&1; then
  # Keep the compiler's messages: they are what one needs to see.
  grep -E 'error|Error' "$log" | head -20 >&2 || true
  not_built "node-gyp failed; the full log is $log" "see the compiler's messages above; missing system packages are installed by \`sudo scripts/setup-system.sh\`"
fi
mv "$log" "$out/node-gyp.log"

# The BPF target has no multiarch include path of its own (asm/types.h).
multiarch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
if ! clang -O2 -g -Wall -target bpf -I"/usr/include/$multiarch" \
  -c "$native/bpf/roce_filter.bpf.c" -o "$out/roce_filter.bpf.o.tmp"; then
  not_built "clang could not compile native/bpf/roce_filter.bpf.c" "see clang's messages above; missing system packages are installed by \`sudo scripts/setup-system.sh\`"
fi
mv "$out/roce_filter.bpf.o.tmp" "$out/roce_filter.bpf.o"
echo "build-native: built native/build/Release/roce_native.node and native/build/roce_filter.bpf.o"
