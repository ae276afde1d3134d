/**
 * Frame classification: from a captured or received frame to a `RocePacket`
 * with every header parsed, the payload located and the ICRC checked.
 *
 * This is rxe's `rxe_pkt_info` idea: classify once, hand the result on, and
 * never re-parse downstream. Bad input never throws out of `decodeFrame`:
 * a truncated frame, an impossible length, an unknown opcode or a bad ICRC
 * comes back as `error` (a WireError with the byte offset in the frame), with
 * every field parsed up to that point filled in.
 *
 * A frame of a capture record (`decodeAt` given its original length) that ends before its IP/UDP
 * (or GRH) lengths say is a frame the capture tool cut short, whether the record admits it (its
 * captured length is less than its original length: a snaplen) or not (some tools write the cut
 * length as the original length too). It is a truncated *capture*, not a malformed frame: every
 * header the capture holds whole is decoded, lengths are the wire's (from the IP/UDP/GRH headers),
 * `truncated` is set, `truncatedIn` says where the capture ends, and the ICRC, not captured, is
 * null (`icrcOk` null). A frame handed over on its own (`decodeFrame`, a receive path) that ends
 * early is malformed: nothing cut it but the sender or the wire.
 */
import { WireError, WireErrorCode } from './errors';
import type { TextBytes } from '../base/text-bytes';
import { bswap32, hex32, ipv4ToString, ipv6ToString } from './bytes';
import { ETH_LEN, EtherType, type EthernetHeader, parseEthernet, ethernetHeaderLen } from './ethernet';
import { type Ipv4Header, IpProtocol, ipv4ChecksumOk, parseIpv4 } from './ipv4';
import { type Ipv6Header, IPV6_LEN, parseIpv6 } from './ipv6';
import { GRH_LEN, type GrhHeader, parseGrh } from './grh';
import { ROCE_V2_PORT, UDP_LEN, type UdpHeader, parseUdp } from './udp';
import { BTH_LEN, type BthHeader, parseBth } from './bth';
import { type RethHeader, parseReth } from './reth';
import { type AethHeader, parseAeth } from './aeth';
import { type AtomicEthHeader, parseAtomicEth } from './atomic-eth';
import { type AtomicAckEthHeader, parseAtomicAckEth } from './atomic-ack-eth';
import { type ImmDtHeader, parseImmDt } from './immdt';
import { type IethHeader, parseIeth } from './ieth';
import { type DethHeader, parseDeth } from './deth';
import { type XrcEthHeader, parseXrcEth } from './xrceth';
import { type RdEthHeader, parseRdEth } from './rdeth';
import { type FethHeader, parseFeth } from './feth';
import { type CnpReserved, CNP_RESERVED_LEN, parseCnpReserved } from './cnp';
import { XRCETH_LEN } from './xrceth';
import { RDETH_LEN } from './rdeth';
import { DETH_LEN } from './deth';
import { FETH_LEN } from './feth';
import { RETH_LEN } from './reth';
import { ATOMIC_ETH_LEN } from './atomic-eth';
import { AETH_LEN } from './aeth';
import { ATOMIC_ACK_ETH_LEN } from './atomic-ack-eth';
import { IMMDT_LEN } from './immdt';
import { IETH_LEN } from './ieth';
import { Hdr, type OpcodeInfo, OPCODES, PayloadRule } from './opcodes';
import { LinkType } from './pcap';
import { parseSll, SLL_LEN } from './sll';
import { parseSll2, SLL2_LEN } from './sll2';
import { icrcV1, icrcV2, readIcrc } from './icrc';
import { type DecodedMad, carriesMad, decodeMad } from './mad-payload';

/** Bytes of the invariant CRC that ends every RoCE packet (IBTA §7.8.1). */
export const ICRC_LEN = 4;
/** Path MTUs a FIRST or MIDDLE packet's payload may have (IBTA vol. 1 §9.7.3.1: exactly one PMTU). */
export const PATH_MTUS: readonly number[] = Object.freeze([256, 512, 1024, 2048, 4096]);

/** How `decodeFrame` reads a frame: the RoCE v2 UDP port, whether to check the ICRC, and the like. */
export interface DecodeOptions {
  /** UDP destination port that means RoCE v2 (default 4791). */
  rocePort?: number;
  /** Check the ICRC (default true). */
  verifyIcrc?: boolean;
  /**
   * The routine that computes a RoCE v2 frame's ICRC for the check, in place of `icrcV2` of
   * packets/icrc.ts; it must return the same values and throw the same errors. A composition root
   * passes the native addon's (`nativeIcrcV2` in nic-driver/native-binding.ts) when it is built.
   */
  icrcV2?: ((frame: Uint8Array, ipOff: number, end: number) => number) | undefined;
  /**
   * Transport only (the stack's receive path): an untagged Ethernet frame with IPv4 (no options)
   * or IPv6 is decoded without building its Ethernet, IP and UDP header objects (`eth`, `ipv4`,
   * `ipv6`, `udp` and `ipChecksumOk` stay null; `l3Off` still locates the IP header). Any other
   * frame is decoded in full. Same verdicts and transport fields either way.
   */
  lean?: boolean;
  /**
   * With `lean`: the IP and UDP header objects are built after all (`ipv4` or `ipv6`, and `udp`),
   * while `eth` and `ipChecksumOk` stay null (a printer of summary lines, which shows addresses and
   * ports but neither the Ethernet header nor the IP checksum).
   */
  leanWithIp?: boolean;
}

/** A decoded RoCE frame: every header found (null when absent), the payload range, the ICRC and whether it checks, and the first problem met, if any. */
export interface RocePacket {
  roce: true;
  version: 1 | 2;
  eth: EthernetHeader | null;
  ipv4: Ipv4Header | null;
  ipv6: Ipv6Header | null;
  grh: GrhHeader | null;
  udp: UdpHeader | null;
  /** IPv4 header checksum status (null without IPv4). */
  ipChecksumOk: boolean | null;
  /** Offset of the IP header (v2) or GRH (v1) in the frame. */
  l3Off: number;
  /** Offset of the BTH in the frame, or -1 when the frame ends before it. */
  bthOff: number;
  bth: BthHeader | null;
  info: OpcodeInfo | undefined;
  reth: RethHeader | null;
  aeth: AethHeader | null;
  atomicEth: AtomicEthHeader | null;
  atomicAckEth: AtomicAckEthHeader | null;
  immDt: ImmDtHeader | null;
  ieth: IethHeader | null;
  deth: DethHeader | null;
  xrcEth: XrcEthHeader | null;
  rdEth: RdEthHeader | null;
  feth: FethHeader | null;
  cnp: CnpReserved | null;
  /** Payload offset in the frame and its length without pad bytes (0 when unknown). */
  payloadOff: number;
  payloadLength: number;
  /**
   * True when the capture kept only the start of the frame (the frame ends before its IP/UDP or GRH
   * lengths say; the record's captured length may or may not be less than its original length):
   * the lengths above are the frame's on the wire, the ICRC and part of the payload were not captured.
   */
  truncated: boolean;
  /**
   * With `truncated`: the first part the capture does not hold whole. A header ('BTH', 'RETH', ...):
   * the headers from it on are null, and `error` is a ROCE_ERR_TRUNCATED that says where the
   * capture ends (`isCaptureCut`); 'payload' or 'ICRC': every header is whole. Null when the frame
   * is whole, and when a fault of the frame's own lengths stopped decoding before the cut.
   */
  truncatedIn: TruncatedPart | null;
  /** Payload bytes present in the captured frame (= payloadLength unless `truncated`). */
  payloadCaptured: number;
  /** Offset of the ICRC in the frame (-1 when the frame ends before it). */
  icrcOff: number;
  /** The ICRC as carried (least-significant byte first on the wire), or null (also when not captured). */
  icrc: number | null;
  /** The ICRC the contents call for, or null when not computed. */
  icrcExpected: number | null;
  icrcOk: boolean | null;
  /**
   * True when the only thing wrong is the opcode's payload rule (a FIRST that
   * is not one path MTU, an ACK with data...): every header parsed, and a
   * responder may want to see the packet to NAK it as IBTA says.
   */
  payloadRuleBroken: boolean;
  error: WireError | null;
  /**
   * The MAD of a datagram to the GSI (UD SEND ONLY to QP 1 with Q_Key 0x80010000):
   * common header, and the CM message for the CM class (mad-payload.ts). Null for
   * every other packet, and when the MAD is malformed (then `madError` says why).
   */
  mad: DecodedMad | null;
  /**
   * Why the MAD of a GSI datagram could not be read (wrong length, bad base version),
   * with its offset in the frame. Kept apart from `error`: the transport delivered the
   * packet correctly, and what to do with a bad MAD is the GSI's business.
   */
  madError: WireError | null;
}

/** The parts of a RoCE packet a capture can end inside, in frame order ('GRH' for RoCE v1). */
export type TruncatedPart =
  | 'GRH'
  | 'BTH'
  | 'XRCETH'
  | 'RDETH'
  | 'DETH'
  | 'FETH'
  | 'RETH'
  | 'AtomicETH'
  | 'AETH'
  | 'AtomicAckETH'
  | 'ImmDt'
  | 'IETH'
  | 'CNP'
  | 'payload'
  | 'ICRC';

/** True for a header among the parts: a capture that ends inside it leaves the headers after it undecoded. */
export function isHeaderPart(part: TruncatedPart | null): boolean {
  return part !== null && part !== 'payload' && part !== 'ICRC';
}

/**
 * True when `p.error` says only where the capture ended (inside a header: `truncatedIn`), not a
 * fault of the frame: a frame cut short by the capture is not malformed. The decoder checks the
 * frame's own lengths, opcode, pad and payload rule first, and records the cut only when they
 * are right, so a ROCE_ERR_TRUNCATED with a header in `truncatedIn` is always the cut.
 */
export function isCaptureCut(p: RocePacket): boolean {
  return p.error !== null && p.error.code === WireErrorCode.Truncated && isHeaderPart(p.truncatedIn);
}

/** The error that makes `p` malformed (its ICRC bad included), or null: `error` unless it is only the capture's cut. */
export function frameFault(p: RocePacket): WireError | null {
  return p.error === null || isCaptureCut(p) ? null : p.error;
}

/** A frame that is not RoCE (not UDP to the RoCE port, not the RoCE v1 EtherType). */
export interface NotRoce {
  roce: false;
}

/** What `decodeFrame` returns: test `roce` to tell the two apart. */
export type DecodedFrame = RocePacket | NotRoce;

const NOT_ROCE: NotRoce = Object.freeze({ roce: false });

function blank(version: 1 | 2): RocePacket {
  return {
    roce: true,
    version,
    eth: null,
    ipv4: null,
    ipv6: null,
    grh: null,
    udp: null,
    ipChecksumOk: null,
    l3Off: -1,
    bthOff: -1,
    bth: null,
    info: undefined,
    reth: null,
    aeth: null,
    atomicEth: null,
    atomicAckEth: null,
    immDt: null,
    ieth: null,
    deth: null,
    xrcEth: null,
    rdEth: null,
    feth: null,
    cnp: null,
    payloadOff: -1,
    payloadLength: 0,
    truncated: false,
    truncatedIn: null,
    payloadCaptured: 0,
    icrcOff: -1,
    icrc: null,
    icrcExpected: null,
    icrcOk: null,
    payloadRuleBroken: false,
    error: null,
    mad: null,
    madError: null,
  };
}

/** Where the network layer starts, by link type; null when the frame carries no IP/GRH we know. */
function findL3(view: DataView, start: number, end: number, linkType: number): { off: number; etherType: number; eth: EthernetHeader | null } | null {
  switch (linkType) {
    case LinkType.Ethernet: {
      const eth = parseEthernet(view, start, end);
      return { off: start + ethernetHeaderLen(eth), etherType: eth.etherType, eth };
    }
    case LinkType.LinuxSll: {
      const h = parseSll(view, start, end);
      return { off: start + SLL_LEN, etherType: h.protocol, eth: null };
    }
    case LinkType.LinuxSll2: {
      const h = parseSll2(view, start, end);
      return { off: start + SLL2_LEN, etherType: h.protocol, eth: null };
    }
    case LinkType.Raw:
    case LinkType.Ipv4:
    case LinkType.Ipv6: {
      if (end <= start) return null;
      const v = view.getUint8(start) >>> 4;
      if (v === 4) return { off: start, etherType: EtherType.IPv4, eth: null };
      if (v === 6) return { off: start, etherType: EtherType.IPv6, eth: null };
      return null;
    }
    case LinkType.Null: {
      if (end - start < 4) return null;
      // BSD loopback: a 4-byte address family in the capturing host's byte order.
      const fam = view.getUint32(start, true) <= 0xffff ? view.getUint32(start, true) : view.getUint32(start);
      if (fam === 2) return { off: start + 4, etherType: EtherType.IPv4, eth: null };
      if (fam === 10 || fam === 24 || fam === 28 || fam === 30) return { off: start + 4, etherType: EtherType.IPv6, eth: null };
      return null;
    }
    default:
      return null;
  }
}

/**
 * Decodes the frame `bytes[start, end)` (offsets into `bytes`, read through
 * `view`, which must cover the same memory as `bytes`). Offsets in the result
 * and in its error are relative to `start`. `wireLen`, a capture record's original length, says
 * the frame comes from a capture: one that ends before its IP/UDP or GRH lengths say was cut by
 * the capture tool (`truncated`), whatever `wireLen` is (tools that cut frames without saying so
 * write the cut length there). Without it the frame is taken as received: ending early is a fault.
 */
export function decodeAt(
  view: DataView,
  bytes: Uint8Array,
  start: number,
  end: number,
  linkType: number,
  opts: DecodeOptions = {},
  wireLen?: number,
): DecodedFrame {
  const rocePort = opts.rocePort ?? ROCE_V2_PORT;
  const captured = wireLen !== undefined;
  if (opts.lean === true && linkType === LinkType.Ethernet) {
    const p = decodeLean(view, bytes, start, end, rocePort, opts);
    if (p !== null) return p;
  }
  let l3: ReturnType<typeof findL3>;
  try {
    l3 = findL3(view, start, end, linkType);
  } catch {
    return NOT_ROCE; // a frame too short for its link header carries no RoCE
  }
  if (l3 === null) return NOT_ROCE;

  let p: RocePacket;
  let udpOff = 0;
  let ipEnd = 0;
  try {
    if (l3.etherType === EtherType.RoCEv1) {
      p = blank(1);
      p.eth = l3.eth;
      p.l3Off = l3.off - start;
      decodeV1(view, bytes, start, l3.off, end, captured, p, opts);
      return p;
    }
    // RoCE v2: IPv4 or IPv6, then UDP to the RoCE port.
    let ipv4: Ipv4Header | null = null;
    let ipv6: Ipv6Header | null = null;
    if (l3.etherType === EtherType.IPv4) {
      if (end - l3.off < 20 || view.getUint8(l3.off) >>> 4 !== 4) return NOT_ROCE;
      ipv4 = parseIpv4(view, l3.off, end);
      if (ipv4.protocol !== IpProtocol.UDP || ipv4.fragmentOffset !== 0 || ipv4.moreFragments) return NOT_ROCE;
      udpOff = l3.off + ipv4.ihl * 4;
      ipEnd = l3.off + ipv4.totalLength;
    } else if (l3.etherType === EtherType.IPv6) {
      if (end - l3.off < IPV6_LEN || view.getUint8(l3.off) >>> 4 !== 6) return NOT_ROCE;
      ipv6 = parseIpv6(view, l3.off, end);
      if (ipv6.nextHeader !== IpProtocol.UDP) return NOT_ROCE;
      udpOff = l3.off + IPV6_LEN;
      ipEnd = udpOff + ipv6.payloadLength;
    } else {
      return NOT_ROCE;
    }
    if (end - udpOff < UDP_LEN) return NOT_ROCE;
    if (view.getUint16(udpOff + 2) !== rocePort) return NOT_ROCE;
    p = blank(2);
    p.eth = l3.eth;
    p.l3Off = l3.off - start;
    p.ipv4 = ipv4;
    p.ipv6 = ipv6;
    if (ipv4 !== null) p.ipChecksumOk = ipv4ChecksumOk(view, l3.off, ipv4.ihl);
  } catch (e) {
    if (e instanceof WireError) return brokenIpRoce(view, l3, end, start, rocePort, e);
    throw e;
  }
  try {
    const udp = parseUdp(view, udpOff, end);
    p.udp = udp;
    const udpEnd = udpOff + udp.length;
    if (udpEnd > ipEnd) {
      throw new WireError(WireErrorCode.BadLength, udpOff + 4, `UDP length ${udp.length} runs past the IP packet (${ipEnd - udpOff} bytes left)`);
    }
    if (udpEnd > end && !captured) {
      throw new WireError(WireErrorCode.Truncated, end, `frame ends ${udpEnd - end} bytes before the end of its UDP datagram`);
    }
    decodeTransport(view, bytes, start, udpOff + UDP_LEN, udpEnd, Math.min(end, udpEnd), p, opts, 2);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    p.error = rebase(e, start);
  }
  return p;
}

/**
 * The common frame read in place: untagged Ethernet, IPv4 without options or IPv6, UDP to the RoCE
 * port, lengths consistent. Returns null for anything else (the full decoder then gives the verdict).
 */
function decodeLean(view: DataView, bytes: Uint8Array, start: number, end: number, rocePort: number, opts: DecodeOptions): RocePacket | null {
  const l3 = start + ETH_LEN;
  let udpOff: number;
  let ipEnd: number;
  if (end - l3 < 20 + UDP_LEN) return null;
  const type = view.getUint16(start + 12);
  if (type === EtherType.IPv4) {
    // Version 4, IHL 5, UDP, not a fragment (flags other than DF and the offset are zero).
    if (view.getUint8(l3) !== 0x45 || view.getUint8(l3 + 9) !== IpProtocol.UDP || (view.getUint16(l3 + 6) & 0xbfff) !== 0) return null;
    udpOff = l3 + 20;
    ipEnd = l3 + view.getUint16(l3 + 2);
    if (ipEnd < udpOff) return null;
  } else if (type === EtherType.IPv6) {
    if (end - l3 < IPV6_LEN + UDP_LEN || view.getUint8(l3) >>> 4 !== 6 || view.getUint8(l3 + 6) !== IpProtocol.UDP) return null;
    udpOff = l3 + IPV6_LEN;
    ipEnd = udpOff + view.getUint16(l3 + 4);
  } else {
    return null;
  }
  if (view.getUint16(udpOff + 2) !== rocePort) return null;
  const udpEnd = udpOff + view.getUint16(udpOff + 4);
  if (udpEnd < udpOff + UDP_LEN || udpEnd > ipEnd || udpEnd > end) return null;
  const p = blank(2);
  p.l3Off = ETH_LEN;
  if (opts.leanWithIp === true) {
    // The checks above are those the parsers make: these cannot throw.
    if (type === EtherType.IPv4) p.ipv4 = parseIpv4(view, l3, end);
    else p.ipv6 = parseIpv6(view, l3, end);
    p.udp = parseUdp(view, udpOff, end);
  }
  try {
    decodeTransport(view, bytes, start, udpOff + UDP_LEN, udpEnd, udpEnd, p, opts, 2);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    p.error = rebase(e, start);
  }
  return p;
}

function decodeV1(view: DataView, bytes: Uint8Array, start: number, grhOff: number, end: number, captured: boolean, p: RocePacket, opts: DecodeOptions): void {
  if (captured && end - grhOff < GRH_LEN) {
    // The EtherType says RoCE v1; the capture ends inside the GRH.
    p.truncated = true;
    p.truncatedIn = 'GRH';
    p.error = new WireError(
      WireErrorCode.Truncated,
      end - start,
      `the capture ends inside the GRH, after ${Math.max(0, end - grhOff)} of its ${GRH_LEN} bytes`,
    );
    return;
  }
  try {
    const grh = parseGrh(view, grhOff, end);
    p.grh = grh;
    const pktEnd = grhOff + GRH_LEN + grh.payloadLength;
    if (pktEnd > end && !captured) {
      throw new WireError(WireErrorCode.Truncated, end, `frame ends ${pktEnd - end} bytes before the end given by the GRH payload length`);
    }
    decodeTransport(view, bytes, start, grhOff + GRH_LEN, pktEnd, Math.min(end, pktEnd), p, opts, 1);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    p.error = rebase(e, start);
  }
}

/**
 * An IP header the parser refused (an IPv4 IHL below 5, a total length shorter than the header, an
 * IPv6 header cut short): when the bytes where UDP would start still name UDP and the RoCE port, the
 * frame is RoCE v2 with a broken IP header, which is malformed (Wireshark's "bogus IPv4 header
 * length"), not "not RoCE". Anything else stays not RoCE.
 */
function brokenIpRoce(
  view: DataView,
  l3: { off: number; eth: EthernetHeader | null },
  end: number,
  start: number,
  rocePort: number,
  e: WireError,
): DecodedFrame {
  const v4 = view.getUint8(l3.off) >>> 4 === 4;
  const protoAt = l3.off + (v4 ? 9 : 6);
  const udpAt = l3.off + (v4 ? Math.max(20, (view.getUint8(l3.off) & 0xf) * 4) : IPV6_LEN);
  if (protoAt >= end || view.getUint8(protoAt) !== IpProtocol.UDP || udpAt + UDP_LEN > end || view.getUint16(udpAt + 2) !== rocePort) return NOT_ROCE;
  const p = blank(2);
  p.eth = l3.eth;
  p.l3Off = l3.off - start;
  p.error = rebase(e, start);
  return p;
}

/** A WireError thrown with an absolute offset, moved to be relative to the frame start. */
function rebase(e: WireError, start: number): WireError {
  if (start === 0) return e;
  return new WireError(e.code, e.offset - start, e.reason);
}

/** Extension headers in the order they follow the BTH, with their lengths and names. */
const EXT_HEADERS: readonly { hdr: number; key: keyof OpcodeInfo['offsets']; len: number; name: TruncatedPart }[] = [
  { hdr: Hdr.XRCETH, key: 'XRCETH', len: XRCETH_LEN, name: 'XRCETH' },
  { hdr: Hdr.RDETH, key: 'RDETH', len: RDETH_LEN, name: 'RDETH' },
  { hdr: Hdr.DETH, key: 'DETH', len: DETH_LEN, name: 'DETH' },
  { hdr: Hdr.FETH, key: 'FETH', len: FETH_LEN, name: 'FETH' },
  { hdr: Hdr.RETH, key: 'RETH', len: RETH_LEN, name: 'RETH' },
  { hdr: Hdr.ATOMIC_ETH, key: 'ATOMIC_ETH', len: ATOMIC_ETH_LEN, name: 'AtomicETH' },
  { hdr: Hdr.AETH, key: 'AETH', len: AETH_LEN, name: 'AETH' },
  { hdr: Hdr.ATOMIC_ACK_ETH, key: 'ATOMIC_ACK_ETH', len: ATOMIC_ACK_ETH_LEN, name: 'AtomicAckETH' },
  { hdr: Hdr.IMMDT, key: 'IMMDT', len: IMMDT_LEN, name: 'ImmDt' },
  { hdr: Hdr.IETH, key: 'IETH', len: IETH_LEN, name: 'IETH' },
  { hdr: Hdr.CNP, key: 'CNP', len: CNP_RESERVED_LEN, name: 'CNP' },
];

/** An extension header an opcode carries: which, its offset from the BTH, its length and its name. */
interface ExtPlace {
  hdr: number;
  off: number;
  len: number;
  name: TruncatedPart;
}

/** Per opcode of the table, the extension headers it carries, in order: the decoder visits only those. */
const EXT_PLACES: readonly (readonly ExtPlace[])[] = OPCODES.map((info) =>
  info === undefined
    ? []
    : EXT_HEADERS.filter((x) => (info.hdrs & x.hdr) !== 0).map((x) => ({ hdr: x.hdr, off: info.offsets[x.key] ?? 0, len: x.len, name: x.name })),
);

/** Parses one extension header at `off` into `p`. */
function parseExtension(view: DataView, hdr: number, off: number, p: RocePacket): void {
  switch (hdr) {
    case Hdr.XRCETH:
      p.xrcEth = parseXrcEth(view, off);
      return;
    case Hdr.RDETH:
      p.rdEth = parseRdEth(view, off);
      return;
    case Hdr.DETH:
      p.deth = parseDeth(view, off);
      return;
    case Hdr.FETH:
      p.feth = parseFeth(view, off);
      return;
    case Hdr.RETH:
      p.reth = parseReth(view, off);
      return;
    case Hdr.ATOMIC_ETH:
      p.atomicEth = parseAtomicEth(view, off);
      return;
    case Hdr.AETH:
      p.aeth = parseAeth(view, off);
      return;
    case Hdr.ATOMIC_ACK_ETH:
      p.atomicAckEth = parseAtomicAckEth(view, off);
      return;
    case Hdr.IMMDT:
      p.immDt = parseImmDt(view, off);
      return;
    case Hdr.IETH:
      p.ieth = parseIeth(view, off);
      return;
    case Hdr.CNP:
      p.cnp = parseCnpReserved(view, off);
      return;
  }
}

/**
 * Parses BTH, extension headers, payload and ICRC in `[bthOff, pktEnd)`; fills `p`. The capture
 * holds the bytes up to `capEnd` (< pktEnd for a frame the capture cut short).
 */
function decodeTransport(
  view: DataView,
  bytes: Uint8Array,
  start: number,
  bthOff: number,
  pktEnd: number,
  capEnd: number,
  p: RocePacket,
  opts: DecodeOptions,
  version: 1 | 2,
): void {
  const cut = capEnd < pktEnd;
  p.truncated = cut;
  p.bthOff = bthOff - start;
  // A cut is recorded without a throw, as the faults a whole capture may have at every frame are
  // (below): a capture tool that cuts every frame makes it the common case.
  if (cut && capEnd < bthOff + BTH_LEN && pktEnd >= bthOff + BTH_LEN + ICRC_LEN) {
    p.truncatedIn = 'BTH';
    p.error = new WireError(
      WireErrorCode.Truncated,
      capEnd - start,
      `the capture ends inside the BTH, after ${Math.max(0, capEnd - bthOff)} of its ${BTH_LEN} bytes`,
    );
    return;
  }
  let cutHeader: ExtPlace | null = null;
  try {
    const icrcOff = pktEnd - ICRC_LEN;
    const bth = parseBth(view, bthOff, capEnd);
    p.bth = bth;
    if (icrcOff < bthOff + BTH_LEN) {
      throw new WireError(WireErrorCode.BadLength, bthOff, `packet ends ${bthOff + BTH_LEN + ICRC_LEN - pktEnd} bytes too early for a BTH and an ICRC`);
    }
    // A truncated capture did not keep the ICRC: it stays null, neither good nor bad.
    if (!cut) {
      p.icrcOff = icrcOff - start;
      p.icrc = readIcrc(bytes, icrcOff);
      if (opts.verifyIcrc !== false) {
        p.icrcExpected = version === 2 ? (opts.icrcV2 ?? icrcV2)(bytes, p.l3Off + start, icrcOff) : icrcV1(bytes, p.l3Off + start, icrcOff);
        p.icrcOk = p.icrcExpected === p.icrc;
      }
    }
    const info = OPCODES[bth.opcode];
    p.info = info;
    if (info === undefined) {
      p.payloadOff = bthOff + BTH_LEN - start;
      p.payloadLength = Math.max(0, icrcOff - bthOff - BTH_LEN - bth.padCount);
      p.payloadCaptured = Math.max(0, Math.min(p.payloadLength, capEnd - bthOff - BTH_LEN));
      if (cut) p.truncatedIn = p.payloadCaptured < p.payloadLength ? 'payload' : 'ICRC';
      throw new WireError(WireErrorCode.UnknownOpcode, bthOff, `opcode 0x${bth.opcode.toString(16).padStart(2, '0')} is not a known transport opcode`);
    }
    const hdrEnd = bthOff + info.headerLen;
    if (hdrEnd > icrcOff) {
      throw new WireError(
        WireErrorCode.Truncated,
        icrcOff,
        `${info.name} needs ${info.headerLen - BTH_LEN} bytes of extension headers but only ${Math.max(0, icrcOff - bthOff - BTH_LEN)} precede the ICRC`,
      );
    }
    // Every extension header the capture holds whole; the first it cuts, and those after it, stay null.
    const places = EXT_PLACES[bth.opcode] ?? [];
    for (let i = 0; i < places.length; i++) {
      const x = places[i] as ExtPlace;
      const off = bthOff + x.off;
      if (off + x.len > capEnd) {
        cutHeader = x;
        break;
      }
      parseExtension(view, x.hdr, off, p);
    }
    p.payloadOff = hdrEnd - start;
    const withPad = icrcOff - hdrEnd;
    if (withPad < bth.padCount) {
      throw new WireError(WireErrorCode.BadLength, bthOff + 1, `pad count ${bth.padCount} exceeds the ${withPad} bytes between the headers and the ICRC`);
    }
    // The payload's length is the wire's (from the IP/UDP or GRH lengths), whatever the capture kept.
    p.payloadLength = withPad - bth.padCount;
    p.payloadCaptured = Math.max(0, Math.min(p.payloadLength, capEnd - hdrEnd));
    if (cut) p.truncatedIn = cutHeader !== null ? cutHeader.name : p.payloadCaptured < p.payloadLength ? 'payload' : 'ICRC';
    // The two faults a whole capture may have at every frame (a capture tool that did not keep the
    // ICRC; a payload that breaks its opcode's length rule) are recorded without a throw, with
    // the offset already relative to the frame: throwing, catching and rebasing cost about 2 µs
    // an error, more than decoding the frame.
    const broken = payloadRuleError(info, p.payloadLength, bth.padCount, bthOff - start);
    if (broken !== null) {
      p.payloadRuleBroken = true;
      p.error = broken;
    } else if (p.icrcOk === false) {
      p.error = new WireError(
        WireErrorCode.BadIcrc,
        icrcOff - start,
        `bad ICRC: frame carries ${hex32(bswap32(p.icrc ?? 0))}, contents give ${hex32(bswap32(p.icrcExpected ?? 0))} (wire byte order)`,
      );
    } else if (cutHeader !== null) {
      // Where the capture ends, after the frame's own lengths, opcode, pad and payload rule were found right (isCaptureCut).
      p.error = new WireError(
        WireErrorCode.Truncated,
        capEnd - start,
        `the capture ends inside the ${cutHeader.name} of ${info.name}, after ${capEnd - bthOff - cutHeader.off} of its ${cutHeader.len} bytes`,
      );
    }
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    p.error = rebase(e, start);
  }
  // The MAD is read once the transport has located the payload (with a bad ICRC too), when the capture holds it.
  const b = p.bth;
  if (
    b !== null &&
    p.deth !== null &&
    p.payloadOff >= 0 &&
    p.payloadCaptured === p.payloadLength &&
    (p.error === null || p.icrcOk === false) &&
    carriesMad(b.opcode, b.destQp, p.deth.qkey)
  ) {
    try {
      p.mad = decodeMad(view, start + p.payloadOff, p.payloadLength);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      p.madError = rebase(e, start);
    }
  }
}

/**
 * What is wrong with a payload of `len` bytes and `pad` pad bytes for opcode `info` by the payload
 * rules of the opcode table (IBTA vol. 1 C9-29..C9-31 for segment sizes; pad only on the last
 * packet), reported at `bthOff`; null when nothing is.
 */
function payloadRuleError(info: OpcodeInfo, len: number, pad: number, bthOff: number): WireError | null {
  switch (info.payload) {
    case PayloadRule.NONE:
      if (len === 0 && pad === 0) return null;
      return new WireError(WireErrorCode.BadLength, bthOff, `${info.name} carries no payload, but ${len} bytes and ${pad} pad bytes follow its headers`);
    case PayloadRule.FIXED:
      if (len === info.fixedPayload) return null;
      return new WireError(WireErrorCode.BadLength, bthOff, `${info.name} carries exactly ${info.fixedPayload} payload bytes, not ${len}`);
    case PayloadRule.FULL:
      if (pad === 0 && PATH_MTUS.includes(len)) return null;
      return new WireError(
        WireErrorCode.BadLength,
        bthOff,
        `${info.name} must carry exactly one path MTU (256..4096) with no pad, not ${len} bytes with pad ${pad}`,
      );
    case PayloadRule.LAST:
      if (len >= 1 && len <= 4096) return null;
      return new WireError(WireErrorCode.BadLength, bthOff, `${info.name} must carry 1..4096 payload bytes, not ${len}`);
    case PayloadRule.ONLY:
      if (len <= 4096) return null;
      return new WireError(WireErrorCode.BadLength, bthOff, `${info.name} carries ${len} payload bytes, more than the largest path MTU`);
  }
  return null;
}

/** Decodes one frame held in its own buffer. */
export function decodeFrame(frame: Uint8Array, linkType: number = LinkType.Ethernet, opts: DecodeOptions = {}): DecodedFrame {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  return decodeAt(view, frame, 0, frame.byteLength, linkType, opts);
}

/** Source and destination addresses as text (IPv4 dotted, IPv6/GID per RFC 5952). */
export function packetAddresses(p: RocePacket): { src: string; dst: string } {
  if (p.ipv4 !== null) return { src: ipv4ToString(p.ipv4.src), dst: ipv4ToString(p.ipv4.dst) };
  const h = p.ipv6 ?? p.grh;
  if (h !== null) return { src: ipv6ToString(h.src), dst: ipv6ToString(h.dst) };
  return { src: '', dst: '' };
}

/**
 * Writes `p`'s source or destination address as `packetAddresses` spells it, in double quotes
 * when `quoted` (a JSON string: the address text needs no escaping). IPv4 is written digit by
 * digit, without building the string.
 */
export function writePacketAddress(t: TextBytes, p: RocePacket, which: 'src' | 'dst', quoted: boolean): void {
  if (quoted) t.byte(QUOTE);
  if (p.ipv4 !== null) {
    t.ipv4(which === 'src' ? p.ipv4.src : p.ipv4.dst);
  } else t.text(packetAddresses(p)[which]);
  if (quoted) t.byte(QUOTE);
}

const QUOTE = 0x22;
