/**
 * A response of a responder, captured or the stack's, reduced to what the responder replay compares:
 * its kind, PSN, MSN, NAK code or READ payload, atomic result and end-to-end credit count.
 */
import type { RocePacket } from '../../packets/decode';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import { creditOf } from './credits';

/** A response, reduced to what the comparison looks at. */
export interface Resp {
  frame: number;
  kind: 'ACK' | 'NAK' | 'RNR_NAK' | 'READ' | 'ATOMIC';
  psn: number;
  msn: number | null;
  value: number;
  opcode: number;
  name: string;
  payload: Uint8Array;
  /** Payload bytes the capture holds (the rest of a truncated frame is not compared). */
  captured: number;
  orig: bigint | null;
  /** The end-to-end credit code of an ACK-kind AETH (ACK, first/last READ response, atomic ACK), else null. */
  credit: number | null;
  /** The stack's answers: receive WQEs its QP had posted when it sent this one. */
  wqes?: number;
}

export function toResp(p: RocePacket, bytes: Uint8Array, frame: number): Resp | null {
  const b = p.bth;
  const info = p.info;
  if (b === null || info === undefined) return null;
  const payload = bytes.subarray(p.payloadOff, p.payloadOff + p.payloadLength);
  const msn = p.aeth?.msn ?? null;
  const captured = p.payloadCaptured;
  const credit = creditOf(p);
  if ((info.flags & OpFlag.READ) !== 0)
    return { frame, kind: 'READ', psn: b.psn, msn, value: 0, opcode: b.opcode, name: info.name, payload, captured, orig: null, credit };
  if (p.atomicAckEth !== null)
    return { frame, kind: 'ATOMIC', psn: b.psn, msn, value: 0, opcode: b.opcode, name: info.name, payload, captured, orig: p.atomicAckEth.origData, credit };
  if (p.aeth === null) return null;
  const s = decodeSyndrome(p.aeth.syndrome);
  const kind = s.kind === AethKind.ACK ? 'ACK' : s.kind === AethKind.NAK ? 'NAK' : s.kind === AethKind.RNR_NAK ? 'RNR_NAK' : null;
  if (kind === null) return null;
  return { frame, kind, psn: b.psn, msn, value: s.value, opcode: b.opcode, name: info.name, payload, captured, orig: null, credit };
}
