/**
 * `roce replay` says why. Frames the stack cannot reproduce would be `unsupported`, named with the
 * feature, never violations; replay goes on past them, so the rest is still judged. FLUSH, ATOMIC
 * WRITE, SEND with Invalidate of a fast-registered key and the keys of memory windows (bound off the
 * wire: replay binds a type 2 window of its QP under them) are executed by the stack and judged as any
 * request is. When the stack's QP goes to the error
 * state, the report's first line (and the JSON's `qpErrors`) says at which captured frame and why. A
 * zero-length RDMA WRITE with VA 0 and R_Key 0 (legal: C9-88) does not stop replay with an internal error.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { Opcode } from '../../packets/opcodes';
import { buildRoceV2Frame } from '../../packets/build';
import { writePcap } from '../../packets/pcap';
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
  json: {
    ok: boolean;
    violations: number;
    matched: number;
    expected: number;
    unsupported: number;
    unsupportedFeatures: string[];
    qpErrors: (QpErrorReport & { responderQpn: number })[];
    conversations: ReplaySummary[];
  };
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
  r.json.conversations.flatMap((c) =>
    c.differences.filter((d: Difference) => d.class === 'unsupported').map((d) => ({ kind: d.kind, feature: d.feature, frames: d.frames })),
  );

describe('the bundled capture replays without violations in both roles', () => {
  test('as the responder: FLUSH, ATOMIC WRITE and two SENDs with Invalidate of fast-registered keys judged, nothing unsupported, the QP errors named first', async () => {
    const r = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', 'responder');
    expect(r.code).toBe(0);
    expect(r.json.violations).toBe(0);
    // The keys 0xc0de11 and 0xc0de12 (one index, two key bytes) are bound by REG_MRs of the stack's QP, as a fast-registration region's.
    expect(unsupportedOf(r)).toEqual([]);
    expect(r.json.unsupported).toBe(0);
    expect(r.json.unsupportedFeatures).toEqual([]);
    // The FLUSH and ATOMIC WRITE are executed: the first conversation's 19 answers, their READ responses of no data included, all match.
    expect(r.json.conversations[0]).toMatchObject({ matched: 19, expected: 19 });
    // The stale R_Key (frame 43) and the atomic on a QP without atomics (frame 45) end the QP, as they ended the captured one.
    expect(r.json.qpErrors.map((e) => ({ qpn: e.qpn, frame: e.frame, captured: e.captured }))).toEqual([
      { qpn: 0x12, frame: 43, captured: true },
      { qpn: 0x14, frame: 45, captured: true },
    ]);
    const lines = r.out.split('\n');
    expect(lines[0]).toBe(
      'QP 0x12 (responder) went to the error state at frame 43 (PSN 3086871): no error completion (no receive work request in use): responder: WRITE rkey 0xa1b00 va 0x7f3a1c200000 len 16: invalid key; the captured responder sent the same kind of NAK there',
    );
    expect(lines[1]).toMatch(/^QP 0x14 \(responder\) went to the error state at frame 45 \(PSN 9176082\): .*RC_FETCH_ADD is not enabled on this QP/);
    expect(lines.find((l) => /^(PASS|FAIL)/.test(l))).toBe('PASS: 20 of 21 matched, 0 violations');
    // The third connection's Remote Operational Error is the real responder's own failure: unverifiable.
    expect(r.json.conversations[2]?.differences.map((d) => `${d.class}:${d.kind}`)).toEqual(['unverifiable:responderFault']);
  });

  test('as the requester: FLUSH and ATOMIC WRITE sent as captured, every request compared', async () => {
    const r = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', 'requester');
    expect(r.code).toBe(0);
    expect(r.json.violations).toBe(0);
    expect(unsupportedOf(r)).toEqual([]);
    expect(r.json.conversations[0]).toMatchObject({ matched: 22, expected: 22 });
    expect(r.json.qpErrors.map((e) => ({ qpn: e.qpn, frame: e.frame, status: e.status, opcode: e.opcode, captured: e.captured }))).toEqual([
      { qpn: 0x11, frame: 44, status: 'REM_ACCESS_ERR', opcode: 'RDMA_WRITE', captured: true },
      { qpn: 0x13, frame: 46, status: 'REM_INV_REQ_ERR', opcode: 'FETCH_ADD', captured: true },
      { qpn: 0x15, frame: 48, status: 'REM_OP_ERR', opcode: 'RDMA_WRITE', captured: true },
    ]);
    expect(r.out.split('\n')[0]).toBe(
      'QP 0x11 (requester) went to the error state at frame 44 (PSN 3086871): REM_ACCESS_ERR on RDMA_WRITE: NAK (2) from the responder at PSN 3086871; the capture holds the NAK that ended it',
    );
    expect(r.out).toContain('PASS: 24 of 24 matched, 0 violations\n');
  });

  test.each(['rc-conversation.pcapng', 'rc-conversation-raw.pcap', 'rc-conversation-sll.pcap', 'rc-conversation-sll2.pcap', 'rc-conversation-usec-be.pcap'])(
    '%s (the same frames) gives the same verdicts',
    async (name) => {
      for (const role of ['responder', 'requester']) {
        const r = await replay(path.join(CAPTURES, name), '--role', role);
        const whole = await replay(path.join(CAPTURES, 'rc-conversation.pcap'), '--role', role);
        expect(r.code).toBe(0);
        expect({ ...r.json, file: null, conversations: null, differences: null }).toEqual({
          ...whole.json,
          file: null,
          conversations: null,
          differences: null,
        });
      }
    },
  );
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
    const file = save(
      'write0-acked.pcap',
      capture([
        write0(100),
        ack(5, 100, Syn.ACK, 1),
        req(10, Opcode.RC_RDMA_WRITE_ONLY, 101, { reth: { va: 0x7f0000001000n, rkey: 0x1943, dmaLength: 4 }, len: 4 }),
        ack(15, 101, Syn.ACK, 2),
      ]),
    );
    const r = await replay(file, '--role', 'responder');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ matched: 2, expected: 2, violations: 0, unsupported: 0, qpErrors: [] });
  });
});

describe('FLUSH and ATOMIC WRITE in a conversation of their own', () => {
  const flush = (us: number, psn: number): Step =>
    req(us, Opcode.RC_FLUSH, psn, { feth: { selectivity: 0, placementType: 1 }, reth: { va: 0x7f0000002000n, rkey: 0x2211, dmaLength: 4096 } });
  const atomicWrite = (us: number, psn: number, value: number): Step => {
    const payload = new Uint8Array(8);
    new DataView(payload.buffer).setBigUint64(0, BigInt(value), true);
    return req(us, Opcode.RC_ATOMIC_WRITE, psn, { reth: { va: 0x7f0000002000n, rkey: 0x2211, dmaLength: 8 }, payload });
  };
  const fetchAdd = (us: number, psn: number): Step =>
    req(us, Opcode.RC_FETCH_ADD, psn, { atomicEth: { va: 0x7f0000002000n, rkey: 0x2211, swapAdd: 1n, compare: 0n } });
  const readResponse0 = (us: number, psn: number, msn: number): Step => ({
    us,
    from: 'b',
    t: { bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, destQp: QP_A, psn }, aeth: { syndrome: Syn.ACK, msn } },
  });
  const atomicAck = (us: number, psn: number, msn: number, orig: bigint): Step => ({
    us,
    from: 'b',
    t: { bth: { opcode: Opcode.RC_ATOMIC_ACKNOWLEDGE, destQp: QP_A, psn }, aeth: { syndrome: Syn.ACK, msn }, atomicAckEth: { origData: orig } },
  });

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

  test('FLUSH and ATOMIC WRITE are executed and judged in both roles: PASS, nothing unsupported', async () => {
    const r = await replay(save('flush-atomic-write.pcap', capture(steps(100n))), '--role', 'responder');
    expect(r.code).toBe(0);
    expect(unsupportedOf(r)).toEqual([]);
    // The second FETCH ADD finds what the ATOMIC WRITE wrote; each READ response of no data is compared; the SEND's ACK counts the FLUSH as a message.
    expect(r.json).toMatchObject({ matched: 5, expected: 5, violations: 0, unsupported: 0, qpErrors: [] });
    expect(r.out).toContain('PASS: 5 of 5 matched, 0 violations\n');
    const q = await replay(save('flush-atomic-write.pcap', capture(steps(100n))), '--role', 'requester');
    expect(q.code).toBe(0);
    expect(q.json).toMatchObject({ matched: 5, expected: 5, violations: 0, unsupported: 0, unsupportedFeatures: [], qpErrors: [] });
  });

  test('a wrong answer after an ATOMIC WRITE is a violation: the stack wrote the value, the captured responder returned another', async () => {
    const r = await replay(save('atomic-write-wrong.pcap', capture(steps(7n))), '--role', 'responder');
    expect(r.code).toBe(1);
    expect(r.json.conversations[0]?.differences.filter((d) => d.class === 'violation').map((d) => d.kind)).toEqual(['atomicResult']);
    expect(r.out).toMatch(/\nFAIL: 4 of 5 matched, 1 violations\n$/);
  });
});

test('a QP error the captured responder did not have is named first, with the frame and the reason', async () => {
  // The real responder answered an atomic at an unaligned address; the stack refuses it (class C, as
  // rxe: RESPST_ERR_MISALIGNED_ATOMIC), its QP goes to ERR, and the SEND after it is not answered.
  const steps: Step[] = [
    req(0, Opcode.RC_FETCH_ADD, 10, { atomicEth: { va: 0x7f0000002004n, rkey: 0x2211, swapAdd: 1n, compare: 0n } }),
    {
      us: 5,
      from: 'b',
      t: { bth: { opcode: Opcode.RC_ATOMIC_ACKNOWLEDGE, destQp: QP_A, psn: 10 }, aeth: { syndrome: Syn.ACK, msn: 1 }, atomicAckEth: { origData: 0n } },
    },
    req(10, Opcode.RC_SEND_ONLY, 11, { len: 16 }),
    ack(15, 11, Syn.ACK, 2),
  ];
  const r = await replay(save('err.pcap', capture(steps)), '--role', 'responder');
  expect(r.code).toBe(1);
  expect(r.out.split('\n')[0]).toBe(
    'QP 0x12 (responder) went to the error state at frame 1 (PSN 10): no error completion (no receive work request in use): responder: atomic at unaligned address 0x7f0000002004; the captured responder went on',
  );
  expect(r.json.qpErrors).toEqual([
    {
      requesterQpn: 0x11,
      responderQpn: 0x12,
      qpn: 0x12,
      frame: 1,
      psn: 10,
      status: null,
      opcode: null,
      reason: 'responder: atomic at unaligned address 0x7f0000002004',
      captured: false,
    },
  ]);
});

test('a FLUSH of a whole region over IPv6 at the PSN wrap, answered: judged, the replay passes', async () => {
  const frame = (bth: { opcode: number; destQp: number; psn: number; ackReq?: boolean }, src: string, dst: string, rest: object): Uint8Array =>
    buildRoceV2Frame({ eth: { src: src === 'fd00::1' ? 1 : 2, dst: src === 'fd00::1' ? 2 : 1 }, ip: { version: 6, src, dst }, bth, ...rest });
  const f = frame({ opcode: Opcode.RC_FLUSH, destQp: 0x12, psn: 0xffffff, ackReq: true }, 'fd00::1', 'fd00::2', {
    feth: { selectivity: 1, placementType: 2 },
    reth: { va: 0x7f0000001000n, rkey: 0x2211, dmaLength: 0 },
  });
  const w = frame({ opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: 0x12, psn: 0, ackReq: true }, 'fd00::1', 'fd00::2', {
    reth: { va: 0x7f0000001000n, rkey: 0x2211, dmaLength: 4 },
    payload: new Uint8Array(4),
  });
  const a1 = frame({ opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, destQp: 0x11, psn: 0xffffff }, 'fd00::2', 'fd00::1', { aeth: { syndrome: Syn.ACK, msn: 1 } });
  const a2 = frame({ opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn: 0 }, 'fd00::2', 'fd00::1', { aeth: { syndrome: Syn.ACK, msn: 2 } });
  const file = save('flush-wrap.pcap', writePcap([f, a1, w, a2].map((data, i) => ({ data, timestampNs: BigInt(i * 1000) }))));
  for (const role of ['responder', 'requester']) {
    const r = await replay(file, '--role', role);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ violations: 0, unsupported: 0, qpErrors: [] });
  }
});

describe('SEND with Invalidate', () => {
  const sendInv = (us: number, psn: number, rkey: number): Step => req(us, Opcode.RC_SEND_ONLY_WITH_INVALIDATE, psn, { ieth: rkey, len: 8 });

  test("of a key in rxe's memory-window range: replay binds a type 2 window under it, the SEND is judged, nothing unsupported", async () => {
    const key = (0x10005 << 8) | 0x33;
    const file = save(
      'mw-inv.pcap',
      capture([sendInv(0, 10, key), ack(5, 10, Syn.ACK, 1), req(10, Opcode.RC_SEND_ONLY, 11, { len: 4 }), ack(15, 11, Syn.ACK, 2)]),
    );
    const r = await replay(file, '--role', 'responder');
    expect(r.code).toBe(0);
    expect(unsupportedOf(r)).toEqual([]);
    expect(r.json).toMatchObject({ matched: 2, expected: 2, violations: 0, unsupported: 0, unsupportedFeatures: [], qpErrors: [] });
  });

  test('a key invalidated, then named again with a new key byte after the region was bound again: judged, nothing unsupported', async () => {
    const file = save(
      'fr-inv.pcap',
      capture([
        sendInv(0, 10, 0x4411),
        ack(5, 10, Syn.ACK, 1),
        sendInv(10, 11, 0x4412),
        ack(15, 11, Syn.ACK, 2),
        sendInv(20, 12, 0x4411),
        ack(25, 12, Syn.ACK, 3),
      ]),
    );
    const r = await replay(file, '--role', 'responder');
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ matched: 3, expected: 3, violations: 0, unsupported: 0, qpErrors: [] });
  });
});
