#!/usr/bin/env bash
# rxe lab, step 2: build the guest's initramfs from what fetch.sh unpacked.
#
#   scripts/rxe-lab/build-initramfs.sh     # prints the initramfs path on its last line
#
# Contents: busybox-static (from the host's busybox-static package) with its
# applets as links, the kernel modules rdma_rxe needs in insmod order
# (/modules.order, computed with modprobe --show-depends), ibverbs-utils,
# perftest and rping with their libraries (ldd), the rxe provider and its
# driver file (dlopen'd, invisible to ldd), libgcc_s (glibc dlopens it in
# pthread_exit), verbs-check (verbs-check.c, when libibverbs-dev is installed), iproute2's ip and rdma, nft for loss injection, and /init.
# For NVMe over Fabrics: nvme-cli, nvmf-guest, and the modules of nvme-rdma, nvmet-rdma and brd in
# insmod order in /modules.nvmf (nvmf-guest loads them; the boot does not).
# The scenario is not in it: run.sh appends a small second archive per boot.
# Idempotent: the image is named by a hash of its inputs and rebuilt only when
# one changes. Exit status 3 when something it needs is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

cache="$(rxe_cache_dir)"
root="$cache/root"
[ -f "$root/.stamp" ] || rxe_die 3 "nothing unpacked in $root: run scripts/rxe-lab/fetch.sh first"
kver="$(cat "$root/.kernel-release")"
busybox=/bin/busybox
[ -x "$busybox" ] && "$busybox" --list >/dev/null 2>&1 || rxe_die 3 "busybox not found (apt-get install busybox-static)"
ldd "$busybox" >/dev/null 2>&1 && rxe_die 3 "$busybox is not statically linked (apt-get install busybox-static)"
for c in cpio gzip modprobe depmod ip rdma nft xz; do
  command -v "$c" >/dev/null || rxe_die 3 "$c not found (apt-get install cpio gzip kmod iproute2 nftables xz-utils)"
done

MODULES=(crc32_generic crc32-pclmul rdma_rxe ib_uverbs rdma_ucm virtio_pci virtio_net nft_numgen)
NVMF_MODULES=(nvme-rdma nvmet-rdma brd)
TOOLS=(ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_devinfo ibv_devices
  ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat rping udaddy ucmatose rdma_server rdma_client)
HOST_TOOLS=("$(command -v ip)" "$(command -v rdma)" "$(command -v nft)")

key="$( {
  cat "$root/.stamp"
  sha256sum "$here/init" "$here/nvmf-guest" "$here/build-initramfs.sh" "$here/verbs-check.c" "$busybox" "${HOST_TOOLS[@]}" | cut -d' ' -f1
  # Whether verbs-check can be built here (libibverbs-dev) changes the image too.
  [ -f /usr/include/infiniband/verbs.h ] && echo verbs-check
} | sha256sum | cut -c1-16)"
out="$cache/initramfs-$key.cpio.gz"
if [ -s "$out" ]; then
  echo "rxe-lab: initramfs up to date" >&2
  echo "$out"
  exit 0
fi

[ -f "$root/lib/modules/$kver/modules.dep" ] || depmod -b "$root" "$kver"

stage="$(mktemp -d "$cache/stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,run,etc/libibverbs.d,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu/libibverbs,usr/lib64,lib/modules}
ln -s ../usr/lib/x86_64-linux-gnu "$stage/lib/x86_64-linux-gnu"
ln -s usr/lib64 "$stage/lib64"

cp "$busybox" "$stage/bin/busybox"
for a in $("$busybox" --list); do
  [ -e "$stage/bin/$a" ] || ln -s busybox "$stage/bin/$a"
done

# Modules, in the order modprobe would load them: $1 the list file, the rest the modules. A module
# an earlier list has is not listed again.
add_modules() {
  local list="$1"
  shift
  : >"$stage/$list"
  modprobe -a -d "$root" -S "$kver" --show-depends "$@" |
    awk '$1 == "insmod" { print $2 }' | awk '!seen[$0]++' | while read -r ko; do
    rel="${ko#"$root"/lib/modules/}"
    # 6.12's modules are xz-compressed; busybox insmod loads plain ones.
    case "$rel" in *.ko.xz) rel="${rel%.xz}" ;; esac
    [ -f "$stage/lib/modules/$rel" ] && continue
    mkdir -p "$stage/lib/modules/$(dirname "$rel")"
    case "$ko" in
      *.ko.xz) xz -dc "$ko" >"$stage/lib/modules/$rel" ;;
      *) cp "$ko" "$stage/lib/modules/$rel" ;;
    esac
    echo "$rel" >>"$stage/$list"
  done
  [ -s "$stage/$list" ] || rxe_die 3 "modprobe found none of $* in $root"
}
add_modules modules.order "${MODULES[@]}"
add_modules modules.nvmf "${NVMF_MODULES[@]}"

# Programs and what they link.
bins=()
for t in "${TOOLS[@]}"; do
  [ -x "$root/usr/bin/$t" ] || rxe_die 3 "$t missing from the unpacked packages"
  cp "$root/usr/bin/$t" "$stage/usr/bin/$t"
  bins+=("$root/usr/bin/$t")
done
[ -x "$root/usr/sbin/nvme" ] || rxe_die 3 "nvme missing from the unpacked packages (nvme-cli)"
cp "$root/usr/sbin/nvme" "$stage/usr/sbin/nvme"
bins+=("$root/usr/sbin/nvme")
cp "$here/nvmf-guest" "$stage/usr/bin/nvmf-guest"
chmod 0755 "$stage/usr/bin/nvmf-guest"
for t in "${HOST_TOOLS[@]}"; do
  cp "$t" "$stage/usr/sbin/$(basename "$t")"
  bins+=("$t")
done
# verbs-check (memory windows, SEND with invalidate, LOCAL_INV, FLUSH, ATOMIC WRITE through
# libibverbs): built here against the host's libibverbs-dev, which is the guest's rdma-core 44.
if [ -f /usr/include/infiniband/verbs.h ] && command -v cc >/dev/null; then
  cc -O2 -Wall -o "$stage/usr/bin/verbs-check" "$here/verbs-check.c" -libverbs || rxe_die 3 "verbs-check.c did not compile"
  bins+=("$stage/usr/bin/verbs-check")
fi
rxe_so="$root/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
[ -f "$rxe_so" ] || rxe_so="$(ls "$root"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so | head -n1)"
cp "$rxe_so" "$stage/usr/lib/x86_64-linux-gnu/libibverbs/"
cp "$root/etc/libibverbs.d/rxe.driver" "$stage/etc/libibverbs.d/"
bins+=("$rxe_so")
libpath="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
LD_LIBRARY_PATH="$libpath" ldd "${bins[@]}" 2>/dev/null | grep -v ":$" | grep -o '/[^ ]*\.so[^ ]*' | sort -u | while read -r lib; do
  case "$lib" in
    */ld-linux-x86-64.so.2) cp -L "$lib" "$stage/usr/lib64/ld-linux-x86-64.so.2" ;;
    *) cp -L "$lib" "$stage/usr/lib/x86_64-linux-gnu/$(basename "$lib")" ;;
  esac
done
[ -f "$stage/usr/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$stage/usr/lib64/"
gcc_s="$(ls /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/libgcc_s.so.1 2>/dev/null | head -n1 || true)"
[ -n "$gcc_s" ] && cp -L "$gcc_s" "$stage/usr/lib/x86_64-linux-gnu/"
# nft reads its protocol names from these (optional).
for f in /etc/protocols /etc/services; do [ -f "$f" ] && cp "$f" "$stage/etc/"; done
echo 'root:x:0:0:root:/:/bin/sh' >"$stage/etc/passwd"

cp "$here/init" "$stage/init"
chmod 0755 "$stage/init"

tmp="$out.tmp.$$"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$tmp"
mv "$tmp" "$out"
# Older images are stale.
find "$cache" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "$(basename "$out")" -delete
echo "rxe-lab: built $out ($(du -h "$out" | cut -f1))" >&2
echo "$out"
