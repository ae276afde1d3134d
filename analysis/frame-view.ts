/**
 * The few fields of a decoded frame the analyzer needs, copied out of the
 * `RocePacket` so nothing keeps the packet (or the capture buffer) alive.
 */
import type { RocePacket } from '../packets/decode';
import { packetAddresses } from '../packets/decode';
import { OpFlag, type Transport } from '../packets/opcodes';
import { AethKind, decodeSyndrome } from '../packets/aeth';
import { WireErrorCode } from '../packets/errors';
import type { AddressNames } from './address-names';

export const FrameRole = { REQUEST: 'request', RESPONSE: 'response', CNP: 'cnp', OTHER: 'other' } as const;
export type FrameRole = (typeof FrameRole)[keyof typeof FrameRole];

export interface FrameView {
  /** 1-based frame number in the capture. */
  frame: number;
  /** Nanoseconds since the first frame of the capture. */
  timeNs: number;
  src: string;
  dst: string;
  role: FrameRole;
  /** The opcode's transport, or '' for an unknown opcode. */
  transport: Transport | '';
  opcode: number;
  opName: string;
  /** Bit set of OpFlag (0 for an unknown opcode). */
  opFlags: number;
  destQp: number;
  /** DETH source QP (UD, RD), or -1. */
  srcQp: number;
  psn: number;
  ackReq: boolean;
  /** AETH syndrome kind and value, or null. */
  aethKind: AethKind | null;
  aethValue: number;
  msn: number;
  /** RETH DMA length, or -1. */
  dmaLength: number;
  payloadLength: number;
  /** ICRC as carried, or -1: a fingerprint of the invariant contents. */
  icrc: number;
  icrcBad: boolean;
  /** A decode error other than a bad ICRC (a capture cut inside the extension headers is not one: its BTH is used). */
  malformed: boolean;
  ecnCe: boolean;
  becn: boolean;
  /** UDP source port (RoCE v2), or -1. */
  sport: number;
}

/** ECN CE in IPv4 TOS, IPv6 traffic class or the GRH traffic class. */
function ecnCe(p: RocePacket): boolean {
  if (p.ipv4 !== null) return p.ipv4.ecn === 3;
  const h = p.ipv6 ?? p.grh;
  return h !== null && (h.trafficClass & 3) === 3;
}

/**
 * A view of frame `frame` at `timeNs`; null when the frame has no BTH to analyze. `names` gives
 * the address texts from its cache (the analyzer's, one per run).
 */
export function viewFrame(frame: number, timeNs: number, p: RocePacket, names?: AddressNames): FrameView | null {
  const b = p.bth;
  if (b === null) return null;
  const info = p.info;
  const f = info?.flags ?? 0;
  const { src, dst } = names === undefined ? packetAddresses(p) : names.of(p);
  const syn = p.aeth === null ? null : decodeSyndrome(p.aeth.syndrome);
  const role: FrameRole =
    (f & OpFlag.CNP) !== 0 ? FrameRole.CNP : (f & OpFlag.REQ) !== 0 ? FrameRole.REQUEST : (f & OpFlag.RESP) !== 0 ? FrameRole.RESPONSE : FrameRole.OTHER;
  const icrcBad = p.icrcOk === false;
  return {
    frame,
    timeNs,
    src,
    dst,
    role,
    transport: info?.transport ?? '',
    opcode: b.opcode,
    opName: info?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`,
    opFlags: f,
    destQp: b.destQp,
    srcQp: p.deth?.srcQp ?? -1,
    psn: b.psn,
    ackReq: b.ackReq,
    aethKind: syn?.kind ?? null,
    aethValue: syn?.value ?? 0,
    msn: p.aeth?.msn ?? 0,
    dmaLength: p.reth?.dmaLength ?? -1,
    payloadLength: p.payloadLength,
    icrc: p.icrc ?? -1,
    icrcBad,
    malformed: p.error !== null && !icrcBad && !(p.truncated && p.error.code === WireErrorCode.Truncated),
    ecnCe: ecnCe(p),
    becn: b.becn,
    sport: p.udp?.srcPort ?? -1,
  };
}
