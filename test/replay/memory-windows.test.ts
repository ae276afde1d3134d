/**
 * `roce replay --role responder` and the keys of memory windows (apps/replay/window-stand-ins.ts): an
 * R_Key in rxe's memory-window index range was bound off the wire, so replay binds a type 2 window
 * under it with a BIND_MW of the stack's QP, again with the new key byte when the capture shows the
 * window bound anew, and the stack's answers to requests through it are judged as any others: accesses,
 * a SEND with Invalidate that frees it, a later access the real responder refused. A key the stack
 * cannot bind a window under is `unsupported`, named with the feature.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { Opcode } from '../../packets/opcodes';
import { type Step, Syn, ack, capture, req } from '../analysis/frames';
import type { QpErrorReport, ReplaySummary } from '../../apps/replay/differences';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { Device } from '../../stack/device';
import { QpType } from '../../stack/qp-type-and-state';
import { WindowStandIns } from '../../apps/replay/window-stand-ins';
import { decodeFrame } from '../../packets/decode';
import type { CapturedPacket } from '../../apps/replay/conversation';
import { buildRoceV2Frame } from '../../packets/build';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-mw-replay-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Json {
  matched: number;
  expected: number;
  violations: number;
  unsupported: number;
  unsupportedFeatures: string[];
  qpErrors: QpErrorReport[];
  conversations: ReplaySummary[];
}

async function replayResponder(name: string, steps: readonly Step[]): Promise<{ code: number; json: Json }> {
  const file = path.join(dir, name);
  fs.writeFileSync(file, capture(steps));
  const t = memoryOutput();
  const code = await run(['replay', file, '--role', 'responder', '--json'], t);
  return { code, json: JSON.parse(t.out) as Json };
}

/** A key of rxe's memory-window index range with key byte `b`. */
const mwKey = (index: number, b: number): number => ((index << 8) | b) >>> 0;
const VA = 0x7f00_2000_0000n;
const write = (us: number, psn: number, rkey: number, va = VA, len = 16): Step =>
  req(us, Opcode.RC_RDMA_WRITE_ONLY, psn, { reth: { va, rkey, dmaLength: len }, len });
const sendInv = (us: number, psn: number, rkey: number): Step => req(us, Opcode.RC_SEND_ONLY_WITH_INVALIDATE, psn, { ieth: rkey, len: 8 });

describe('keys of memory windows', () => {
  // rxe's window indexes: 0x10001..0x20000 up to Linux 6.1, 0x80001..0x100000 since (rxe_param.h).
  test.each([
    ['a 6.1 kernel', 0x10007],
    ['a 6.2+ kernel', 0x80002],
  ])(
    'WRITEs through a window of %s (index %i), a SEND with Invalidate that frees it, then a WRITE the real responder refused: the stack refuses it too, nothing unsupported',
    async (_kernel, index) => {
      const k = mwKey(index, 0x41);
      const r = await replayResponder(`mw-life-${index}.pcap`, [
        write(0, 20, k),
        ack(2, 20, Syn.ACK, 1),
        write(4, 21, k, VA + 64n),
        ack(6, 21, Syn.ACK, 2),
        sendInv(8, 22, k),
        ack(10, 22, Syn.ACK, 3),
        write(12, 23, k),
        ack(14, 23, Syn.NAK_ACC, 3),
      ]);
      expect(r.code).toBe(0);
      expect(r.json).toMatchObject({ matched: 4, expected: 4, violations: 0, unsupported: 0, unsupportedFeatures: [] });
      // The refused WRITE ended the stack's QP where it ended the captured one.
      expect(r.json.qpErrors.map((e) => ({ frame: e.frame, captured: e.captured }))).toEqual([{ frame: 7, captured: true }]);
    },
  );

  test('a key the real responder took, then refused with no invalidation on the wire (revoked off the wire): unverifiable, not a violation', async () => {
    const k = mwKey(0x80005, 0x21);
    const steps = [write(0, 40, k), ack(2, 40, Syn.ACK, 1), write(4, 41, k), ack(6, 41, Syn.NAK_ACC, 1)];
    const r = await replayResponder('mw-revoked.pcap', steps);
    expect(r.json).toMatchObject({ violations: 0, unsupported: 0 });
    const kinds = r.json.conversations.flatMap((c) =>
      (c as unknown as { differences: { class: string; kind: string }[] }).differences.map((d) => `${d.class} ${d.kind}`),
    );
    expect(kinds).toContain('unverifiable keyRevokedOffWire');
    // The same refusal of a key the capture never showed taken stays the stack's to match: the stack refuses it too.
    const fresh = await replayResponder('mw-refused.pcap', [write(0, 40, mwKey(0x80006, 0x21)), ack(2, 40, Syn.NAK_ACC, 0)]);
    expect(fresh.json).toMatchObject({ violations: 0 });
  });

  test("a key outside rxe's window ranges that requests use and a SEND with Invalidate names (a window of a stack with random keys) is a window: invalidated, then refused", async () => {
    const k = 0xb355ca11;
    const r = await replayResponder('random-window.pcap', [
      write(0, 50, k),
      ack(2, 50, Syn.ACK, 1),
      sendInv(4, 51, k),
      ack(6, 51, Syn.ACK, 2),
      write(8, 52, k),
      ack(10, 52, Syn.NAK_ACC, 2),
    ]);
    expect(r.json).toMatchObject({ matched: 3, expected: 3, violations: 0, unsupported: 0 });
    expect(r.json.qpErrors.map((e) => ({ frame: e.frame, captured: e.captured }))).toEqual([{ frame: 5, captured: true }]);
  });

  test("rxe's ACK of a SEND with invalidate it could not carry out leaves the message out of the MSN: a policy difference, not a violation", async () => {
    // As rxe answers a SEND with invalidate naming an ordinary region's key (test/interop/memory-protection.test.ts,
    // inv_user_mr): ACKed with the MSN unchanged, its QP in the error state after. Replay's stand-in
    // region takes the invalidation and counts the message.
    const k = 0x00c0ffee;
    const r = await replayResponder('inv-refused.pcap', [sendInv(0, 60, k), ack(2, 60, Syn.ACK, 0)]);
    expect(r.json).toMatchObject({ violations: 0 });
    const diffs = r.json.conversations.flatMap((c) => c.differences);
    expect(diffs.map((d) => [d.class, d.kind, d.expected, d.got])).toEqual([
      ['policy', 'msnAfterFailedInvalidate', 'RC_ACKNOWLEDGE PSN 60 MSN 0', 'RC_ACKNOWLEDGE PSN 60 MSN 1'],
    ]);
    // Any other MSN difference stays a violation.
    const r2 = await replayResponder('msn-off.pcap', [
      req(0, Opcode.RC_SEND_ONLY, 70, { len: 8 }),
      ack(2, 70, Syn.ACK, 1),
      sendInv(4, 71, k),
      ack(6, 71, Syn.ACK, 3),
    ]);
    expect(r2.json.conversations.flatMap((c) => c.differences).map((d) => [d.class, d.kind])).toEqual([['violation', 'msn']]);
  });

  test('a window bound again with a new key byte (after its invalidation, or with no invalidation on the wire): each key is judged under the bind it had', async () => {
    const k1 = mwKey(0x10008, 0x01);
    const k2 = mwKey(0x10008, 0x02);
    const k3 = mwKey(0x10008, 0x03);
    const r = await replayResponder('mw-rebind.pcap', [
      write(0, 30, k1),
      ack(2, 30, Syn.ACK, 1),
      sendInv(4, 31, k1),
      ack(6, 31, Syn.ACK, 2),
      write(8, 32, k2, VA + 4096n),
      ack(10, 32, Syn.ACK, 3),
      // Bound again by the application (LOCAL_INV and BIND_MW off the wire): replay does the same.
      write(12, 33, k3, VA + 8192n),
      ack(14, 33, Syn.ACK, 4),
    ]);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ matched: 4, expected: 4, violations: 0, unsupported: 0, qpErrors: [] });
  });

  test('a key the stack cannot bind a window under (max_mw reached) is unsupported, with the frames that name it and why', () => {
    const clock = new VirtualClock();
    const link = createMemoryLink({ clock, seed: 1, mtu: 4200, macA: 1, macB: 2 });
    const dev = new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], limits: { maxMw: 0 } });
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const standIns = new WindowStandIns(dev, pd, qp, new Map());
    const k = mwKey(0x10009, 0x10);
    const packet = (frame: number, psn: number): CapturedPacket => {
      const bytes = buildRoceV2Frame({
        eth: { src: 1, dst: 2 },
        ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1' },
        bth: { opcode: Opcode.RC_SEND_ONLY_WITH_INVALIDATE, destQp: qp.qpNum, psn },
        ieth: k,
        payload: new Uint8Array(4),
      });
      const p = decodeFrame(bytes);
      if (!p.roce) throw new Error('not a RoCE frame');
      return { frame, timeNs: 0, bytes, p };
    };
    standIns.beforeRequest(packet(3, 40), false);
    standIns.beforeRequest(packet(5, 41), false);
    expect([...standIns.failures]).toEqual([[k, { psn: 40, frames: [3, 5], why: expect.stringMatching(/max_mw/) }]]);
    expect(standIns.bound.size).toBe(0);
  });
});
