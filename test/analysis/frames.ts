/**
 * Test support: hand-built RC conversations as captures. Host A
 * (198.18.0.1, QP 0x11) is the requester, host B (198.18.0.2, QP 0x12) the
 * responder; each step names its time in microseconds.
 */
import { buildRoceV2Frame, type RoceV2Spec, type TransportSpec } from '../../packets/build';
import { PcapWriter } from '../../packets/pcap';
import { analyzeCapture, type AnalysisResult } from '../../analysis/analyzer';

export const QP_A = 0x11;
export const QP_B = 0x12;
const ETH_A = 0x020000000001;
const ETH_B = 0x020000000002;
export const EPOCH = 1_700_000_000_000_000_000n;

export const Op = {
  SEND_FIRST: 0x00,
  SEND_MIDDLE: 0x01,
  SEND_LAST: 0x02,
  SEND_ONLY: 0x04,
  WRITE_ONLY: 0x0a,
  READ_REQUEST: 0x0c,
  READ_RESPONSE_FIRST: 0x0d,
  READ_RESPONSE_MIDDLE: 0x0e,
  READ_RESPONSE_LAST: 0x0f,
  READ_RESPONSE_ONLY: 0x10,
  ACK: 0x11,
  ATOMIC_ACK: 0x12,
  FETCH_ADD: 0x14,
  CNP: 0x81,
} as const;

export const Syn = { ACK: 0x1f, NAK_SEQ: 0x60, NAK_INV: 0x61, NAK_ACC: 0x62, NAK_OP: 0x63, rnr: (code: number) => 0x20 | code } as const;

export interface Step {
  us: number;
  from: 'a' | 'b';
  t: TransportSpec;
  ecnCe?: boolean;
  badIcrc?: boolean;
}

export function frame(s: Step): Uint8Array {
  const a = s.from === 'a';
  const spec: RoceV2Spec = {
    eth: { src: a ? ETH_A : ETH_B, dst: a ? ETH_B : ETH_A },
    ip: { version: 4, src: a ? '198.18.0.1' : '198.18.0.2', dst: a ? '198.18.0.2' : '198.18.0.1', ecn: s.ecnCe === true ? 3 : 2 },
    udp: { srcPort: 49441 },
    ...s.t,
  };
  if (s.badIcrc === true) spec.icrc = 0x12345678;
  return buildRoceV2Frame(spec);
}

/** A request from A to B. */
export function req(
  us: number,
  opcode: number,
  psn: number,
  o: Partial<TransportSpec> & { ackReq?: boolean; len?: number; ecnCe?: boolean; badIcrc?: boolean } = {},
): Step {
  const { ackReq, len, ecnCe, badIcrc, ...rest } = o;
  const t: TransportSpec = { bth: { opcode, destQp: QP_B, psn, ackReq: ackReq ?? true }, ...rest };
  if (len !== undefined) t.payload = new Uint8Array(len).fill(psn & 0xff);
  const step: Step = { us, from: 'a', t };
  if (ecnCe !== undefined) step.ecnCe = ecnCe;
  if (badIcrc !== undefined) step.badIcrc = badIcrc;
  return step;
}

/** An ACK-opcode response from B to A with the given AETH syndrome. */
export function ack(us: number, psn: number, syndrome: number = Syn.ACK, msn = 0): Step {
  return { us, from: 'b', t: { bth: { opcode: Op.ACK, destQp: QP_A, psn }, aeth: { syndrome, msn } } };
}

export function capture(steps: readonly Step[]): Uint8Array {
  const w = new PcapWriter({ nanosecond: true });
  for (const s of steps) w.add(frame(s), EPOCH + BigInt(Math.round(s.us * 1000)));
  return w.toBytes();
}

export function analyze(steps: readonly Step[]): AnalysisResult {
  return analyzeCapture(capture(steps), { allFrames: true });
}

/** Flags of frame n (1-based). */
export function flagsOf(r: AnalysisResult, n: number): string[] {
  return r.frameResults.find((f) => f.frame === n)?.flags ?? [];
}

/**
 * A timeout's go-back-N burst that goes on after its recovery (as an rxe requester's does): PSNs
 * 100..104 sent and not acknowledged, the timeout resends 100, the responder (which had them all)
 * acknowledges 104, and the requester resends 101..104 anyway before a new request, 105.
 * The episode: 5 packets resent, recovered at frame 7, its burst over at frame 12.
 */
export function burstPastRecovery(): Step[] {
  const steps: Step[] = [];
  for (let i = 0; i < 5; i++) steps.push(req(i, Op.SEND_ONLY, 100 + i, { len: 8 }));
  steps.push(req(1000, Op.SEND_ONLY, 100, { len: 8 }), ack(1002, 104));
  for (let i = 1; i < 5; i++) steps.push(req(1002 + i, Op.SEND_ONLY, 100 + i, { len: 8 }));
  steps.push(req(1010, Op.SEND_ONLY, 105, { len: 8 }), ack(1012, 105));
  return steps;
}
