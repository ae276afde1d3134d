#!/usr/bin/env bash
# rxe lab: boot one Linux rdma_rxe guest under qemu (TCG) on a tap device inside
# a fresh network namespace, run a scenario of steps in it, each against a host
# command (usually roce-ts), capture the tap, and tear everything down.
#
#   scripts/rxe-lab/run.sh --scenario FILE --out DIR [options]
#
# Options:
#   --scenario FILE   the steps (format below)
#   --out DIR         results: console.log, capture.pcap, tap-dropped.txt, summary.tsv, steps/<id>.{guest,host}.*
#   --mtu N           netdev MTU of the tap and of the guest's eth0 (default 1500; 4200 for RoCE MTU 4096)
#   --guest-loss N    drop N/10000 of the RoCE frames the guest receives (nftables numgen on eth0 ingress)
#   --guest-cm-drop   in each step, drop the first CM REQ and the first CM REP the guest receives
#   --no-capture      record no frames (runs that move hundreds of MB, e.g. perftest -a and -D)
#   --ipv6            also give the tap fd00:198:18::2/64 and the guest fd00:198:18::1/64 (rxe then has
#                     RoCE v2 GIDs for its link-local and global IPv6 addresses: @GID6LL@, @GID6@)
#                     (nftables on eth0 ingress, matching QP 1 and the MAD attribute ID)
#   --tap-loss N      drop N/10000 of the RoCE frames sent to the guest (nftables numgen on the tap's
#                     egress hook; sees frames sent through the qdisc layer, e.g. AF_PACKET)
#   --timeout S       bound of the whole run, boot included (default 300)
#   --keep            keep the namespace after the run (debugging; remove with: ip netns del NAME)
#
# Scenario: one step per line, "#" comments; fields separated by " | ":
#   <id> <guest role: server|client> <tcp port> <timeout s> | <guest command> | <host command>
# The guest command runs in the guest (busybox sh word splitting; @GID@ becomes
# the index of the guest's RoCE v2 GID, @PEER@ the host's address). The host
# command runs with bash -c inside the namespace, with RXE_TAP, RXE_HOST_IP,
# RXE_GUEST_IP, RXE_MTU and ROCE (the roce command of this checkout) set. When
# the guest is the server, the host command starts once the guest listens; when
# it is the client, the guest starts once the host listens on the port.
#
# Exit status: 0 when every step's guest and host command exited 0, 1 when one
# did not, 2 on a usage error, 3 when the lab cannot run here (not root, no
# qemu, packages not fetchable), 4 when the guest did not come up or the run
# hit its time bound, 5 when a frame of the capture is malformed or has a bad
# ICRC (roce decode --errors; needs a built checkout: npm run build).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=common.sh
. "$here/common.sh"

scenario="" out="" mtu=1500 guest_loss=0 tap_loss=0 guest_cm_drop=0 total=300 keep=0 capture=1 ipv6=0
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --mtu) mtu="$2"; shift 2 ;;
    --guest-loss) guest_loss="$2"; shift 2 ;;
    --tap-loss) tap_loss="$2"; shift 2 ;;
    --guest-cm-drop) guest_cm_drop=1; shift ;;
    --no-capture) capture=0; shift ;;
    --ipv6) ipv6=1; shift ;;
    --timeout) total="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$scenario" ] && [ -f "$scenario" ] || { echo "run.sh: --scenario FILE is required" >&2; exit 2; }
[ -n "$out" ] || { echo "run.sh: --out DIR is required" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || rxe_die 3 "needs root (network namespaces, tap devices)"
command -v qemu-system-x86_64 >/dev/null || rxe_die 3 "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
for c in ip tcpdump timeout ss; do command -v "$c" >/dev/null || rxe_die 3 "$c not found"; done
[ -e /dev/net/tun ] || rxe_die 3 "/dev/net/tun is missing"

# What is unpacked is used as it is (npm run setup:lab refreshes it); only a cache with nothing in it
# is fetched here, under a time bound, for a first run by hand.
if ! cache="$(bash "$here/ready.sh" 2>/dev/null | tail -n1)"; then
  cache="$(timeout 300 bash "$here/fetch.sh" | tail -n1)" || exit 3
fi
initrd="$(bash "$here/build-initramfs.sh" | tail -n1)" || exit 3
kver="$(cat "$cache/root/.kernel-release")"
kernel="$cache/root/boot/vmlinuz-$kver"

mkdir -p "$out/steps"
out="$(cd "$out" && pwd)"
rm -f "$out"/steps/* "$out/console.log" "$out/summary.tsv" "$out/capture.pcap" "$out/tap.pcap" "$out/tap-dropped.txt"

id="$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
ns="rxelab-$id"
tap="rxtap$id"
host_ip=198.18.0.2 guest_ip=198.18.0.1
qemu_pid="" tcpdump_pid=""
host_pids=()

cleanup() {
  set +e
  for p in "${host_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  [ -n "$qemu_pid" ] && kill -TERM "$qemu_pid" 2>/dev/null
  [ -n "$tcpdump_pid" ] && kill -INT "$tcpdump_pid" 2>/dev/null
  sleep 0.3
  for p in "${host_pids[@]}" $qemu_pid; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$tcpdump_pid" ] && { wait "$tcpdump_pid" 2>/dev/null; }
  if [ "$keep" = 0 ]; then
    ip -n "$ns" link del "$tap" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  fi
  rm -f "$out/.scenario.guest" "$out/.scenario.cpio.gz" "$out/.initrd"
}
trap cleanup EXIT
trap 'exit 4' TERM INT

ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" tuntap add dev "$tap" mode tap
ip -n "$ns" link set dev "$tap" mtu "$mtu"
ip -n "$ns" addr add "$host_ip/24" dev "$tap"
host_ip6=fd00:198:18::2 guest_ip6=fd00:198:18::1
if [ "$ipv6" = 1 ]; then
  # No duplicate address detection on the tap either: its link-local address (the host's GID 0)
  # appears when qemu opens the tap, and while tentative the kernel answers no neighbour
  # solicitation, so the guest's first modify-to-RTR toward it would fail.
  ip netns exec "$ns" sysctl -q -w "net.ipv6.conf.$tap.accept_dad=0" "net.ipv6.conf.$tap.dad_transmits=0"
  ip -n "$ns" -6 addr add "$host_ip6/64" dev "$tap" nodad
fi
# The tap's queue toward qemu (500 frames) holds what the host sent until the TCG guest reads it. A
# burst of READ responses can overflow it, and the kernel drops them before the capture point
# (tun_net_xmit: full ring): tap-dropped.txt records how many. A deeper queue would hold host frames
# for milliseconds before the capture point sees them, so that the capture shows the host answering
# NAKs it had not yet received.
ip -n "$ns" link set dev "$tap" up
if [ "$tap_loss" != 0 ]; then
  ip netns exec "$ns" nft add table netdev rxelab
  ip netns exec "$ns" nft add chain netdev rxelab out "{ type filter hook egress device $tap priority 0 ; }"
  ip netns exec "$ns" nft add rule netdev rxelab out udp dport 4791 numgen random mod 10000 "<" "$tap_loss" counter drop
fi

# The guest's half of the scenario, as a second archive after the base image.
declare -A step_role step_port step_tmo step_host
: >"$out/.scenario.guest"
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in ''|\#*) continue ;; esac
  head="${line%% | *}" rest="${line#* | }"
  gcmd="${rest%% | *}" hcmd="${rest#* | }"
  read -r sid srole sport stmo <<<"$head"
  [ -n "$sid" ] && [ -n "$stmo" ] && [ "$rest" != "$line" ] && [ "$hcmd" != "$rest" ] || { echo "run.sh: bad scenario line: $line" >&2; exit 2; }
  step_role[$sid]="$srole" step_port[$sid]="$sport" step_tmo[$sid]="$stmo" step_host[$sid]="$hcmd"
  echo "$sid $srole $sport $stmo $gcmd" >>"$out/.scenario.guest"
done <"$scenario"
(
  d="$(mktemp -d)"
  cp "$out/.scenario.guest" "$d/scenario"
  cd "$d" && echo scenario | cpio -o -H newc --quiet | gzip -1 >"$out/.scenario.cpio.gz"
  rm -rf "$d"
)
cat "$initrd" "$out/.scenario.cpio.gz" >"$out/.initrd"

dump=()
if [ "$capture" = 1 ]; then
  ip netns exec "$ns" timeout -k 2 "$total" tcpdump -i "$tap" -s 0 -U -w "$out/tap.pcap" 2>"$out/tcpdump.log" &
  tcpdump_pid=$!
  # tcpdump must be capturing before the guest sends anything.
  for _ in $(seq 50); do grep -q 'listening on' "$out/tcpdump.log" 2>/dev/null && break; sleep 0.1; done
  dump=(-object "filter-dump,id=cap0,netdev=n0,file=$out/capture.pcap,maxlen=65535")
fi

roce="node $repo/bin/roce.js"
append="console=ttyS0 panic=-1 quiet loglevel=3 RXE_IP=$guest_ip RXE_PEER=$host_ip RXE_MTU=$mtu RXE_LOSS=$guest_loss RXE_CM_DROP=$guest_cm_drop"
# The guest's global IPv6 address, and its GID as sysfs writes it (eight groups of four digits).
[ "$ipv6" = 1 ] && append="$append RXE_IP6=$guest_ip6 RXE_GID6=fd00:0198:0018:0000:0000:0000:0000:0001 RXE_PEER6=$host_ip6"
start=$(date +%s.%N)
coproc QEMU {
  exec ip netns exec "$ns" timeout -k 2 "$total" qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp 1 \
    -nodefaults -display none -serial stdio -no-reboot \
    -kernel "$kernel" -initrd "$out/.initrd" -append "$append" \
    -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no,vnet_hdr=off" \
    "${dump[@]}" \
    -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:01 2>&1
}
qemu_pid=$QEMU_PID
qin=${QEMU[1]}
qout=${QEMU[0]}

# Runs step $1's host command in the background.
start_host() {
  local sid="$1"
  (
    # A roce server writes its port to ROCE_READY_FILE once it listens: the sign for RDMA CM
    # servers, which open no TCP port for host_listening to see.
    export RXE_TAP="$tap" RXE_HOST_IP="$host_ip" RXE_GUEST_IP="$guest_ip" RXE_HOST_IP6="$host_ip6" RXE_GUEST_IP6="$guest_ip6" RXE_MTU="$mtu" ROCE="$roce" ROCE_READY_FILE="$out/steps/$sid.ready"
    set +e
    ip netns exec "$ns" timeout -k 2 "${step_tmo[$sid]}" bash -c "${step_host[$sid]}" >"$out/steps/$sid.host.out" 2>"$out/steps/$sid.host.err" </dev/null
    echo $? >"$out/steps/$sid.host.rc"
  ) &
  host_pids+=($!)
}
# Waits for every host command started so far.
wait_hosts() {
  local p
  for p in "${host_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  host_pids=()
}
host_listening() {
  [ -n "$(ip netns exec "$ns" ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# Frames the host sent that the tap dropped (a full queue toward qemu, or no qemu attached).
tap_tx_dropped() {
  ip netns exec "$ns" cat "/sys/class/net/$tap/statistics/tx_dropped" 2>/dev/null || echo 0
}
ready=0 ended=0 tx_dropped_at_ready=""
while IFS= read -r line <&"$qout"; do
  line="${line%$'\r'}"
  printf '%s\n' "$line" >>"$out/console.log"
  case "$line" in
    RXE-READY*)
      ready=1
      tx_dropped_at_ready="$(tap_tx_dropped)"
      echo "rxe-lab: guest ready after $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s: $line" >&2
      ;;
    RXE-STEP\ *)
      read -r _ sid srole <<<"$line"
      echo "rxe-lab: step $sid (guest $srole)" >&2
      if [ "$srole" = client ]; then
        wait_hosts
        start_host "$sid"
        hp=${host_pids[-1]}
        for _ in $(seq 600); do
          host_listening "${step_port[$sid]}" && break
          [ -e "$out/steps/$sid.ready" ] && break
          kill -0 "$hp" 2>/dev/null || break
          sleep 0.05
        done
        echo "go $sid" >&"$qin"
      fi
      ;;
    RXE-LISTENING\ *)
      read -r _ sid <<<"$line"
      wait_hosts
      start_host "$sid"
      ;;
    RXE-OUT\ *)
      read -r _ sid rest <<<"$line"
      printf '%s\n' "${line#RXE-OUT "$sid" }" >>"$out/steps/$sid.guest.out"
      ;;
    RXE-DONE\ *)
      read -r _ sid rc <<<"$line"
      echo "$rc" >"$out/steps/$sid.guest.rc"
      ;;
    RXE-END*)
      ended=1
      # Only what the tap dropped while the steps ran: it also counts frames the host sent while
      # no qemu had it open (before the boot, after the power-off).
      [ -n "$tx_dropped_at_ready" ] && echo $(( $(tap_tx_dropped) - tx_dropped_at_ready )) >"$out/tap-dropped.txt"
      ;;
    RXE-ERROR*) echo "rxe-lab: $line" >&2 ;;
  esac
done
wait_hosts
set +e
wait "$qemu_pid"
qrc=$?
set -e
qemu_pid=""
echo "rxe-lab: guest powered off after $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s (qemu exit $qrc)" >&2
sleep 0.2
if [ -n "$tcpdump_pid" ]; then
  kill -INT "$tcpdump_pid" 2>/dev/null || true
  wait "$tcpdump_pid" 2>/dev/null || true
fi
tcpdump_pid=""

if [ "$tap_loss" != 0 ]; then
  ip netns exec "$ns" nft list chain netdev rxelab out 2>/dev/null | sed -n 's/.*counter \(packets [0-9]* bytes [0-9]*\).*/\1/p' >"$out/tap-nft.txt" || true
fi
grep '^RXE-NFT ' "$out/console.log" | sed 's/^RXE-NFT //' >"$out/guest-nft.txt" || true

# Every RoCE frame of the capture must decode with a valid ICRC (roce decode).
decode_rc=0
if [ -s "$out/capture.pcap" ] && [ -f "$repo/dist/cli/main.js" ]; then
  node "$repo/bin/roce.js" decode --errors "$out/capture.pcap" >"$out/decode-errors.txt" 2>"$out/decode-summary.txt" || decode_rc=$?
  cat "$out/decode-summary.txt" >&2
  grep -q ' 0 malformed, 0 with a bad ICRC' "$out/decode-summary.txt" || decode_rc=1
fi

status=0
[ "$ready" = 1 ] && [ "$ended" = 1 ] || status=4
printf 'id\tguest_role\tguest_rc\thost_rc\n' >"$out/summary.tsv"
while read -r sid _; do
  g="$(cat "$out/steps/$sid.guest.rc" 2>/dev/null || echo none)"
  h="$(cat "$out/steps/$sid.host.rc" 2>/dev/null || echo none)"
  printf '%s\t%s\t%s\t%s\n' "$sid" "${step_role[$sid]}" "$g" "$h" >>"$out/summary.tsv"
  [ "$g" = 0 ] && [ "$h" = 0 ] || { [ "$status" = 0 ] && status=1; }
done <"$out/.scenario.guest"
[ "$status" = 0 ] && [ "$decode_rc" != 0 ] && status=5
cat "$out/summary.tsv" >&2
exit "$status"
