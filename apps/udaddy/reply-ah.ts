/**
 * The address vector of a reply to a received UD datagram, from the 40-byte GRH area in front of
 * its data, as libibverbs' ibv_init_ah_from_wc() builds it (rdma-core libibverbs/verbs.c), which
 * udaddy's server uses (create_reply_ah() → ibv_create_ah_from_wc()):
 *
 * - get_grh_header_version(): an IPv6 header (version 6 in the first nibble) unless the last 20
 *   bytes are an IPv4 header (version 4, IHL 5 and a correct header checksum); without version 6
 *   up front, an IPv4 header at byte 20 or nothing;
 * - IPv4 (set_ah_attr_by_ipv4()): destination GID = the IPv4-mapped source address, source GID =
 *   the one holding the destination address, hop limit = the TTL received, traffic class = the TOS;
 * - IPv6 (set_ah_attr_by_ipv6()): destination GID = the source GID, hop limit and traffic class
 *   from the header; flow label from the first word in both cases (set_ah_attr_generic_fields()).
 *
 * The stack writes the GRH area as rxe does (stack/responder.ts: the IPv6 header, or 20 zero
 * bytes and the IPv4 header).
 */
import type { AhAttr } from '../../stack/qp-attributes';

export const GRH_LEN = 40;

/** The one's complement sum of the 20-byte IPv4 header at `off`, with its checksum field taken as 0. */
function ipv4Checksum(b: Uint8Array, off: number): number {
  let sum = 0;
  for (let i = 0; i < 20; i += 2) if (i !== 10) sum += ((b[off + i] ?? 0) << 8) | (b[off + i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** 4 or 6 as get_grh_header_version() decides, or null when the area holds neither. */
export function grhIpVersion(grh: Uint8Array): 4 | 6 | null {
  const v6 = (grh[0] ?? 0) >>> 4 === 6;
  const v4Byte = grh[20] ?? 0;
  if (!v6) return v4Byte >>> 4 === 4 ? 4 : null;
  if ((v4Byte & 0x0f) !== 5) return 6;
  const check = ((grh[30] ?? 0) << 8) | (grh[31] ?? 0);
  return check === ipv4Checksum(grh, 20) ? 4 : 6;
}

/**
 * The reply's address vector for a datagram whose GRH area is `grh`, sent from a GID of `gids`
 * (the index of the GID the datagram was addressed to), or null when ibv_init_ah_from_wc() fails
 * (no IP header, a multicast destination, or a destination that is none of ours).
 */
export function replyAhAttr(grh: Uint8Array, gids: readonly Uint8Array[]): AhAttr | null {
  if (grh.length < GRH_LEN) return null;
  const version = grhIpVersion(grh);
  const flowLabel = (((grh[1] ?? 0) & 0x0f) << 16) | ((grh[2] ?? 0) << 8) | (grh[3] ?? 0);
  let dgid: Uint8Array;
  let ours: Uint8Array;
  let hopLimit: number;
  let trafficClass: number;
  if (version === 4) {
    const ip = grh.subarray(20, 40);
    if ((ip[16] ?? 0) >>> 4 === 0xe) return null; // IN_CLASSD: a multicast destination
    dgid = v4Mapped(ip.subarray(12, 16));
    ours = v4Mapped(ip.subarray(16, 20));
    hopLimit = ip[8] ?? 0;
    trafficClass = ip[1] ?? 0;
  } else if (version === 6) {
    if (grh[24] === 0xff) return null;
    dgid = grh.slice(8, 24);
    ours = grh.slice(24, 40);
    hopLimit = grh[7] ?? 0;
    trafficClass = (((grh[0] ?? 0) & 0x0f) << 4) | ((grh[1] ?? 0) >>> 4);
  } else {
    return null;
  }
  const sgidIndex = gids.findIndex((g) => g.length === 16 && g.every((v, i) => v === ours[i]));
  if (sgidIndex < 0) return null;
  return { dgid, sgidIndex, hopLimit, trafficClass, flowLabel };
}

function v4Mapped(a4: Uint8Array): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  g.set(a4, 12);
  return g;
}
