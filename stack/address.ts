/**
 * Address handles and resolved paths. A path is everything the device needs
 * to put a QP's packets on the wire: MACs, IP version and addresses, traffic
 * class, flow label, hop limit and the UDP source port.
 */
import type { AhAttr } from './qp-attributes';

export interface Path {
  srcMac: number;
  dstMac: number;
  /** 4 for an IPv4-mapped destination GID, else 6. */
  ipVersion: 4 | 6;
  srcIp: Uint8Array;
  dstIp: Uint8Array;
  trafficClass: number;
  flowLabel: number;
  hopLimit: number;
  vlan: { pcp: number; dei: number; vid: number; tpid: number } | null;
}

/** An address handle (ibv_create_ah) for UD work requests. */
export class AddressHandle {
  constructor(
    readonly attr: AhAttr,
    readonly path: Path,
  ) {}
}

/** True for an IPv4-mapped GID (::ffff:a.b.c.d). */
export function isIpv4MappedGid(gid: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (gid[i] !== 0) return false;
  return gid[10] === 0xff && gid[11] === 0xff;
}

/**
 * rxe's UDP source port for a QP pair: a 20-bit flow label from the product
 * of the two QPNs (rdma_calc_flow_label), folded into 14 bits and put in
 * 0xC000-0xFFFF (rdma_flow_label_to_udp_sport). Seen on the wire: 49441 for
 * QPNs 0x11 and 0x11... as in rxe-lab.md.
 */
export function rxeUdpSourcePort(localQpn: number, remoteQpn: number, flowLabel = 0): number {
  let fl = flowLabel & 0xfffff;
  if (fl === 0) {
    let v = BigInt(localQpn) * BigInt(remoteQpn);
    v ^= v >> 20n;
    v ^= v >> 40n;
    fl = Number(v & 0xfffffn);
  }
  const low = (fl & 0x3fff) ^ ((fl & 0xfc000) >>> 14);
  return 0xc000 | low;
}

/**
 * The GID a tool uses when none is chosen (-g / -x): the first IPv4-mapped one, as rdma-core's
 * examples are run on IPv4 RoCE v2; on an interface with IPv6 addresses only, the first that is not
 * link-local (fe80::/10, which reaches only the link); else GID 0.
 */
export function defaultGidIndex(gids: readonly Uint8Array[]): number {
  const v4 = gids.findIndex(isIpv4MappedGid);
  if (v4 >= 0) return v4;
  const global = gids.findIndex((g) => !(g[0] === 0xfe && ((g[1] ?? 0) & 0xc0) === 0x80));
  return global >= 0 ? global : 0;
}
