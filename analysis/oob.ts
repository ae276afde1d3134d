/**
 * Out-of-band connection set-up seen in a capture: a TCP connection request
 * (SYN without ACK) between two hosts. RC QP pairs are set up by exchanging
 * QPNs and start PSNs out of band (rdma-core's pingpong tools and perftest
 * over TCP, RDMA CM over the GSI QP); a fresh exchange between two hosts
 * after a conversation went quiet tells the conversation table that frames
 * for the same QPNs may belong to a new connection (see conversations.ts).
 * RDMA CM MADs are RoCE (UD to QP 1) and are recognised by the analyzer.
 */
import { parseEthernet, ethernetHeaderLen, EtherType } from '../packets/ethernet';
import { LinkType } from '../packets/pcap';
import { SLL_LEN } from '../packets/sll';
import { SLL2_LEN } from '../packets/sll2';
import { ipv4ToString, ipv6ToString } from '../packets/bytes';

const TCP = 6;
const SYN = 0x02;
const ACK = 0x10;

/** Where the IP header of a frame with link type `linkType` starts, and its EtherType; null when the link header is cut or unknown. */
export function linkPayload(data: Uint8Array, linkType: number): { off: number; etherType: number } | null {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const end = data.byteLength;
  try {
    switch (linkType) {
      case LinkType.Ethernet: {
        const eth = parseEthernet(view, 0, end);
        return { off: ethernetHeaderLen(eth), etherType: eth.etherType };
      }
      case LinkType.LinuxSll:
        return end < SLL_LEN ? null : { off: SLL_LEN, etherType: view.getUint16(14) };
      case LinkType.LinuxSll2:
        return end < SLL2_LEN ? null : { off: SLL2_LEN, etherType: view.getUint16(0) };
      case LinkType.Raw:
      case LinkType.Ipv4:
      case LinkType.Ipv6: {
        if (end < 1) return null;
        const v = (data[0] as number) >>> 4;
        return { off: 0, etherType: v === 4 ? EtherType.IPv4 : v === 6 ? EtherType.IPv6 : -1 };
      }
      default:
        return null;
    }
  } catch {
    return null;
  }
}

/** The two addresses of a TCP SYN (no ACK) in `data`, or null for any other frame. */
export function tcpConnectionRequest(data: Uint8Array, linkType: number): { src: string; dst: string } | null {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const end = data.byteLength;
  const l3 = linkPayload(data, linkType);
  if (l3 === null) return null;
  const { off, etherType } = l3;
  try {
    let tcpOff: number;
    let src: string;
    let dst: string;
    if (etherType === EtherType.IPv4) {
      if (end - off < 20 || (data[off] as number) >>> 4 !== 4 || data[off + 9] !== TCP) return null;
      if ((view.getUint16(off + 6) & 0x1fff) !== 0) return null; // a later fragment
      tcpOff = off + ((data[off] as number) & 0x0f) * 4;
      src = ipv4ToString(view.getUint32(off + 12));
      dst = ipv4ToString(view.getUint32(off + 16));
    } else if (etherType === EtherType.IPv6) {
      if (end - off < 40 || data[off + 6] !== TCP) return null;
      tcpOff = off + 40;
      src = ipv6ToString(data, off + 8);
      dst = ipv6ToString(data, off + 24);
    } else {
      return null;
    }
    if (end - tcpOff < 14) return null;
    const flags = data[tcpOff + 13] as number;
    return (flags & (SYN | ACK)) === SYN ? { src, dst } : null;
  } catch {
    return null;
  }
}

/** What one side of a perftest exchange announced: its QPN and start PSN, from the key message's text. */
export interface PerftestAnnouncement {
  src: string;
  dst: string;
  qpn: number;
  psn: number;
}

/**
 * perftest's key message (perftest_communication.c, KEY_PRINT_FMT and its GID forms): LID, out_reads,
 * QPN, PSN, R_Key and VA as "%04x:%04x:%06x:%06x:%08x:%016llx", then more fields. Only the start
 * of a TCP segment's payload is read, and only when the colons stand where the format puts them.
 */
const PERFTEST_KEY = /^[0-9a-f]{4}:[0-9a-f]{4}:([0-9a-f]{6}):([0-9a-f]{6}):[0-9a-f]{8}:[0-9a-f]{16}:/;
const PERFTEST_KEY_LEN = 50;

/** The QPN and PSN a perftest key message in `data` (a TCP segment) announces, or null for any other frame. */
export function perftestAnnouncement(data: Uint8Array, linkType: number): PerftestAnnouncement | null {
  const l3 = linkPayload(data, linkType);
  if (l3 === null) return null;
  const { off, etherType } = l3;
  let end = data.byteLength;
  const u16 = (o: number): number => ((data[o] as number) << 8) | (data[o + 1] as number);
  let tcpOff: number;
  let src: string;
  let dst: string;
  if (etherType === EtherType.IPv4) {
    if (end - off < 20 || (data[off] as number) >>> 4 !== 4 || data[off + 9] !== TCP) return null;
    end = Math.min(end, off + u16(off + 2)); // the IP length, not the Ethernet padding
    tcpOff = off + ((data[off] as number) & 0x0f) * 4;
    src = ipv4ToString((((u16(off + 12) << 16) | u16(off + 14)) >>> 0) as number);
    dst = ipv4ToString((((u16(off + 16) << 16) | u16(off + 18)) >>> 0) as number);
  } else if (etherType === EtherType.IPv6) {
    if (end - off < 40 || data[off + 6] !== TCP) return null;
    end = Math.min(end, off + 40 + u16(off + 4));
    tcpOff = off + 40;
    src = ipv6ToString(data, off + 8);
    dst = ipv6ToString(data, off + 24);
  } else return null;
  if (end - tcpOff < 20) return null;
  const p = tcpOff + ((data[tcpOff + 12] as number) >>> 4) * 4;
  if (end - p < PERFTEST_KEY_LEN || data[p + 4] !== 0x3a || data[p + 9] !== 0x3a || data[p + 16] !== 0x3a) return null;
  let text = '';
  for (let i = 0; i < PERFTEST_KEY_LEN; i++) text += String.fromCharCode(data[p + i] as number);
  const m = PERFTEST_KEY.exec(text);
  if (m === null) return null;
  return { src, dst, qpn: parseInt(m[1] as string, 16), psn: parseInt(m[2] as string, 16) };
}
