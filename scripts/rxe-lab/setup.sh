#!/usr/bin/env bash
# rxe lab set-up (npm run setup:lab, part of npm run setup): downloads and unpacks the guest's
# Debian packages (fetch.sh) and builds its initramfs (build-initramfs.sh), each under a time bound.
# Never fails the caller: where the lab cannot run (not root, no qemu, no apt-get) or the download
# fails, it prints one line saying why and exits 0, and the interop tests skip with that reason
# (scripts/rxe-lab/ready.sh). Idempotent: a second run with the same package versions downloads nothing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FETCH_TIMEOUT_S="${RXE_LAB_FETCH_TIMEOUT:-300}"

skip() {
  echo "setup-lab: $* (the rxe interop tests will be skipped)"
  exit 0
}

[ "$(uname -s)" = Linux ] || skip "the rxe lab needs Linux"
[ "$(id -u)" -eq 0 ] || skip "not root"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (npm run setup:system installs it)"
command -v apt-get >/dev/null || skip "no apt-get (the lab unpacks Debian packages)"

# Both guest kernels: 6.1 (the default) and 6.12 (RXE_LAB_KERNEL=6.12: rxe with FLUSH and ATOMIC
# WRITE, for test/interop/memory-protection.test.ts), each in its own cache directory.
timeout "$FETCH_TIMEOUT_S" bash "$here/fetch.sh" >/dev/null
rc=$?
[ "$rc" -eq 124 ] && skip "downloading the lab's Debian packages took over ${FETCH_TIMEOUT_S} s"
[ "$rc" -eq 0 ] || skip "could not fetch the lab's Debian packages (fetch.sh exit $rc)"
timeout 300 bash "$here/build-initramfs.sh" >/dev/null || skip "could not build the guest's initramfs"
RXE_LAB_KERNEL=6.12 timeout "$FETCH_TIMEOUT_S" bash "$here/fetch.sh" >/dev/null
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "setup-lab: could not fetch the 6.12 guest kernel from bookworm-backports (fetch.sh exit $rc; the tests that boot it will be skipped)"
  exit 0
fi
RXE_LAB_KERNEL=6.12 timeout 300 bash "$here/build-initramfs.sh" >/dev/null || echo "setup-lab: could not build the 6.12 guest's initramfs (the tests that boot it will be skipped)"
