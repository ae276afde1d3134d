/**
 * IPv4 header (RFC 791), with the header checksum (RFC 1071).
 * Options are kept as raw bytes. RoCE v2 uses protocol 17 (UDP).
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkUint } from './bytes';

export const IPV4_MIN_LEN = 20;
const NO_OPTIONS = new Uint8Array(0);
export const IpProtocol = { UDP: 17, TCP: 6, ICMP: 1 } as const;

export const OFF = Object.freeze({
  VER_IHL: 0,
  TOS: 1,
  TOTAL_LEN: 2,
  ID: 4,
  FLAGS_FRAG: 6,
  TTL: 8,
  PROTOCOL: 9,
  CHECKSUM: 10,
  SRC: 12,
  DST: 16,
  OPTIONS: 20,
});

export interface Ipv4Header {
  /** Header length in 32-bit words (5..15). */
  ihl: number;
  /** Differentiated services code point (6 bits). */
  dscp: number;
  /** ECN field (2 bits): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE. */
  ecn: number;
  totalLength: number;
  identification: number;
  dontFragment: boolean;
  moreFragments: boolean;
  fragmentOffset: number;
  ttl: number;
  protocol: number;
  checksum: number;
  /** Source address as an unsigned 32-bit integer. */
  src: number;
  /** Destination address as an unsigned 32-bit integer. */
  dst: number;
  /** Option bytes ((ihl - 5) * 4 of them). */
  options: Uint8Array;
}

export function ipv4HeaderLen(h: Ipv4Header): number {
  return h.ihl * 4;
}

/** The RFC 1071 checksum of `len` header bytes at `off` (with the checksum field as it is). */
export function ipv4Checksum(view: DataView, off: number, len: number): number {
  let sum = 0;
  for (let i = 0; i + 1 < len; i += 2) sum += view.getUint16(off + i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/**
 * Parses the header. Throws on a version other than 4, an IHL below 5, or a
 * total length shorter than the header; the checksum is reported, not enforced
 * (see `ipv4ChecksumOk`).
 */
export function parseIpv4(view: DataView, off: number, end: number = view.byteLength): Ipv4Header {
  need(end, off, IPV4_MIN_LEN, 'IPv4 header');
  const verIhl = view.getUint8(off + OFF.VER_IHL);
  if (verIhl >>> 4 !== 4) {
    throw new WireError(WireErrorCode.BadField, off, `IPv4 header has version ${verIhl >>> 4}`);
  }
  const ihl = verIhl & 0xf;
  if (ihl < 5) throw new WireError(WireErrorCode.BadLength, off, `IPv4 IHL ${ihl} is below the minimum of 5`);
  need(end, off, ihl * 4, 'IPv4 header with options');
  const totalLength = view.getUint16(off + OFF.TOTAL_LEN);
  if (totalLength < ihl * 4) {
    throw new WireError(WireErrorCode.BadLength, off + OFF.TOTAL_LEN, `IPv4 total length ${totalLength} is shorter than its ${ihl * 4}-byte header`);
  }
  const tos = view.getUint8(off + OFF.TOS);
  const ff = view.getUint16(off + OFF.FLAGS_FRAG);
  return {
    ihl,
    dscp: tos >>> 2,
    ecn: tos & 3,
    totalLength,
    identification: view.getUint16(off + OFF.ID),
    dontFragment: (ff & 0x4000) !== 0,
    moreFragments: (ff & 0x2000) !== 0,
    fragmentOffset: ff & 0x1fff,
    ttl: view.getUint8(off + OFF.TTL),
    protocol: view.getUint8(off + OFF.PROTOCOL),
    checksum: view.getUint16(off + OFF.CHECKSUM),
    src: view.getUint32(off + OFF.SRC),
    dst: view.getUint32(off + OFF.DST),
    // No options is the rule for RoCE: share one empty array instead of a view per packet.
    options: ihl === 5 ? NO_OPTIONS : new Uint8Array(view.buffer, view.byteOffset + off + OFF.OPTIONS, ihl * 4 - IPV4_MIN_LEN),
  };
}

/** True when the header checksum at `off` is correct. */
export function ipv4ChecksumOk(view: DataView, off: number, ihl: number): boolean {
  return ipv4Checksum(view, off, ihl * 4) === 0;
}

export interface Ipv4EmitOptions {
  /** Compute and write the checksum (default) instead of writing `h.checksum`. */
  computeChecksum?: boolean;
}

/** Writes the header at `off` and returns its length. */
export function emitIpv4(h: Ipv4Header, view: DataView, off: number, opts: Ipv4EmitOptions = {}): number {
  checkUint(h.ihl, 15, 'ihl');
  if (h.ihl < 5 || h.options.length !== h.ihl * 4 - IPV4_MIN_LEN) {
    throw new WireError(WireErrorCode.BadValue, 0, `ihl ${h.ihl} does not match ${h.options.length} option bytes`);
  }
  checkUint(h.dscp, 63, 'dscp');
  checkUint(h.ecn, 3, 'ecn');
  checkUint(h.totalLength, 0xffff, 'totalLength');
  checkUint(h.identification, 0xffff, 'identification');
  checkUint(h.fragmentOffset, 0x1fff, 'fragmentOffset');
  checkUint(h.ttl, 255, 'ttl');
  checkUint(h.protocol, 255, 'protocol');
  checkUint(h.checksum, 0xffff, 'checksum');
  checkUint(h.src, 0xffff_ffff, 'src');
  checkUint(h.dst, 0xffff_ffff, 'dst');
  view.setUint8(off + OFF.VER_IHL, 0x40 | h.ihl);
  view.setUint8(off + OFF.TOS, (h.dscp << 2) | h.ecn);
  view.setUint16(off + OFF.TOTAL_LEN, h.totalLength);
  view.setUint16(off + OFF.ID, h.identification);
  view.setUint16(off + OFF.FLAGS_FRAG, (h.dontFragment ? 0x4000 : 0) | (h.moreFragments ? 0x2000 : 0) | h.fragmentOffset);
  view.setUint8(off + OFF.TTL, h.ttl);
  view.setUint8(off + OFF.PROTOCOL, h.protocol);
  view.setUint16(off + OFF.CHECKSUM, h.checksum);
  view.setUint32(off + OFF.SRC, h.src);
  view.setUint32(off + OFF.DST, h.dst);
  for (let i = 0; i < h.options.length; i++) view.setUint8(off + OFF.OPTIONS + i, h.options[i] ?? 0);
  if (opts.computeChecksum !== false) {
    view.setUint16(off + OFF.CHECKSUM, 0);
    view.setUint16(off + OFF.CHECKSUM, ipv4Checksum(view, off, h.ihl * 4));
  }
  return h.ihl * 4;
}
