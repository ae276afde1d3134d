/**
 * `roce replay` says why. Frames that need a feature this stack lacks (FLUSH, ATOMIC WRITE, the R_Key
 * of a memory window or fast-registered region named by a SEND with Invalidate) are `unsupported`,
 * named with the feature, never violations; replay goes on past them with a stand-in, so the rest is
 * still judged. When the stack's QP goes to the error state, the report's first line (and the JSON's
 * `qpErrors`) says at which captured frame and why. A zero-length RDMA WRITE with VA 0 and R_Key 0
 * (legal: C9-88) no longer stops replay with an internal error.
 *
 * Before, the bundled capture failed its own replay: "FAIL: 3 of 21 matched, 16 violations" as the
 * responder (its QP went to ERR at the SEND with Invalidate of frame 7 and answered nothing more) and
 * "expected RC_FLUSH ... got RC_SEND_ONLY" as the requester.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { Opcode } from '../../packets/opcodes';
import { buildRoceV2Frame } from '../../packets/build';
import { readCapture, writePcap } from '../../packets/pcap';
import { packetAddresses } from '../../packets/decode';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { type Step, QP_A, Syn, ack, capture, req } from '../analysis/frames';
import type { Difference, QpErrorReport, ReplaySummary } from '../../apps/replay/differences';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-unsupported-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Report {
  code: number;
  out: string;
  err: string;
  json: { ok: boolean; violations: number; matched: number; expected: number; unsupported: number; unsupportedFeatures: string[]; qpErrors: (QpErrorReport & { responderQpn: number })[]; conversations: ReplaySummary[] };
}

/** `roce replay` on `file` (read from disk, as users run it), as text and as JSON. */
async function replay(file: string, ...argv: string[]): Promise<Report> {
  const t = memoryOutput();
  const code = await run(['replay', file, ...argv], t);
  const j = memoryOutput();
  expect(await run(['replay', file, '--json', ...argv], j)).toBe(code);
  return { code, out: t.out, err: t.err, json: JSON.parse(j.out) as Report['json'] };
}

function save(name: string, bytes: Uint8Array): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, bytes);
  return f;
}

const unsupportedOf = (r: Report): { kind: string; feature: string | undefined; frames: number[] }[] =>
  r.json.conversations.flatMap((c) => c.differences.filter((d: Difference) => d.class === 'unsupported').map((d) => ({ kind: d.kind, feature: d.feature, frames: d.frames })));

describe('the bundled capture replays without violations in both roles', () => {
  test('as the responder: FLUSH, ATOMIC WRITE and two invalidated keys unsupported, the QP errors named first', async () => {
    const r = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', 'responder');
    expect(r.code).toBe(0);
    expect(r.json.violations).toBe(0);
    expect(unsupportedOf(r)).toEqual([
      { kind: 'flush', feature: 'FLUSH', frames: [30, 31] },
      { kind: 'atomicWrite', feature: 'ATOMIC WRITE', frames: [32, 33] },
      { kind: 'invalidateUnregistered', feature: 'memory windows / fast registration', frames: [7] },
      { kind: 'invalidateUnregistered', feature: 'memory windows / fast registration', frames: [10] },
    ]);
    expect(r.json.unsupported).toBe(6);
    expect(r.json.unsupportedFeatures).toEqual(['FLUSH', 'ATOMIC WRITE', 'memory windows / fast registration']);
    // Every answer after the FLUSH is judged: the first conversation's 17 compared answers all match.
    expect(r.json.conversations[0]).toMatchObject({ matched: 17, expected: 17 });
    // The stale R_Key (frame 43) and the atomic on a QP without atomics (frame 45) end the QP, as they ended the captured one.
    expect(r.json.qpErrors.map((e) => ({ qpn: e.qpn, frame: e.frame, captured: e.captured }))).toEqual([
      { qpn: 0x12, frame: 43, captured: true },
      { qpn: 0x14, frame: 45, captured: true },
    ]);
    const lines = r.out.split('\n');
    expect(lines[0]).toBe('QP 0x12 (responder) went to the error state at frame 43 (PSN 3086871): no error completion (no receive work request in use): responder: WRITE rkey 0xa1b00 va 0x7f3a1c200000 len 16: invalid key; the captured responder sent the same kind of NAK there');
    expect(lines[1]).toMatch(/^QP 0x14 \(responder\) went to the error state at frame 45 \(PSN 9176082\): .*RC_FETCH_ADD is not enabled on this QP/);
    expect(lines.find((l) => /^(PASS|FAIL)/.test(l))).toBe('PASS with 6 frames unsupported (FLUSH, ATOMIC WRITE, memory windows / fast registration): 18 of 19 matched, 0 violations');
    // The third connection's Remote Operational Error is the real responder's own failure: unverifiable.
    expect(r.json.conversations[2]?.differences.map((d) => `${d.class}:${d.kind}`)).toEqual(['unverifiable:responderFault']);
  });

  test('as the requester: FLUSH and ATOMIC WRITE unsupported, the requests after them compared', async () => {
    const r = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', 'requester');
    expect(r.code).toBe(0);
    expect(r.json.violations).toBe(0);
    expect(unsupportedOf(r)).toEqual([
      { kind: 'flush', feature: 'FLUSH', frames: [30] },
      { kind: 'atomicWrite', feature: 'ATOMIC WRITE', frames: [32] },
    ]);
    expect(r.json.conversations[0]).toMatchObject({ matched: 20, expected: 20 });
    expect(r.json.qpErrors.map((e) => ({ qpn: e.qpn, frame: e.frame, status: e.status, opcode: e.opcode, captured: e.captured }))).toEqual([
      { qpn: 0x11, frame: 44, status: 'REM_ACCESS_ERR', opcode: 'RDMA_WRITE', captured: true },
      { qpn: 0x13, frame: 46, status: 'REM_INV_REQ_ERR', opcode: 'FETCH_ADD', captured: true },
      { qpn: 0x15, frame: 48, status: 'REM_OP_ERR', opcode: 'RDMA_WRITE', captured: true },
    ]);
    expect(r.out.split('\n')[0]).toBe('QP 0x11 (requester) went to the error state at frame 44 (PSN 3086871): REM_ACCESS_ERR on RDMA_WRITE: NAK (2) from the responder at PSN 3086871; the capture holds the NAK that ended it');
    expect(r.out).toContain('PASS with 2 frames unsupported (FLUSH, ATOMIC WRITE): 22 of 22 matched, 0 violations\n');
  });

  test.each(['rc-conversation.pcapng', 'rc-conversation-raw.pcap', 'rc-conversation-sll.pcap', 'rc-conversation-sll2.pcap', 'rc-conversation-usec-be.pcap'])('%s (the same frames) gives the same verdicts', async (name) => {
    for (const role of ['responder', 'requester']) {
      const r = await replay(path.join(CAPTURES, name), '--role', role);
      const whole = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', role);
      expect(r.code).toBe(0);
      expect({ ...r.json, file: null, conversations: null, differences: null }).toEqual({ ...whole.json, file: null, conversations: null, differences: null });
    }
  });
});

describe('a zero-length RDMA WRITE with VA 0 and R_Key 0 (C9-88: no key is checked)', () => {
  const write0 = (psn: number): Step => req(0, Opcode.RC_RDMA_WRITE_ONLY, psn, { reth: { va: 0n, rkey: 0, dmaLength: 0 } });

  test('alone in a capture: both roles report, no internal error', async () => {
    const file = save('write0.pcap', capture([write0(100)]));
    for (const role of ['responder', 'requester']) {
      const r = await replay(file, '--role', role);
      expect(r.err).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
    }
  });

  test('answered: the stack answers it as the real responder did, among requests naming a real key', async () => {
    const file = save('write0-acked.pcap', capture([write0(100), ack(5, 100, Syn.ACK, 1), req(10, Opcode.RC_RDMA_WRITE_ONLY, 101, { reth: { va: 0x7f0000001000n, rkey: 0x1943, dmaLength: 4 }, len: 4 }), ack(15, 101, Syn.ACK, 2)]));
    const r = await replay(file, '--role', 'responder');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ matched: 2, expected: 2, violations: 0, unsupported: 0, qpErrors: [] });
  });
});

describe('unsupported requests in a conversation of their own', () => {
  const flush = (us: number, psn: number): Step => req(us, Opcode.RC_FLUSH, psn, { feth: { selectivity: 0, placementType: 1 }, reth: { va: 0x7f0000002000n, rkey: 0x2211, dmaLength: 4096 } });
  const atomicWrite = (us: number, psn: number, value: number): Step => {
    const payload = new Uint8Array(8);
    new DataView(payload.buffer).setBigUint64(0, BigInt(value), true);
    return req(us, Opcode.RC_ATOMIC_WRITE, psn, { reth: { va: 0x7f0000002000n, rkey: 0x2211, dmaLength: 8 }, payload });
  };
  const fetchAdd = (us: number, psn: number): Step => req(us, Opcode.RC_FETCH_ADD, psn, { atomicEth: { va: 0x7f0000002000n, rkey: 0x2211, swapAdd: 1n, compare: 0n } });
  const readResponse0 = (us: number, psn: number, msn: number): Step => ({ us, from: 'b', t: { bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, destQp: QP_A, psn }, aeth: { syndrome: Syn.ACK, msn } } });
  const atomicAck = (us: number, psn: number, msn: number, orig: bigint): Step => ({ us, from: 'b', t: { bth: { opcode: Opcode.RC_ATOMIC_ACKNOWLEDGE, destQp: QP_A, psn }, aeth: { syndrome: Syn.ACK, msn }, atomicAckEth: { origData: orig } } });

  /** FETCH ADD (original 5), ATOMIC WRITE of 100, FETCH ADD (original `orig`), FLUSH, SEND. */
  const steps = (orig: bigint): Step[] => [
    fetchAdd(0, 10),
    atomicAck(5, 10, 1, 5n),
    atomicWrite(10, 11, 100),
    readResponse0(15, 11, 2),
    fetchAdd(20, 12),
    atomicAck(25, 12, 3, orig),
    flush(30, 13),
    readResponse0(35, 13, 4),
    req(40, Opcode.RC_SEND_ONLY, 14, { len: 16 }),
    ack(45, 14, Syn.ACK, 5),
  ];

  test('only unsupported: PASS, exit 0, and what follows the stand-ins is judged', async () => {
    const r = await replay(save('unsupported.pcap', capture(steps(100n))), '--role', 'responder');
    expect(r.code).toBe(0);
    expect(unsupportedOf(r)).toEqual([
      { kind: 'atomicWrite', feature: 'ATOMIC WRITE', frames: [3, 4] },
      { kind: 'flush', feature: 'FLUSH', frames: [7, 8] },
    ]);
    // The second FETCH ADD finds what the ATOMIC WRITE's stand-in wrote; the SEND's ACK counts the FLUSH as a message.
    expect(r.json).toMatchObject({ matched: 3, expected: 3, violations: 0, qpErrors: [] });
    expect(r.out).toContain('PASS with 4 frames unsupported (ATOMIC WRITE, FLUSH): 3 of 3 matched, 0 violations\n');
    const q = await replay(save('unsupported.pcap', capture(steps(100n))), '--role', 'requester');
    expect(q.code).toBe(0);
    expect(q.json).toMatchObject({ matched: 3, expected: 3, violations: 0, unsupported: 2, unsupportedFeatures: ['ATOMIC WRITE', 'FLUSH'], qpErrors: [] });
  });

  test('a wrong answer after a stand-in is still a violation', async () => {
    const r = await replay(save('unsupported-wrong.pcap', capture(steps(7n))), '--role', 'responder');
    expect(r.code).toBe(1);
    expect(r.json.conversations[0]?.differences.filter((d) => d.class === 'violation').map((d) => d.kind)).toEqual(['atomicResult']);
    expect(r.out).toMatch(/\nFAIL: 2 of 3 matched, 1 violations, 4 frames unsupported \(ATOMIC WRITE, FLUSH\)\n$/);
  });
});

test('a QP error the captured responder did not have is named first, with the frame and the reason', async () => {
  // The real responder answered an atomic at an unaligned address; the stack refuses it (class C, as
  // rxe: RESPST_ERR_MISALIGNED_ATOMIC), its QP goes to ERR, and the SEND after it is not answered.
  const steps: Step[] = [
    req(0, Opcode.RC_FETCH_ADD, 10, { atomicEth: { va: 0x7f0000002004n, rkey: 0x2211, swapAdd: 1n, compare: 0n } }),
    { us: 5, from: 'b', t: { bth: { opcode: Opcode.RC_ATOMIC_ACKNOWLEDGE, destQp: QP_A, psn: 10 }, aeth: { syndrome: Syn.ACK, msn: 1 }, atomicAckEth: { origData: 0n } } },
    req(10, Opcode.RC_SEND_ONLY, 11, { len: 16 }),
    ack(15, 11, Syn.ACK, 2),
  ];
  const r = await replay(save('err.pcap', capture(steps)), '--role', 'responder');
  expect(r.code).toBe(1);
  expect(r.out.split('\n')[0]).toBe('QP 0x12 (responder) went to the error state at frame 1 (PSN 10): no error completion (no receive work request in use): responder: atomic at unaligned address 0x7f0000002004; the captured responder went on');
  expect(r.json.qpErrors).toEqual([{ requesterQpn: 0x11, responderQpn: 0x12, qpn: 0x12, frame: 1, psn: 10, status: null, opcode: null, reason: 'responder: atomic at unaligned address 0x7f0000002004', captured: false }]);
});

test('a zero-length FLUSH over IPv6 at the PSN wrap, alone: unsupported, and the replay passes', async () => {
  const f = buildRoceV2Frame({ eth: { src: 1, dst: 2 }, ip: { version: 6, src: 'fd00::1', dst: 'fd00::2' }, bth: { opcode: Opcode.RC_FLUSH, destQp: 0x12, psn: 0xffffff, ackReq: true }, feth: { selectivity: 1, placementType: 2 }, reth: { va: 0n, rkey: 0, dmaLength: 0 } });
  const r = await replay(save('flush-only.pcap', writePcap([{ data: f, timestampNs: 0n }])), '--role', 'responder');
  expect(r.code).toBe(0);
  expect(unsupportedOf(r)).toEqual([{ kind: 'flush', feature: 'FLUSH', frames: [1] }]);
  expect(r.out).toMatch(/\nPASS with 1 frame unsupported \(FLUSH\): 0 of 0 matched, 0 violations\n$/);
});

test('where no stand-in can be built, replay stops at the unsupported request and counts what follows as unsupported', () => {
  const steps: Step[] = [
    req(0, Opcode.RC_SEND_ONLY, 10, { len: 8 }),
    ack(5, 10, Syn.ACK, 1),
    req(10, Opcode.RC_FLUSH, 11, { feth: { selectivity: 0, placementType: 1 }, reth: { va: 0n, rkey: 0, dmaLength: 0 } }),
    { us: 15, from: 'b', t: { bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, destQp: QP_A, psn: 11 }, aeth: { syndrome: Syn.ACK, msn: 2 } } },
    req(20, Opcode.RC_SEND_ONLY, 12, { len: 8 }),
    ack(25, 12, Syn.ACK, 3),
  ];
  const { packets } = capturedPackets(readCapture(capture(steps)));
  // A frame whose Ethernet header is not known (the capture's link type has none, and it was not given one).
  const flushPacket = packets.find((c) => c.frame === 3);
  if (flushPacket === undefined) throw new Error('no FLUSH in the capture');
  flushPacket.p.eth = null;
  const [s] = findRcConversations(packets, packetAddresses).map((c) => replayResponder(c, { timing: 'fast' }));
  expect(s?.violations).toBe(0);
  expect(s?.differences.filter((d) => d.class === 'unsupported').map((d) => ({ kind: d.kind, frames: d.frames, count: d.count }))).toEqual([{ kind: 'flush', frames: [3, 4, 5, 6], count: 4 }]);
  expect(s).toMatchObject({ matched: 1, expected: 1, unsupported: 4, unsupportedFeatures: ['FLUSH'] });
});
