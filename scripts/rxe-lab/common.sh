# Shared by the rxe lab scripts (sourced, not run).

# Debian packages unpacked for the guest besides the kernel: rdma-core's
# user-space and the tools, plus libraries the host may not have.
RXE_LAB_USER_PKGS=(
  rdma-core libibverbs1 ibverbs-providers librdmacm1 ibverbs-utils rdmacm-utils perftest
  libnl-3-200 libnl-route-3-200 libibumad3 libpci3
  # NVMe over Fabrics (scripts/rxe-lab/nvmf-guest): nvme-cli and what it links.
  nvme-cli libnvme1 libjson-c5 libdbus-1-3 libssl3
)

rxe_die() {
  local code="$1"
  shift
  echo "rxe-lab: $*" >&2
  exit "$code"
}

# The guest kernels the lab boots: RXE_LAB_KERNEL=6.1 (the default: what linux-image-amd64 of the
# configured archive depends on) or 6.12 (bookworm-backports' linux-image-amd64, whose rdma_rxe has
# FLUSH and ATOMIC WRITE, added in 6.2). Each has its own cache directory.
RXE_LAB_KERNELS=(6.1 6.12)

rxe_kernel() {
  local k="${RXE_LAB_KERNEL:-6.1}"
  case " ${RXE_LAB_KERNELS[*]} " in
    *" $k "*) echo "$k" ;;
    *) rxe_die 2 "RXE_LAB_KERNEL=$k: the lab boots ${RXE_LAB_KERNELS[*]}" ;;
  esac
}

rxe_cache_dir() {
  local base k
  if [ -n "${RXE_LAB_CACHE:-}" ]; then
    base="$RXE_LAB_CACHE"
  elif [ "$(id -u)" -eq 0 ]; then
    base=/var/cache/roce-ts/rxe-lab
  else
    base="${XDG_CACHE_HOME:-$HOME/.cache}/roce-ts/rxe-lab"
  fi
  k="$(rxe_kernel)" || exit 2
  if [ "$k" = 6.1 ]; then echo "$base"; else echo "$base/kernel-$k"; fi
}
