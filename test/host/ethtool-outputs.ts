/**
 * What ethtool prints, recorded, for the tests of apps/host/roce-steering.ts. Each text says where
 * it came from: run on this machine (ethtool 6.1, Linux 6.18, veth), quoted from a public report
 * (mailing list, blog), or laid out as ethtool's rxclass.c prints a rule (rxclass_print_nfc_rule:
 * "Filter: N", then tab-indented fields, masks printed inverted: 0x0 = must match) for the rules
 * --steer adds, which no machine here can hold. Nothing here is produced by the code under test.
 */
import type { CommandResult } from '../../apps/host/roce-steering';

const ok = (stdout: string): CommandResult => ({ status: 0, stdout, stderr: '' });
const failed = (status: number, stderr: string, stdout = ''): CommandResult => ({ status, stdout, stderr });

/** `ethtool -k va` on a veth (recorded here): ntuple-filters: off [fixed]. */
export const VETH_FEATURES = ok(`Features for va:
rx-checksumming: on
tx-checksumming: on
	tx-checksum-ipv4: off [fixed]
	tx-checksum-ip-generic: on
	tx-checksum-ipv6: off [fixed]
	tx-checksum-fcoe-crc: off [fixed]
	tx-checksum-sctp: on
scatter-gather: on
	tx-scatter-gather: on
	tx-scatter-gather-fraglist: on
tcp-segmentation-offload: on
	tx-tcp-segmentation: on
	tx-tcp-ecn-segmentation: on
	tx-tcp-mangleid-segmentation: on
	tx-tcp6-segmentation: on
	tx-tcp-accecn-segmentation: on
generic-segmentation-offload: on
generic-receive-offload: off
large-receive-offload: off [fixed]
rx-vlan-offload: on
tx-vlan-offload: on
ntuple-filters: off [fixed]
receive-hashing: off [fixed]
highdma: on
rx-vlan-filter: off [fixed]
vlan-challenged: off [fixed]
tx-gso-robust: off [fixed]
tx-fcoe-segmentation: off [fixed]
tx-gre-segmentation: on
tx-gre-csum-segmentation: on
tx-ipxip4-segmentation: on
tx-ipxip6-segmentation: on
tx-udp_tnl-segmentation: on
tx-udp_tnl-csum-segmentation: on
tx-gso-partial: off [fixed]
tx-tunnel-remcsum-segmentation: off [fixed]
tx-sctp-segmentation: on
tx-esp-segmentation: off [fixed]
tx-udp-segmentation: on
tx-gso-list: on
tx-nocache-copy: off
loopback: off [fixed]
rx-fcs: off [fixed]
rx-all: off [fixed]
tx-vlan-stag-hw-insert: on
rx-vlan-stag-hw-parse: on
rx-vlan-stag-filter: off [fixed]
l2-fwd-offload: off [fixed]
hw-tc-offload: off [fixed]
esp-hw-offload: off [fixed]
esp-tx-csum-hw-offload: off [fixed]
rx-udp_tunnel-port-offload: off [fixed]
tls-hw-tx-offload: off [fixed]
tls-hw-rx-offload: off [fixed]
rx-gro-hw: off [fixed]
tls-hw-record: off [fixed]
rx-gro-list: off
macsec-hw-offload: off [fixed]
rx-udp-gro-forwarding: off
hsr-tag-ins-offload: off [fixed]
hsr-tag-rm-offload: off [fixed]
hsr-fwd-offload: off [fixed]
hsr-dup-offload: off [fixed]
`);

/** `ethtool -n va` on a veth (recorded here): no classifier at all, exit 1. */
export const VETH_LIST = failed(
  1,
  'Cannot get RX rings: Operation not supported\nrxclass: Cannot get RX class rule count: Operation not supported\nRX classification rule retrieval failed\n',
);

/** `ethtool -N va flow-type udp4 dst-port 4791 action 0` on a veth (recorded here). */
export const VETH_INSERT = failed(1, 'rxclass: Cannot get RX class rule count: Operation not supported\nCannot insert classification rule\n');

/** `ethtool -K va ntuple on` run as uid 65534 (recorded here with setpriv): ethtool's netlink path, exit 92. */
export const NOT_ROOT_FEATURE_CHANGE = failed(92, 'netlink error: Operation not permitted\n');

/**
 * `ethtool -k eth0` on a NIC whose ntuple filters can be turned on (packagecloud's blog "Monitoring
 * and Tuning the Linux Networking Stack: Receiving Data", as quoted there, "..." included).
 */
export const CHANGEABLE_FEATURES = ok('Offload parameters for eth0:\n...\nntuple-filters: off\nreceive-hashing: on\n');

/** `ethtool -k enp94s0f1` as a blog on multicast steering quotes it (grep -E "ntuple|rfs"): ntuple on. */
export const NTUPLE_ON_FEATURES = ok('ntuple-filters: on\n');

/** `ethtool -K IF ntuple on|off` that worked: ethtool prints nothing. */
export const FEATURE_CHANGED = ok('');

/**
 * `ethtool -n eth0` on a Tigon3 (tg3, BCM57766): 4 rings by RSS, no rule classifier (netdev,
 * 2 Oct 2019, "Re: Gentoo Linux 5.x - Tigon3"; the ring count goes to stdout, the errors to stderr).
 */
export const TG3_LIST = failed(
  1,
  'rxclass: Cannot get RX class rule count: Operation not supported\nRX classification rule retrieval failed\n',
  '4 RX rings available\n',
);

/** `ethtool -u ens9` before any rule (netdev, 26 Nov 2025, "[PATCH net-next v13 00/12] virtio_net: Add ethtool flow rules support"). */
export const EMPTY_LIST = ok('4 RX rings available\nTotal 0 rules\n\n');

/** `ethtool -u ens9` after the patch set's example rules (same mail, verbatim, 8-space indents as mailed). */
export const VIRTIO_LIST = ok(`4 RX rings available
Total 5 rules

Filter: 0
        Flow Type: Raw Ethernet
        Src MAC addr: 1C:34:DA:4A:33:DD mask: 00:00:00:00:00:00
        Dest MAC addr: 00:00:00:00:00:00 mask: FF:FF:FF:FF:FF:FF
        Ethertype: 0x0 mask: 0xFFFF
        Action: Direct to queue 0

Filter: 1
        Rule Type: UDP over IPv4
        Src IP addr: 0.0.0.0 mask: 255.255.255.255
        Dest IP addr: 0.0.0.0 mask: 255.255.255.255
        TOS: 0x0 mask: 0xff
        Src port: 0 mask: 0xffff
        Dest port: 5001 mask: 0x0
        Action: Direct to queue 3

Filter: 2
        Rule Type: TCP over IPv6
        Src IP addr: fc00::2 mask: ::
        Dest IP addr: :: mask: ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
        Traffic Class: 0x0 mask: 0xff
        Src port: 0 mask: 0xffff
        Dest port: 5001 mask: 0x0
        Action: Direct to queue 2

Filter: 3
        Rule Type: Raw IPv4
        Src IP addr: 192.168.51.101 mask: 0.0.0.0
        Dest IP addr: 0.0.0.0 mask: 255.255.255.255
        TOS: 0x0 mask: 0xff
        Protocol: 0 mask: 0xff
        L4 bytes: 0x0 mask: 0xffffffff
        Action: Direct to queue 1

Filter: 5
        Rule Type: Raw IPv6
        Src IP addr: fc00::2 mask: ::
        Dest IP addr: :: mask: ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff
        Traffic Class: 0x0 mask: 0xff
        Protocol: 0 mask: 0xff
        L4 bytes: 0x0 mask: 0xffffffff
        Action: Drop

`);

/**
 * ixgbe (Intel X520) with one Flow Director rule, then after an XDP program was loaded: the rule
 * is gone (xdp-newbies, 5 Jun 2020, "Intel X520 looses ethtool flow-type rule the moment a BPF /
 * XDP program is loaded"; the insert printed "Added rule with ID 4093").
 */
export const IXGBE_INSERTED = ok('Added rule with ID 4093\n');
export const IXGBE_LIST = ok(`16 RX rings available
Total 1 rules

Filter: 4093
\tRule Type: UDP over IPv4
\tSrc IP addr: 0.0.0.0 mask: 255.255.255.255
\tDest IP addr: 239.0.1.1 mask: 0.0.0.0
\tTOS: 0x0 mask: 0xff
\tSrc port: 0 mask: 0xffff
\tDest port: 5500 mask: 0x0
\tVLAN EtherType: 0x0 mask: 0xffff
\tVLAN: 0x0 mask: 0xffff
\tUser-defined: 0x0 mask: 0xffffffffffffffff
\tAction: Direct to queue 0

`);
export const IXGBE_LIST_AFTER_XDP = ok('16 RX rings available\nTotal 0 rules\n');

/** An insert where ethtool's rule manager placed the rule at the end of mlx5e's 1024-entry table (netdev reports quote "Added rule with ID 1023"). */
export const ADDED_1023 = ok('Added rule with ID 1023\n');
export const ADDED_1022 = ok('Added rule with ID 1022\n');

/** An insert the driver refused with EINVAL (mlx5e, netdev, Mar 2025: "rmgr: Cannot insert RX class rule: Invalid argument"). */
export const INSERT_EINVAL = failed(1, 'rmgr: Cannot insert RX class rule: Invalid argument\nCannot insert classification rule\n');

/** `ethtool -N IF delete N` that worked: nothing printed. */
export const DELETED = ok('');

/** `ethtool -N va delete 1023` where the driver has no classifier (recorded here on a veth). */
export const VETH_DELETE = failed(1, 'rmgr: Cannot delete RX class rule: Operation not supported\nCannot delete classification rule\n');

/** A rule block as rxclass_print_nfc_rule prints it (ethtool rxclass.c), for a UDP/IPv4 rule on destination port `port` to `queue`. */
function udp4Rule(id: number, port: number, queue: number): string {
  return `Filter: ${id}\n\tRule Type: UDP over IPv4\n\tSrc IP addr: 0.0.0.0 mask: 255.255.255.255\n\tDest IP addr: 0.0.0.0 mask: 255.255.255.255\n\tTOS: 0x0 mask: 0xff\n\tSrc port: 0 mask: 0xffff\n\tDest port: ${port} mask: 0x0\n\tAction: Direct to queue ${queue}\n\n`;
}

/** The same for UDP/IPv6 (rxclass_print_ipv6_rule: "Traffic Class", IPv6 masks). */
function udp6Rule(id: number, port: number, queue: number): string {
  const all = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff';
  return `Filter: ${id}\n\tRule Type: UDP over IPv6\n\tSrc IP addr: :: mask: ${all}\n\tDest IP addr: :: mask: ${all}\n\tTraffic Class: 0x0 mask: 0xff\n\tSrc port: 0 mask: 0xffff\n\tDest port: ${port} mask: 0x0\n\tAction: Direct to queue ${queue}\n\n`;
}

/** `ethtool -n` holding the two rules --steer adds for queue `queue` (IDs 1023 and 1022), in rxclass.c's layout. */
export function steeredList(queue: number, ids: { udp4?: number; udp6?: number } = { udp4: 1023, udp6: 1022 }): CommandResult {
  const blocks = [ids.udp4 !== undefined ? udp4Rule(ids.udp4, 4791, queue) : '', ids.udp6 !== undefined ? udp6Rule(ids.udp6, 4791, queue) : ''].filter(
    (b) => b !== '',
  );
  return ok(`16 RX rings available\nTotal ${blocks.length} rules\n\n${blocks.join('')}`);
}

/** `ethtool -n` holding an administrator's rule that sends RoCE over IPv4 (or IPv6) to `queue`, in rxclass.c's layout. */
export function adminRoceList(flow: 'udp4' | 'udp6', id: number, queue: number): CommandResult {
  return ok(`16 RX rings available\nTotal 1 rules\n\n${flow === 'udp4' ? udp4Rule(id, 4791, queue) : udp6Rule(id, 4791, queue)}`);
}

/** One expected ethtool call (its arguments, space-separated) and the recorded answer. */
export type EthtoolStep = [string, CommandResult];

/**
 * --steer on a NIC with ntuple off (changeable) that takes both rules (IDs 1023, 1022) and keeps
 * them through the XDP attach: the calls of install, verify and remove, each with its answer.
 */
export function takingNic(ifname: string, queue = 0): { install: EthtoolStep[]; verify: EthtoolStep[]; remove: EthtoolStep[] } {
  return {
    install: [
      [`-k ${ifname}`, CHANGEABLE_FEATURES],
      [`-K ${ifname} ntuple on`, FEATURE_CHANGED],
      [`-n ${ifname}`, EMPTY_LIST],
      [`-N ${ifname} flow-type udp4 dst-port 4791 action ${queue}`, ADDED_1023],
      [`-N ${ifname} flow-type udp6 dst-port 4791 action ${queue}`, ADDED_1022],
    ],
    verify: [[`-n ${ifname}`, steeredList(queue)]],
    remove: [
      [`-N ${ifname} delete 1022`, DELETED],
      [`-N ${ifname} delete 1023`, DELETED],
      [`-K ${ifname} ntuple off`, FEATURE_CHANGED],
    ],
  };
}
