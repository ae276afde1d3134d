/**
 * End-to-end credits in replay (IBTA vol. 1 §9.7.7.2). The stack's own captures carry real credit
 * counts (its responder advertises the receive WQEs it has left): replay reproduces each of them.
 * Captures whose counts were rewritten stay free of violations: lower counts than replay can give
 * the stack's QP are unverifiable, higher ones are followed, code 31 makes the stack's QP an SRQ
 * one. A requester capture whose counts were cut to 0 shows a requester going past its limit:
 * replay lets the stack go on and says so, without a violation.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { readCapture, writePcap } from '../../packets/pcap';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { writeIcrc, icrcV2 } from '../../packets/icrc';
import { AethKind, CREDITS_INVALID, decodeSyndrome } from '../../packets/aeth';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import { DiffClass, type ReplaySummary } from '../../apps/replay/differences';
import { dropRecords } from '../support/degrade';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';

/** A seeded simulated run (no loss) captured on host A's or host B's NIC. */
function ownCapture(where: 'host-a' | 'host-b', seed = 4): Uint8Array {
  const tap = new PcapTap({ where });
  const sim = createSimPair({ seed, tap });
  const r = runWorkload(sim, { seed, qps: 2, bytes: 96 * 1024 });
  expect(r.ok).toBe(true);
  sim.clock.runUntilIdle(1_000_000);
  return tap.bytes();
}

/** The credit codes of the ACK-kind AETHs in a capture. */
function creditCodes(file: Uint8Array): number[] {
  const out: number[] = [];
  for (const rec of readCapture(file).records) {
    const d = decodeFrame(rec.data);
    if (!d.roce || d.aeth === null) continue;
    const s = decodeSyndrome(d.aeth.syndrome);
    if (s.kind === AethKind.ACK) out.push(s.value);
  }
  return out;
}

/** The capture with every ACK-kind credit code (other than 31) replaced by `f(code, k)` (k counts them), ICRCs recomputed. */
function rewriteCredits(file: Uint8Array, f: (code: number, k: number) => number): { file: Uint8Array; changed: number } {
  let changed = 0;
  let k = 0;
  const frames = readCapture(file).records.map((rec) => {
    const data = rec.data.slice();
    const d = decodeFrame(data);
    if (d.roce && d.aeth !== null && d.bth !== null) {
      const s = decodeSyndrome(d.aeth.syndrome);
      const code = s.kind === AethKind.ACK && s.value !== CREDITS_INVALID ? f(s.value, k++) : s.value;
      if (code !== s.value) {
        data[d.bthOff + 12] = code; // the AETH follows the BTH in every RC response; ACK kind bits are 0
        writeIcrc(data, d.icrcOff, icrcV2(data, d.l3Off, d.icrcOff));
        changed++;
      }
    }
    return { data, timestampNs: rec.timestampNs };
  });
  return { file: writePcap(frames), changed };
}

function replayAll(file: Uint8Array, role: 'responder' | 'requester', conversations = 2): ReplaySummary[] {
  const { packets } = capturedPackets(readCapture(file));
  const convs = findRcConversations(packets, packetAddresses);
  expect(convs.length).toBe(conversations);
  return convs.map((c) => (role === 'responder' ? replayResponder(c, { timing: 'fast' }) : replayRequester(c)));
}

const kinds = (s: ReplaySummary): string[] => s.differences.map((d) => `${d.class}:${d.kind}`);

const hostB = ownCapture('host-b');
const hostA = ownCapture('host-a');

test("the stack's own capture carries real credit counts, and responder replay reproduces every one", () => {
  const codes = creditCodes(hostB);
  expect(codes.length).toBeGreaterThan(20);
  expect(codes.every((c) => c !== CREDITS_INVALID)).toBe(true);
  expect(new Set(codes).size).toBeGreaterThan(1);
  for (const s of replayAll(hostB, 'responder')) {
    expect(s.violations).toBe(0);
    expect(s.matched).toBe(s.expected);
    expect(kinds(s).filter((k) => k.endsWith(':ackCredits'))).toEqual([]);
  }
});

test('counts rewritten to fall faster than requests can take receives: unverifiable, never a violation', () => {
  // Every other count says 0: after a count of several, one request cannot leave none.
  const { file, changed } = rewriteCredits(hostB, (c, k) => (k % 2 === 1 ? 0 : c));
  expect(changed).toBeGreaterThan(0);
  const all = replayAll(file, 'responder');
  let flagged = 0;
  for (const s of all) {
    expect(s.violations).toBe(0);
    const d = s.differences.filter((x) => x.kind === 'ackCredits');
    expect(d.every((x) => x.class === DiffClass.UNVERIFIABLE)).toBe(true);
    flagged += d.reduce((n, x) => n + (x.count ?? 1), 0);
  }
  expect(flagged).toBeGreaterThan(0);
  expect(flagged).toBeLessThanOrEqual(changed);
});

test('counts rewritten to a steady 32 (an application that keeps 32 receives posted): replay posts them, the stack advertises the same', () => {
  const { file, changed } = rewriteCredits(hostB, () => 10);
  expect(changed).toBeGreaterThan(0);
  for (const s of replayAll(file, 'responder')) {
    expect(s.violations).toBe(0);
    expect(kinds(s).filter((k) => k.endsWith(':ackCredits'))).toEqual([]);
  }
});

test('a responder that sends code 31 (as rxe does) is replayed on a shared receive queue: code 31 back', () => {
  const { file } = rewriteCredits(hostB, () => CREDITS_INVALID);
  expect(creditCodes(file).every((c) => c === CREDITS_INVALID)).toBe(true);
  for (const s of replayAll(file, 'responder')) {
    expect(s.violations).toBe(0);
    expect(kinds(s).filter((k) => k.endsWith(':ackCredits'))).toEqual([]);
  }
});

test('requester replay of its own capture: the stack keeps to the same credits, no difference', () => {
  for (const s of replayAll(hostA, 'requester')) {
    expect(s.violations).toBe(0);
    expect(s.matched).toBe(s.expected);
    expect(kinds(s).filter((k) => k.endsWith(':creditLimit'))).toEqual([]);
  }
});

/** Host A's capture of 24 SENDs posted at once to a responder with 64 receives posted: the requester pipelines them on its credits. */
function pipelinedSends(): Uint8Array {
  const tap = new PcapTap({ where: 'host-a' });
  const sim = createSimPair({ seed: 6, tap });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const mrA = sim.a.regMr(pdA, new Uint8Array(4096).fill(3), Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, new Uint8Array(64 * 256), Access.LOCAL_WRITE);
  const cqA = sim.a.createCq(64);
  const cqB = sim.b.createCq(64);
  const a = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
  const b = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
  const ea = endpointOf(sim.a, a, 100);
  const eb = endpointOf(sim.b, b, 200);
  connectQp(a, ea, eb);
  connectQp(b, eb, ea);
  b.postRecv(Array.from({ length: 64 }, (_, i) => ({ wrId: i, sgList: [mrB.sge(i * 256, 256)] })));
  a.postSend(Array.from({ length: 24 }, (_, i) => ({ wrId: i, opcode: WrOpcode.SEND, sgList: [mrA.sge(0, 100)], sendFlags: SendFlags.SIGNALED })));
  sim.clock.runUntilIdle(1_000_000);
  expect(cqA.poll(64).filter((w) => w.status === WcStatus.SUCCESS)).toHaveLength(24);
  return tap.bytes();
}

test('requester replay where the captured counts say 0 and most ACKs were lost: the capture went past the limit, replay lets the stack follow', () => {
  const whole = pipelinedSends();
  for (const s of replayAll(whole, 'requester', 1)) {
    expect(s.violations).toBe(0);
    expect(s.matched).toBe(s.expected);
    expect(kinds(s).filter((k) => k.endsWith(':creditLimit'))).toEqual([]);
  }
  const zero = rewriteCredits(whole, () => 0);
  expect(zero.changed).toBeGreaterThan(0);
  // Three ACKs of four lost by the capture: the next one covers requests sent past the limit the
  // counts before it set.
  const acks = readCapture(zero.file)
    .records.map((r, i) => ({ n: i + 1, d: decodeFrame(r.data) }))
    .filter((x) => x.d.roce && x.d.info?.name === 'RC_ACKNOWLEDGE')
    .map((x) => x.n);
  const file = dropRecords(zero.file, new Set(acks.filter((_, k) => k % 4 !== 3 && k > 0)));
  let overruns = 0;
  for (const s of replayAll(file, 'requester', 1)) {
    expect(s.violations).toBe(0);
    expect(s.matched).toBe(s.expected);
    overruns += s.differences.filter((d) => d.kind === 'creditLimit' && d.class === DiffClass.UNVERIFIABLE).reduce((n, d) => n + (d.count ?? 1), 0);
  }
  expect(overruns).toBeGreaterThan(0);
});
