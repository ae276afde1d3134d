/**
 * The few fields of a decoded frame the analyzer needs, copied out of the
 * `RocePacket` so nothing keeps the packet (or the capture buffer) alive.
 */
import type { RocePacket } from '../packets/decode';
import { frameFault, packetAddresses } from '../packets/decode';
import { OPCODES, OpFlag, type OpcodeInfo, type Transport } from '../packets/opcodes';
import { type AethKind, decodeSyndrome } from '../packets/aeth';
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
  /** A fault of the frame other than a bad ICRC (a capture that ends inside a header is not one: the headers before it are used). */
  malformed: boolean;
  ecnCe: boolean;
  becn: boolean;
  /** UDP source port (RoCE v2), or -1. */
  sport: number;
}

/** ECN CE in IPv4 TOS, IPv6 traffic class or the GRH traffic class. */
export function ecnCe(p: RocePacket): boolean {
  if (p.ipv4 !== null) return p.ipv4.ecn === 3;
  const h = p.ipv6 ?? p.grh;
  return h !== null && (h.trafficClass & 3) === 3;
}

/** A fault of the frame other than a bad ICRC (packets/decode.ts `frameFault`: the capture's cut is not one). */
export function isMalformed(p: RocePacket): boolean {
  return frameFault(p) !== null && p.icrcOk !== false;
}

/** What a frame's opcode says of it (the same for every frame with that opcode). */
export interface OpcodeView {
  role: FrameRole;
  transport: Transport | '';
  opName: string;
  opFlags: number;
}

function opcodeViewOf(opcode: number, info: OpcodeInfo | undefined): OpcodeView {
  const f = info?.flags ?? 0;
  const role: FrameRole =
    (f & OpFlag.CNP) !== 0 ? FrameRole.CNP : (f & OpFlag.REQ) !== 0 ? FrameRole.REQUEST : (f & OpFlag.RESP) !== 0 ? FrameRole.RESPONSE : FrameRole.OTHER;
  return { role, transport: info?.transport ?? '', opName: info?.name ?? `UNKNOWN_0x${opcode.toString(16).padStart(2, '0')}`, opFlags: f };
}

/**
 * Per opcode, what it says of a frame: at `opcode` when the packet's `info` is unset (the opcode
 * is unknown, or the frame ended before the decoder looked it up), at 256 + `opcode` when it is
 * set (decode.ts sets it to the opcode table's entry). Made once; never changed.
 */
const OPCODE_VIEWS: readonly OpcodeView[] = [
  ...Array.from({ length: 256 }, (_, op) => opcodeViewOf(op, undefined)),
  ...Array.from({ length: 256 }, (_, op) => opcodeViewOf(op, OPCODES[op])),
];

/** What opcode `opcode` says of a frame; `known` is whether the packet's `info` is set. */
export function opcodeView(opcode: number, known: boolean): OpcodeView {
  return OPCODE_VIEWS[(known ? 256 : 0) + (opcode & 0xff)] as OpcodeView;
}

/**
 * A view of frame `frame` at `timeNs`; null when the frame has no BTH to analyze. `names` gives
 * the address texts from its cache (the analyzer's, one per run).
 */
export function viewFrame(frame: number, timeNs: number, p: RocePacket, names?: AddressNames): FrameView | null {
  const b = p.bth;
  if (b === null) return null;
  const { src, dst } = names === undefined ? packetAddresses(p) : names.of(p);
  const op = opcodeView(b.opcode, p.info !== undefined);
  const syn = p.aeth === null ? null : decodeSyndrome(p.aeth.syndrome);
  return {
    frame,
    timeNs,
    src,
    dst,
    role: op.role,
    transport: op.transport,
    opcode: b.opcode,
    opName: op.opName,
    opFlags: op.opFlags,
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
    icrcBad: p.icrcOk === false,
    malformed: isMalformed(p),
    ecnCe: ecnCe(p),
    becn: b.becn,
    sport: p.udp?.srcPort ?? -1,
  };
}
