#!/usr/bin/env bash
# rxe lab, step 1: fetch what the guest needs from Debian's archive and unpack it.
#
#   scripts/rxe-lab/fetch.sh            # prints the cache directory on its last line
#
# Downloads (apt-get download, never installed on the host) the kernel package
# that linux-image-amd64 depends on, rdma-core's user-space (libibverbs, the rxe
# provider, librdmacm, ibverbs-utils, rdmacm-utils), perftest and their libraries,
# and unpacks each with `dpkg -x` into $RXE_LAB_CACHE/root. Nothing binary is kept
# in the repository. Idempotent: a stamp file names what was unpacked; a second
# run with the same package versions does nothing.
#
# Cache: $RXE_LAB_CACHE, else /var/cache/roce-ts/rxe-lab as root, else
# ${XDG_CACHE_HOME:-~/.cache}/roce-ts/rxe-lab.
# Exit status: 0 ready, 3 cannot fetch (no apt-get, no network, package missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

cache="$(rxe_cache_dir)"
mkdir -p "$cache/debs" "$cache/root"

command -v apt-get >/dev/null || rxe_die 3 "apt-get not found (the lab unpacks Debian packages)"
command -v dpkg >/dev/null || rxe_die 3 "dpkg not found"

# RXE_LAB_KERNEL=6.12: the kernel comes from bookworm-backports through an apt configuration of
# the cache's own (sources, lists and archives under $cache/apt), so the host's apt sources stay
# as they are; rdma-core's user space is the configured archive's, as for 6.1.
kapt=()
if [ "$(rxe_kernel)" = 6.12 ]; then
  mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm-backports main" >"$cache/apt/sources.list"
  kapt=(-o "Dir::Etc::sourcelist=$cache/apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache")
  if [ -z "$(ls "$cache/apt/lists" | grep -v partial || true)" ]; then
    apt-get "${kapt[@]}" update -qq >/dev/null 2>&1 || rxe_die 3 "apt-get update of bookworm-backports failed"
  fi
fi

# The kernel image package linux-image-amd64 points at (e.g. linux-image-6.1.0-56-amd64).
kpkg="${RXE_LAB_KERNEL_PKG:-}"
if [ -z "$kpkg" ] && [ "${#kapt[@]}" -gt 0 ]; then
  kpkg="$(apt-cache "${kapt[@]}" depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)"
  [ -n "$kpkg" ] || rxe_die 3 "bookworm-backports has no linux-image-amd64"
fi
if [ -z "$kpkg" ]; then
  kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)"
  if [ -z "$kpkg" ]; then
    # Stale or absent package lists (fresh container): refresh once.
    apt-get update -qq >/dev/null 2>&1 || true
    kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)"
  fi
fi
[ -n "$kpkg" ] || rxe_die 3 "cannot resolve linux-image-amd64 to a kernel package (apt-get update?)"

pkgs=("$kpkg" "${RXE_LAB_USER_PKGS[@]}")

# Versions apt would download now; the stamp records them.
want=""
for p in "${pkgs[@]}"; do
  ka=()
  [ "$p" = "$kpkg" ] && ka=("${kapt[@]}")
  v="$(apt-cache "${ka[@]}" policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p' | head -n1)"
  if [ -z "$v" ] || [ "$v" = "(none)" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    v="$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: //p' | head -n1)"
  fi
  [ -n "$v" ] && [ "$v" != "(none)" ] || rxe_die 3 "package $p is not available from the configured archive"
  want+="$p=$v"$'\n'
done

if [ -f "$cache/root/.stamp" ] && [ "$(cat "$cache/root/.stamp")" = "$(printf '%s' "$want")" ]; then
  echo "rxe-lab: packages already unpacked in $cache/root" >&2
  echo "$cache"
  exit 0
fi

echo "rxe-lab: downloading ${pkgs[*]}" >&2
(
  cd "$cache/debs"
  # apt-get download runs as the _apt user when it can; the folder must be writable by it.
  chmod 0777 . 2>/dev/null || true
  missing=()
  while IFS= read -r pv; do
    [ -n "$pv" ] || continue
    p="${pv%%=*}" v="${pv#*=}"
    f="$(ls -1 "${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -n1 || true)"
    [ -n "$f" ] || missing+=("$pv")
  done <<<"$want"
  if [ "${#missing[@]}" -gt 0 ]; then
    km=() um=()
    for pv in "${missing[@]}"; do
      if [ "${pv%%=*}" = "$kpkg" ] && [ "${#kapt[@]}" -gt 0 ]; then km+=("$pv"); else um+=("$pv"); fi
    done
    if [ "${#um[@]}" -gt 0 ]; then apt-get download -q "${um[@]}" >&2 || rxe_die 3 "apt-get download ${um[*]} failed"; fi
    if [ "${#km[@]}" -gt 0 ]; then apt-get "${kapt[@]}" download -q "${km[@]}" >&2 || rxe_die 3 "apt-get download ${km[*]} failed"; fi
  fi
)

rm -rf "$cache/root.new"
mkdir -p "$cache/root.new"
while IFS= read -r pv; do
  [ -n "$pv" ] || continue
  p="${pv%%=*}" v="${pv#*=}"
  f="$(ls -1 "$cache/debs/${p}_${v//:/%3a}_"*.deb | head -n1)"
  dpkg -x "$f" "$cache/root.new"
done <<<"$want"
# The kernel release, for the initramfs builder.
kver="$(ls -1 "$cache/root.new/lib/modules" | head -n1)"
[ -n "$kver" ] && [ -f "$cache/root.new/boot/vmlinuz-$kver" ] || rxe_die 3 "$kpkg has no /boot/vmlinuz or /lib/modules"
echo "$kver" >"$cache/root.new/.kernel-release"
printf '%s' "$want" >"$cache/root.new/.stamp"
rm -rf "$cache/root"
mv "$cache/root.new" "$cache/root"
# Old versions' packages are no longer needed.
find "$cache/debs" -name '*.deb' -mtime +30 -delete 2>/dev/null || true
echo "rxe-lab: unpacked into $cache/root (kernel $kver)" >&2
echo "$cache"
