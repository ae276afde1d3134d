#!/usr/bin/env bash
# Installs the system packages roce-ts's tests and tools use (Debian/Ubuntu).
# Idempotent: does nothing when every command is already present. Never fails
# the caller: without root or apt-get (or when the install itself fails) it
# prints one line saying what is missing and exits 0, because the
# pure-TypeScript part works without these packages.
#
# Later issues add entries here (e.g. qemu-system-x86_64:qemu-system-x86).
set -euo pipefail

# "what:package" pairs. "what" is a command name, or an absolute file path (a
# header of a -dev package); its absence means the package is needed.
REQUIRED=(
  "tshark:tshark"
  # The native addon (scripts/build-native.sh): AF_XDP over libxdp/libbpf, the
  # XDP program compiled with clang -target bpf, batched ICRC with isa-l.
  "clang:clang"
  "llvm-strip:llvm"
  "pkg-config:pkg-config"
  "/usr/include/xdp/xsk.h:libxdp-dev"
  "/usr/include/bpf/libbpf.h:libbpf-dev"
  "/usr/include/libelf.h:libelf-dev"
  "/usr/include/zlib.h:zlib1g-dev"
  "/usr/include/linux/if_xdp.h:linux-libc-dev"
  "/usr/include/isa-l.h:libisal-dev"
  # Network-namespace driver tests and debugging.
  "ip:iproute2"
  "nstat:iproute2"
  "nft:nftables"
  "xdp-loader:xdp-tools"
  "bpftool:bpftool"
  "tcpdump:tcpdump"
  "ping:iputils-ping"
  # --steer's ntuple rules and `roce devices`' ntuple column (ethtool -k / -n / -N).
  "ethtool:ethtool"
  # Pictures are tested as a person sees them: the ladder HTML rendered in headless Chromium.
  "chromium:chromium"
  # The rxe interop lab (scripts/rxe-lab/): an rdma_rxe guest under qemu, its initramfs from
  # busybox and the Debian packages fetch.sh downloads (never installed on the host).
  "qemu-system-x86_64:qemu-system-x86"
  "/usr/share/doc/busybox-static:busybox-static"
  "cpio:cpio"
  "modprobe:kmod"
  "depmod:kmod"
  # 6.12's modules are xz-compressed; build-initramfs.sh unpacks them.
  "xz:xz-utils"
  # The lab's verbs-check program (native/verbs-check/), built on the host against libibverbs.
  "/usr/include/infiniband/verbs.h:libibverbs-dev"
)

missing_pkgs=()
missing_cmds=()
for entry in "${REQUIRED[@]}"; do
  what="${entry%%:*}"
  pkg="${entry#*:}"
  if [[ "$what" == /* ]]; then
    [ -e "$what" ] && continue
  elif command -v "$what" >/dev/null 2>&1; then
    continue
  fi
  missing_cmds+=("$what")
  # One package may be named by several entries: list it once.
  if [[ " ${missing_pkgs[*]-} " != *" $pkg "* ]]; then
    missing_pkgs+=("$pkg")
  fi
done

if [ "${#missing_pkgs[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing_cmds[*]} (tests that need it will be skipped); install with: sudo apt-get install -y --no-install-recommends ${missing_pkgs[*]}"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# tshark pulls in wireshark-common, which asks whether non-root users may capture.
if command -v debconf-set-selections >/dev/null 2>&1; then
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
fi

install() {
  apt-get install -y --no-install-recommends "${missing_pkgs[@]}"
}

echo "setup-system: installing ${missing_pkgs[*]}"
if ! install; then
  # The package lists may be stale or absent (fresh container): refresh once and retry.
  if ! { apt-get update && install; }; then
    echo "setup-system: could not install ${missing_pkgs[*]} (tests that need ${missing_cmds[*]} will be skipped)" >&2
  fi
fi
