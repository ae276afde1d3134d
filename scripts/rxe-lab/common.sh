# Shared by the rxe lab scripts (sourced, not run).

# Debian packages unpacked for the guest besides the kernel: rdma-core's
# user-space and the tools, plus libraries the host may not have.
RXE_LAB_USER_PKGS=(
  rdma-core libibverbs1 ibverbs-providers librdmacm1 ibverbs-utils rdmacm-utils perftest
  libnl-3-200 libnl-route-3-200 libibumad3 libpci3
)

rxe_die() {
  local code="$1"
  shift
  echo "rxe-lab: $*" >&2
  exit "$code"
}

rxe_cache_dir() {
  if [ -n "${RXE_LAB_CACHE:-}" ]; then
    echo "$RXE_LAB_CACHE"
  elif [ "$(id -u)" -eq 0 ]; then
    echo /var/cache/roce-ts/rxe-lab
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/roce-ts/rxe-lab"
  fi
}
