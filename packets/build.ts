/**
 * Building whole RoCE frames from header values: Ethernet (optional VLAN),
 * IPv4 or IPv6 (RoCE v2) or GRH (RoCE v1), UDP, BTH, the extension headers
 * the opcode table lists for the opcode, payload, pad and ICRC.
 *
 * Lengths, the IPv4 checksum, the BTH pad count and the ICRC are filled in.
 * The spec must carry exactly the extension headers the opcode has; anything
 * else is a BadValue error, so a frame built here is always well formed
 * unless a field is overridden on purpose (`icrc`, `padCount`).
 */
import { WireError, WireErrorCode } from './errors';
import { checkUint, copyBytes, ipv4FromString, ipv6FromString } from './bytes';
import { ETH_LEN, EtherType, VLAN_TAG_LEN, type VlanTag, emitEthernet } from './ethernet';
import { IPV4_MIN_LEN, IpProtocol, emitIpv4 } from './ipv4';
import { IPV6_LEN, emitIpv6 } from './ipv6';
import { GRH_LEN, GRH_NEXT_HEADER_BTH, emitGrh } from './grh';
import { ROCE_V2_PORT, UDP_LEN, emitUdp } from './udp';
import { DEFAULT_PKEY, type BthHeader, emitBth } from './bth';
import { type RethHeader, emitReth } from './reth';
import { type AethHeader, emitAeth } from './aeth';
import { type AtomicEthHeader, emitAtomicEth } from './atomic-eth';
import { type AtomicAckEthHeader, emitAtomicAckEth } from './atomic-ack-eth';
import { emitImmDt } from './immdt';
import { emitIeth } from './ieth';
import { type DethHeader, emitDeth } from './deth';
import { type XrcEthHeader, emitXrcEth } from './xrceth';
import { type RdEthHeader, emitRdEth } from './rdeth';
import { type FethHeader, emitFeth } from './feth';
import { emitCnpReserved } from './cnp';
import { Hdr, type HdrName, type OpcodeInfo, OPCODES } from './opcodes';

const EMPTY = new Uint8Array(0);
import { icrcV1, icrcV2, writeIcrc } from './icrc';
import { ICRC_LEN } from './decode';

/** The Ethernet header of a frame to build: MAC addresses as 48-bit numbers, and an optional 802.1Q tag. */
export interface EthSpec {
  src: number;
  dst: number;
  vlan?: VlanTag | null;
}

/** The IPv4 header of a RoCE v2 frame to build; addresses as dotted strings or 32-bit numbers. */
export interface Ipv4Spec {
  version: 4;
  src: number | string;
  dst: number | string;
  dscp?: number;
  ecn?: number;
  ttl?: number;
  identification?: number;
  dontFragment?: boolean;
}

/** The IPv6 header of a RoCE v2 frame to build; addresses as text or 16 bytes. */
export interface Ipv6Spec {
  version: 6;
  src: Uint8Array | string;
  dst: Uint8Array | string;
  trafficClass?: number;
  flowLabel?: number;
  hopLimit?: number;
}

/** A BTH to build: opcode, destination QP and PSN, the other fields at their usual values unless given. */
export type BthSpec = Partial<BthHeader> & { opcode: number; destQp: number; psn: number };

/** A transport packet: the BTH and the extension headers its opcode has (a header left out or undefined is absent). */
export interface TransportSpec {
  bth: BthSpec;
  reth?: RethHeader | undefined;
  aeth?: AethHeader | undefined;
  atomicEth?: AtomicEthHeader | undefined;
  atomicAckEth?: AtomicAckEthHeader | undefined;
  immDt?: number | undefined;
  ieth?: number | undefined;
  deth?: DethHeader | undefined;
  xrcEth?: XrcEthHeader | undefined;
  rdEth?: RdEthHeader | undefined;
  feth?: FethHeader | undefined;
  /** CNP reserved bytes (16; zeros when omitted). */
  cnp?: Uint8Array | undefined;
  payload?: Uint8Array | undefined;
  /**
   * With `payloadLength`: the payload is `payload[payloadOffset, payloadOffset + payloadLength)`, a
   * window of a larger buffer (a memory region), read without making a view of it. Default: all of `payload`.
   */
  payloadOffset?: number | undefined;
  payloadLength?: number | undefined;
  /** Force this ICRC value instead of computing it (fault injection, tests). */
  icrc?: number | undefined;
}

/** A whole RoCE v2 frame to build: Ethernet (or none), IP, UDP to port 4791 and the transport packet; the ICRC is computed. */
export interface RoceV2Spec extends TransportSpec {
  /** Omit for a raw IP frame (no link header). */
  eth?: EthSpec;
  ip: Ipv4Spec | Ipv6Spec;
  udp?: { srcPort?: number; dstPort?: number; checksum?: number };
}

/** A whole RoCE v1 frame to build: Ethernet (EtherType 0x8915), GRH and the transport packet; the ICRC is computed. */
export interface RoceV1Spec extends TransportSpec {
  eth: EthSpec;
  grh: { sgid: Uint8Array | string; dgid: Uint8Array | string; trafficClass?: number; flowLabel?: number; hopLimit?: number };
}

const SPEC_KEY: Readonly<Record<HdrName, keyof TransportSpec>> = {
  XRCETH: 'xrcEth',
  RDETH: 'rdEth',
  DETH: 'deth',
  FETH: 'feth',
  RETH: 'reth',
  ATOMIC_ETH: 'atomicEth',
  AETH: 'aeth',
  ATOMIC_ACK_ETH: 'atomicAckEth',
  IMMDT: 'immDt',
  IETH: 'ieth',
  CNP: 'cnp',
};

/** Length of BTH + extension headers + payload + pad + ICRC for a transport spec. */
export function transportLength(t: TransportSpec): number {
  const info = OPCODES[t.bth.opcode];
  if (info === undefined) throw new WireError(WireErrorCode.BadValue, 0, `opcode 0x${t.bth.opcode.toString(16)} is not in the opcode table`);
  const len = t.payloadLength ?? t.payload?.length ?? 0;
  return info.headerLen + len + ((4 - (len % 4)) % 4) + ICRC_LEN;
}

const HDR_NAMES = Object.keys(SPEC_KEY) as HdrName[];

/** Bit set (`Hdr`) of the extension headers a spec carries. */
function specHeaders(t: TransportSpec): number {
  // Direct property tests: this runs for every packet the stack sends.
  let h = 0;
  if (t.xrcEth !== undefined) h |= Hdr.XRCETH;
  if (t.rdEth !== undefined) h |= Hdr.RDETH;
  if (t.deth !== undefined) h |= Hdr.DETH;
  if (t.feth !== undefined) h |= Hdr.FETH;
  if (t.reth !== undefined) h |= Hdr.RETH;
  if (t.atomicEth !== undefined) h |= Hdr.ATOMIC_ETH;
  if (t.aeth !== undefined) h |= Hdr.AETH;
  if (t.atomicAckEth !== undefined) h |= Hdr.ATOMIC_ACK_ETH;
  if (t.immDt !== undefined) h |= Hdr.IMMDT;
  if (t.ieth !== undefined) h |= Hdr.IETH;
  if (t.cnp !== undefined) h |= Hdr.CNP;
  return h;
}

/**
 * Writes BTH, extension headers, payload and pad at `off`; returns the offset
 * of the ICRC field. Throws BadValue when the spec's headers are not exactly
 * the opcode's (a CNP may leave its reserved bytes out).
 */
export function emitTransport(t: TransportSpec, view: DataView, bytes: Uint8Array, off: number): number {
  const info = OPCODES[t.bth.opcode];
  if (info === undefined) throw new WireError(WireErrorCode.BadValue, 0, `opcode 0x${t.bth.opcode.toString(16)} is not in the opcode table`);
  const given = specHeaders(t);
  if ((given & ~Hdr.CNP) !== (info.hdrs & ~Hdr.CNP) || ((given & Hdr.CNP) !== 0 && (info.hdrs & Hdr.CNP) === 0)) {
    for (const name of HDR_NAMES) {
      const present = (given & Hdr[name]) !== 0;
      const wanted = (info.hdrs & Hdr[name]) !== 0;
      if (wanted && !present && name !== 'CNP') throw new WireError(WireErrorCode.BadValue, 0, `${info.name} needs a ${name} but the spec has none`);
      if (!wanted && present) throw new WireError(WireErrorCode.BadValue, 0, `${info.name} has no ${name} but the spec gives one`);
    }
  }
  return emitTransportBody(t, info, view, bytes, off);
}

function emitTransportBody(t: TransportSpec, info: OpcodeInfo, view: DataView, bytes: Uint8Array, off: number): number {
  const payload = t.payload ?? EMPTY;
  const pOff = t.payloadOffset ?? 0;
  const n = t.payloadLength ?? payload.length - pOff;
  if (pOff < 0 || n < 0 || pOff + n > payload.length) {
    throw new WireError(WireErrorCode.BadValue, 0, `payload window [${pOff}, ${pOff + n}) is outside its ${payload.length}-byte buffer`);
  }
  const pad = (4 - (n % 4)) % 4;
  const b = t.bth;
  if (
    b.migReq === undefined &&
    b.tver === undefined &&
    b.fecn === undefined &&
    b.becn === undefined &&
    b.resv6 === undefined &&
    b.resv7 === undefined &&
    b.padCount === undefined
  ) {
    // The common case (every packet the stack sends): defaults for the rarely set fields, written directly.
    checkUint(b.destQp, 0xffffff, 'destQp');
    checkUint(b.psn, 0xffffff, 'psn');
    const pkey = b.pkey ?? DEFAULT_PKEY;
    checkUint(pkey, 0xffff, 'pkey');
    view.setUint8(off, b.opcode);
    view.setUint8(off + 1, (b.se === true ? 0x80 : 0) | (pad << 4));
    view.setUint16(off + 2, pkey);
    view.setUint32(off + 4, b.destQp);
    view.setUint32(off + 8, ((b.ackReq === true ? 0x8000_0000 : 0) | b.psn) >>> 0);
  } else {
    const bth: BthHeader = {
      se: false,
      migReq: false,
      tver: 0,
      pkey: DEFAULT_PKEY,
      fecn: false,
      becn: false,
      resv6: 0,
      ackReq: false,
      resv7: 0,
      ...b,
      padCount: b.padCount ?? pad,
    };
    emitBth(bth, view, off);
  }
  const o = info.offsets;
  if (t.xrcEth) emitXrcEth(t.xrcEth, view, off + (o.XRCETH ?? 0));
  if (t.rdEth) emitRdEth(t.rdEth, view, off + (o.RDETH ?? 0));
  if (t.deth) emitDeth(t.deth, view, off + (o.DETH ?? 0));
  if (t.feth) emitFeth(t.feth, view, off + (o.FETH ?? 0));
  if (t.reth) emitReth(t.reth, view, off + (o.RETH ?? 0));
  if (t.atomicEth) emitAtomicEth(t.atomicEth, view, off + (o.ATOMIC_ETH ?? 0));
  if (t.aeth) emitAeth(t.aeth, view, off + (o.AETH ?? 0));
  if (t.atomicAckEth) emitAtomicAckEth(t.atomicAckEth, view, off + (o.ATOMIC_ACK_ETH ?? 0));
  if (t.immDt !== undefined) emitImmDt({ value: t.immDt }, view, off + (o.IMMDT ?? 0));
  if (t.ieth !== undefined) emitIeth({ rkey: t.ieth }, view, off + (o.IETH ?? 0));
  if ((info.hdrs & Hdr.CNP) !== 0) emitCnpReserved(t.cnp ? { reserved: t.cnp } : null, view, off + (o.CNP ?? 0));
  const payOff = off + info.headerLen;
  copyBytes(bytes, payOff, payload, pOff, n);
  for (let i = 0; i < pad; i++) bytes[payOff + n + i] = 0;
  return payOff + n + pad;
}

const asV4 = (a: number | string): number => (typeof a === 'string' ? ipv4FromString(a) : a);
const asV6 = (a: Uint8Array | string): Uint8Array => (typeof a === 'string' ? ipv6FromString(a) : a);

/** Total frame length of a RoCE v2 spec. */
export function roceV2FrameLength(s: RoceV2Spec): number {
  const l2 = s.eth === undefined ? 0 : ETH_LEN + (s.eth.vlan ? VLAN_TAG_LEN : 0);
  const l3 = s.ip.version === 4 ? IPV4_MIN_LEN : IPV6_LEN;
  return l2 + l3 + UDP_LEN + transportLength(s);
}

/** Writes a RoCE v2 frame at `off` in `bytes` and returns its length. */
export function emitRoceV2Frame(s: RoceV2Spec, bytes: Uint8Array, off = 0): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const total = roceV2FrameLength(s);
  if (off + total > bytes.length) throw new WireError(WireErrorCode.BadValue, off, `frame of ${total} bytes does not fit the buffer`);
  let p = off;
  if (s.eth !== undefined) {
    p += emitEthernet({ dst: s.eth.dst, src: s.eth.src, vlan: s.eth.vlan ?? null, etherType: s.ip.version === 4 ? EtherType.IPv4 : EtherType.IPv6 }, view, p);
  }
  const ipOff = p;
  const tLen = transportLength(s);
  if (s.ip.version === 4) {
    p += emitIpv4(
      {
        ihl: 5,
        dscp: s.ip.dscp ?? 0,
        ecn: s.ip.ecn ?? 0,
        totalLength: IPV4_MIN_LEN + UDP_LEN + tLen,
        identification: s.ip.identification ?? 0,
        dontFragment: s.ip.dontFragment ?? true,
        moreFragments: false,
        fragmentOffset: 0,
        ttl: s.ip.ttl ?? 64,
        protocol: IpProtocol.UDP,
        checksum: 0,
        src: asV4(s.ip.src),
        dst: asV4(s.ip.dst),
        options: new Uint8Array(0),
      },
      view,
      p,
    );
  } else {
    p += emitIpv6(
      {
        trafficClass: s.ip.trafficClass ?? 0,
        flowLabel: s.ip.flowLabel ?? 0,
        payloadLength: UDP_LEN + tLen,
        nextHeader: IpProtocol.UDP,
        hopLimit: s.ip.hopLimit ?? 64,
        src: asV6(s.ip.src),
        dst: asV6(s.ip.dst),
      },
      view,
      p,
    );
  }
  p += emitUdp({ srcPort: s.udp?.srcPort ?? 0xc000, dstPort: s.udp?.dstPort ?? ROCE_V2_PORT, length: UDP_LEN + tLen, checksum: s.udp?.checksum ?? 0 }, view, p);
  const icrcOff = emitTransport(s, view, bytes, p);
  writeIcrc(bytes, icrcOff, s.icrc ?? icrcV2(bytes, ipOff, icrcOff));
  return icrcOff + ICRC_LEN - off;
}

/** A new buffer holding the RoCE v2 frame. */
export function buildRoceV2Frame(s: RoceV2Spec): Uint8Array {
  const out = new Uint8Array(roceV2FrameLength(s));
  emitRoceV2Frame(s, out, 0);
  return out;
}

/** A new buffer holding a RoCE v1 frame (Ethernet, EtherType 0x8915, GRH, BTH ...). */
export function buildRoceV1Frame(s: RoceV1Spec): Uint8Array {
  const l2 = ETH_LEN + (s.eth.vlan ? VLAN_TAG_LEN : 0);
  const tLen = transportLength(s);
  const out = new Uint8Array(l2 + GRH_LEN + tLen);
  const view = new DataView(out.buffer);
  emitEthernet({ dst: s.eth.dst, src: s.eth.src, vlan: s.eth.vlan ?? null, etherType: EtherType.RoCEv1 }, view, 0);
  emitGrh(
    {
      trafficClass: s.grh.trafficClass ?? 0,
      flowLabel: s.grh.flowLabel ?? 0,
      payloadLength: tLen,
      nextHeader: GRH_NEXT_HEADER_BTH,
      hopLimit: s.grh.hopLimit ?? 64,
      src: asV6(s.grh.sgid),
      dst: asV6(s.grh.dgid),
    },
    view,
    l2,
  );
  const icrcOff = emitTransport(s, view, out, l2 + GRH_LEN);
  writeIcrc(out, icrcOff, s.icrc ?? icrcV1(out, l2, icrcOff));
  return out;
}
