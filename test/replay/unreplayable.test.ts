/**
 * Issue 15 finding 3 and 4: `roce replay` on input it cannot use. A conversation whose RC traffic is
 * addressed to QP1 (a bit-flipped capture) was an internal error with a stack trace (exit 70); it is
 * now reported as not replayable, with the reason. A capture file cut mid-record exited 0 where decode
 * and analyze exit 1; replay now also exits 1 after replaying what the file held.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { readCapture, writePcap } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { writeIcrc, icrcV2 } from '../../packets/icrc';
import { buildRoceV2Frame } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { packetAddresses } from '../../packets/decode';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayRequester } from '../../apps/replay/requester-replay';

let dir: string;
let good: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-unreplayable-'));
  const tap = new PcapTap({ where: 'host-b' });
  const sim = createSimPair({ seed: 3, tap });
  expect(runWorkload(sim, { seed: 3, qps: 2, bytes: 64 * 1024 }).ok).toBe(true);
  sim.clock.runUntilIdle(1_000_000);
  good = path.join(dir, 'good.pcap');
  fs.writeFileSync(good, tap.bytes());
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function replay(...argv: string[]): Promise<{ code: number; json: Record<string, unknown>; err: string }> {
  const o = memoryOutput();
  const code = await run(['replay', '--json', ...argv], o);
  return { code, json: o.out ? (JSON.parse(o.out) as Record<string, unknown>) : {}, err: o.err };
}

/** The capture with the DestQP of every request to `victims` (all responder QPNs if empty) set to `qpn`, ICRCs made valid again. */
function redirect(qpn: number, victims: (destQp: number) => boolean): string {
  const cap = readCapture(fs.readFileSync(good));
  const frames = cap.records.map((rec) => {
    const f = rec.data.slice();
    const d = decodeFrame(f);
    // A's requests go to B (198.18.0.2); their DestQP is the responder's QPN.
    if (d.roce && d.bth !== null && d.ipv4 !== null && d.ipv4.dst === 0xc6120002 && victims(d.bth.destQp)) {
      f[d.bthOff + 5] = (qpn >> 16) & 0xff;
      f[d.bthOff + 6] = (qpn >> 8) & 0xff;
      f[d.bthOff + 7] = qpn & 0xff;
      writeIcrc(f, d.icrcOff, icrcV2(f, d.l3Off, d.icrcOff));
    }
    return { data: f, timestampNs: rec.timestampNs };
  });
  const file = path.join(dir, `to-qp${qpn}-${frames.length}.pcap`);
  fs.writeFileSync(file, writePcap(frames));
  return file;
}

test('the untouched capture replays cleanly (the reference for what follows)', async () => {
  const r = await replay(good, '--role', 'responder');
  expect(r.code).toBe(0);
  expect(r.json).toMatchObject({ ok: true, violations: 0, captureError: null, notReplayable: [] });
});

test('a conversation to QP1 is not replayable, with the reason; the other conversation still replays', async () => {
  const first = new Set<number>();
  const file = redirect(1, (q) => {
    if (first.size === 0) first.add(q);
    return first.has(q);
  });
  for (const role of ['responder', 'requester']) {
    const r = await replay(file, '--role', role);
    expect({ role, code: r.code, err: r.err }).toMatchObject({ role, code: 0 });
    expect(r.err).not.toMatch(/internal error|VerbsError|at /);
    const nr = r.json['notReplayable'] as { responderQpn: number; reason: string }[];
    expect(nr).toHaveLength(1);
    expect(nr[0]?.responderQpn).toBe(1);
    expect(nr[0]?.reason).toMatch(/QP1, the GSI/);
    expect(r.err).toMatch(/not replayable: RC requests addressed to QP1, the GSI/);
    expect(r.json['violations']).toBe(0);
    expect((r.json['conversations'] as unknown[]).length).toBeGreaterThanOrEqual(1);
  }
});

test.each([0, 1])('when every conversation goes to QP%d: exit 1, "no replayable RC conversation", no internal error', async (qpn) => {
  const r = await replay(
    redirect(qpn, () => true),
    '--role',
    'responder',
  );
  expect(r.code).toBe(1);
  expect(r.json).toMatchObject({ ok: false, error: 'no replayable RC conversation' });
  expect(r.err).toMatch(new RegExp(`addressed to QP${qpn}, the ${qpn === 0 ? 'SMI' : 'GSI'}`));
  expect(r.err).not.toMatch(/internal error/);
});

test('a capture file cut mid-record: what it held is replayed, and the exit status is 1 as for decode and analyze', async () => {
  const bytes = fs.readFileSync(good);
  const cut = path.join(dir, 'cut.pcap');
  fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
  const r = await replay(cut, '--role', 'responder');
  expect(r.code).toBe(1);
  expect(r.json['ok']).toBe(false);
  expect(r.json['violations']).toBe(0);
  expect(r.json['captureError']).toMatch(/./);
  expect(r.json['framesIn'] as number).toBeGreaterThan(0);
  expect(r.err).toMatch(/the capture file is damaged/);
  for (const cmd of ['decode', 'analyze']) {
    const o = memoryOutput();
    expect(await run([cmd, cut], o)).toBe(1);
  }
});

describe('a conversation too costly to replay (found by fuzzing the replay front end: a 14 KB capture took seconds)', () => {
  const A = { eth: { src: 0x020000000001, dst: 0x020000000002 }, ip: { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' } };
  function file(name: string, specs: Parameters<typeof buildRoceV2Frame>[0][]): string {
    const f = path.join(dir, name);
    fs.writeFileSync(f, writePcap(specs.map((s, i) => ({ data: buildRoceV2Frame(s), timestampNs: 1_700_000_000_000_000_000n + BigInt(i) * 1000n }))));
    return f;
  }
  const send = (psn: number) => ({ ...A, bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x12, psn, ackReq: true }, payload: new Uint8Array(16) });

  // Each jump stays inside one connection's PSN window (65536, as analyze splits connections), but together they lose more.
  test('requests 60 000 PSNs apart, three times: not replayable, naming the lost PSNs; nothing is built', async () => {
    const f = file('far-apart.pcap', [send(100), send(101), send(60_101), send(120_101), send(180_101)]);
    for (const role of ['responder', 'requester']) {
      const r = await replay(f, '--role', role);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/not replayable: the capture lost 179997 request PSNs between its first and last request; replay fills at most 65536/);
    }
  });

  test('a READ of 2^31 bytes: not replayable, naming the bytes', async () => {
    const f = file('huge-read.pcap', [
      send(7),
      { ...A, bth: { opcode: Opcode.RC_RDMA_READ_REQUEST, destQp: 0x12, psn: 8, ackReq: true }, reth: { va: 0x1000n, rkey: 0x1234, dmaLength: 0x8000_0000 } },
    ]);
    const r = await replay(f, '--role', 'requester');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/not replayable: replaying it would build 2147483664 bytes of messages, fillers and READ buffers; the limit is 67108864/);
  });

  test('called directly, the requester replay builds nothing and says why', () => {
    const cap = readCapture(fs.readFileSync(file('far-apart-2.pcap', [send(1), send(50_001), send(100_001)])));
    const convs = findRcConversations(capturedPackets(cap).packets, packetAddresses);
    expect(convs).toHaveLength(1);
    const s = replayRequester(convs[0]!, { timing: 'fast' });
    expect(s.differences).toEqual([expect.objectContaining({ class: 'unverifiable', kind: 'replayTooCostly' })]);
    expect(s.framesOut).toBe(0);
  });
});
