/**
 * `roce replay`: the stack plays one side of captured RC conversations.
 * Captures of the stack's own simulated runs, taken on the replayed host's
 * NIC, must replay with no violation at any loss rate; a doctored capture
 * must be caught; the public hardware and rxe captures must pass.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { run } from '../../cli/main';
import { commandContext } from '../../cli/command';
import { memoryOutput } from '../../cli/output';
import { readCapture, writePcap } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { writeIcrc, icrcV2 } from '../../packets/icrc';
import { testUnless, noPublicCaptures, publicCapture } from '../support/skip';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-replay-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A seeded simulated run captured on host A's or host B's NIC. */
function capture(where: 'host-a' | 'host-b', loss: number, seed = 5): string {
  const tap = new PcapTap({ where });
  const sim = createSimPair({ seed, faults: { aToB: { drop: loss }, bToA: { drop: loss } }, tap });
  const r = runWorkload(sim, { seed, qps: 2, bytes: 160 * 1024 });
  expect(r.ok).toBe(true);
  sim.clock.runUntilIdle(1_000_000);
  const file = path.join(dir, `${where}-${loss}-${seed}.pcap`);
  fs.writeFileSync(file, tap.bytes());
  return file;
}

async function replay(...argv: string[]): Promise<{ code: number; json: Record<string, unknown>; err: string }> {
  const o = memoryOutput();
  const code = await run(['replay', '--json', ...argv], o);
  return { code, json: o.out ? (JSON.parse(o.out) as Record<string, unknown>) : {}, err: o.err };
}

describe.each([0, 0.02, 0.1])('the stack replays its own runs at %p loss with no violation', (loss) => {
  test.each(['captured', 'fast'])('as the responder, timing %s', async (timing) => {
    const r = await replay(capture('host-b', loss), '--role', 'responder', '--timing', timing);
    expect(r.code).toBe(0);
    expect(r.json['violations']).toBe(0);
    expect(r.json['matched']).toBe(r.json['expected']);
    expect(r.json['framesIn'] as number).toBeGreaterThan(50);
  });
  test('as the requester', async () => {
    const r = await replay(capture('host-a', loss), '--role', 'requester');
    expect(r.code).toBe(0);
    expect(r.json['violations']).toBe(0);
    expect(r.json['matched']).toBe(r.json['expected']);
  });
});

test('a responder that answered differently is caught: a changed MSN and a changed atomic result', async () => {
  const file = capture('host-b', 0, 8);
  const cap = readCapture(fs.readFileSync(file));
  let msnDone = false;
  let atomicDone = false;
  let atomics = 0;
  const frames = cap.records.map((rec) => {
    const f = rec.data.slice();
    const d = decodeFrame(f);
    if (d.roce && d.bth !== null && d.l3Off >= 0) {
      // B's answers go to A (198.18.0.1).
      const toA = d.ipv4 !== null && d.ipv4.dst === 0xc6120001;
      if (toA && !msnDone && d.info?.name === 'RC_ACKNOWLEDGE' && d.aeth !== null) {
        f[d.bthOff + 12 + 3] = (f[d.bthOff + 12 + 3] ?? 0) ^ 1; // MSN low byte
        msnDone = true;
      } else if (toA && !atomicDone && d.info?.name === 'RC_ATOMIC_ACKNOWLEDGE' && ++atomics === 2) {
        // The first atomic's result seeds the replayed memory; the second must follow from it.
        f[d.bthOff + 16 + 7] = (f[d.bthOff + 16 + 7] ?? 0) ^ 1;
        atomicDone = true;
      } else {
        return { data: f, timestampNs: rec.timestampNs };
      }
      writeIcrc(f, d.icrcOff, icrcV2(f, d.l3Off, d.icrcOff));
    }
    return { data: f, timestampNs: rec.timestampNs };
  });
  expect(msnDone && atomicDone).toBe(true);
  const doctored = path.join(dir, 'doctored.pcap');
  fs.writeFileSync(doctored, writePcap(frames));
  const r = await replay(doctored, '--role', 'responder');
  expect(r.code).toBe(1);
  const kinds = (r.json['differences'] as { kind: string; class: string }[]).filter((d) => d.class === 'violation').map((d) => d.kind);
  expect(kinds).toContain('msn');
  expect(kinds).toContain('atomicResult');
});

const pub = testUnless(noPublicCaptures);
pub('Huawei hardware capture: both roles replay with no violation; its credit counts (codes 5 and 6) are reproduced; coalescing is policy', async () => {
  const f = publicCapture('huawei-hiroce-proxy/roce.pcap');
  const resp = await replay(f, '--role', 'responder');
  expect(resp.code).toBe(0);
  const kinds = new Set((resp.json['differences'] as { kind: string; class: string }[]).map((d) => `${d.class}:${d.kind}`));
  expect([...kinds].filter((k) => k.endsWith(':ackCredits'))).toEqual([]);
  expect([...kinds].every((k) => k.startsWith('policy:'))).toBe(true);
  const req = await replay(f, '--role', 'requester');
  expect(req.code).toBe(0);
  expect(req.json['matched']).toBe(req.json['expected']);
});

pub('rxe READ request capture: the answer cannot be checked (the capture ends first), no violation', async () => {
  const r = await replay(publicCapture('pcpp-pr1603-rxe/rc_read_request_vmware.pcap'), '--role', 'responder');
  expect(r.code).toBe(0);
  const d = r.json['differences'] as { kind: string; class: string; count?: number }[];
  expect(d).toHaveLength(1);
  expect(d[0]).toMatchObject({ class: 'unverifiable', kind: 'extraResponse', count: 256 }); // 64 KiB at MTU 256
});

test('usage errors and a capture without RC traffic', async () => {
  // No file and a terminal on standard input: usage (exit 2). Said explicitly, since a test
  // worker's standard input is a pipe, which the command would read as the capture.
  const o = memoryOutput();
  expect(await run(['replay', '--json'], o, commandContext({}, true))).toBe(2);
  expect((await replay('x.pcap', '--role', 'middle')).code).toBe(2);
  const empty = path.join(dir, 'empty.pcap');
  fs.writeFileSync(empty, writePcap([]));
  const r = await replay(empty);
  expect(r.code).toBe(1);
  expect(r.err).toMatch(/no RC conversation/);
});
