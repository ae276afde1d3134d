/**
 * ICMP destination unreachable answering a RoCE v2 datagram: the peer's IP stack got the UDP
 * datagram to port 4791 and no socket or RoCE device took it (IPv4 type 3, code 3 port
 * unreachable, RFC 792; IPv6 type 1, code 4 port unreachable, RFC 4443). A host with rxe or a
 * RoCE NIC consumes UDP 4791 itself and sends none; so one of these names a peer without RoCE.
 */
import { EtherType } from '../packets/ethernet';
import { ipv4ToString, ipv6ToString } from '../packets/bytes';
import { linkPayload } from './oob';

const ICMP = 1;
const ICMPV6 = 58;
const UDP = 17;

/** An ICMP unreachable quoting a UDP datagram to the RoCE port. */
export interface IcmpUnreachable {
  /** The host that sent the ICMP message (the peer without RoCE, or a router on the way). */
  from: string;
  /** The host the quoted datagram came from (the requester). */
  to: string;
  /** The quoted datagram's destination. */
  quotedDst: string;
  /** ICMP type and code (4: IPv4, 6: IPv6). */
  family: 4 | 6;
  type: number;
  code: number;
}

/** The ICMP unreachable in `data` quoting a UDP datagram to `rocePort`, or null for any other frame. */
export function icmpUnreachable(data: Uint8Array, linkType: number, rocePort: number): IcmpUnreachable | null {
  const l3 = linkPayload(data, linkType);
  if (l3 === null) return null;
  const { off, etherType } = l3;
  const end = data.byteLength;
  const u16 = (o: number): number => (((data[o] as number) << 8) | (data[o + 1] as number)) >>> 0;
  const u32 = (o: number): number => ((u16(o) << 16) | u16(o + 2)) >>> 0;
  if (etherType === EtherType.IPv4) {
    if (end - off < 20 || (data[off] as number) >>> 4 !== 4 || data[off + 9] !== ICMP) return null;
    const icmp = off + ((data[off] as number) & 0x0f) * 4;
    // 8 bytes of ICMP header, the quoted IPv4 header, then at least the UDP ports.
    if (end - icmp < 8 + 20 + 4 || data[icmp] !== 3) return null;
    const inner = icmp + 8;
    if ((data[inner] as number) >>> 4 !== 4 || data[inner + 9] !== UDP) return null;
    const udp = inner + ((data[inner] as number) & 0x0f) * 4;
    if (end - udp < 4 || u16(udp + 2) !== rocePort) return null;
    return {
      from: ipv4ToString(u32(off + 12)),
      to: ipv4ToString(u32(off + 16)),
      quotedDst: ipv4ToString(u32(inner + 16)),
      family: 4,
      type: 3,
      code: data[icmp + 1] as number,
    };
  }
  if (etherType === EtherType.IPv6) {
    if (end - off < 40 || data[off + 6] !== ICMPV6) return null;
    const icmp = off + 40;
    if (end - icmp < 8 + 40 + 4 || data[icmp] !== 1) return null;
    const inner = icmp + 8;
    if (data[inner + 6] !== UDP) return null;
    const udp = inner + 40;
    if (u16(udp + 2) !== rocePort) return null;
    return {
      from: ipv6ToString(data, off + 8),
      to: ipv6ToString(data, off + 24),
      quotedDst: ipv6ToString(data, inner + 24),
      family: 6,
      type: 1,
      code: data[icmp + 1] as number,
    };
  }
  return null;
}
