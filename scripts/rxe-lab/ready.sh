#!/usr/bin/env bash
# rxe lab: is the lab ready to boot here? Looks only at what is present: never downloads.
#
#   scripts/rxe-lab/ready.sh       # exit 0 when ready; else 3 and one "rxe-lab: ..." line saying what is missing
#
# Ready means: the Debian packages fetch.sh unpacks are in the cache (its stamp, the kernel and its
# modules), and the commands build-initramfs.sh needs are installed. The test suite decides from
# this whether the interop tests run or skip; `npm run setup:lab` (setup.sh) makes it ready.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

cache="$(rxe_cache_dir)"
root="$cache/root"
[ -f "$root/.stamp" ] && [ -f "$root/.kernel-release" ] ||
  rxe_die 3 "the lab's Debian packages are not unpacked in $root (npm run setup:lab downloads them)"
kver="$(cat "$root/.kernel-release")"
[ -f "$root/boot/vmlinuz-$kver" ] && [ -d "$root/lib/modules/$kver" ] ||
  rxe_die 3 "$root has no kernel $kver (npm run setup:lab fetches it again)"
[ -x /bin/busybox ] || rxe_die 3 "busybox not found (apt-get install busybox-static)"
for c in cpio gzip modprobe depmod ip rdma nft; do
  command -v "$c" >/dev/null || rxe_die 3 "$c not found (apt-get install cpio gzip kmod iproute2 nftables)"
done
echo "$cache"
