/**
 * Where the switch marks ECN (nic-driver/star-switch.ts `EcnMarking.at`): on departure by default,
 * on the bytes still queued behind the departing frame (HPCC's ns-3, switch-node.cc
 * SwitchNotifyDequeue; Zhu's ns3-rdma, qbb-net-device.cc DequeueAndTransmit), or on arrival, on
 * the bytes ahead of the joining frame: the switch alone on a burst, frame by frame, then
 * `roce sim --ecn ...,at=`. The same at the scale of an incast: ecn-marking-incast.test.ts.
 */
import { VirtualClock } from '../../base/clock';
import { type EcnMarking, type EcnMarkingPoint, createStarSwitch } from '../../nic-driver/star-switch';
import { LinkConfigError } from '../../nic-driver/link-config-error';
import { roce } from '../support/cli';

const A = 0x02_00_00_00_00_0a;
const B = 0x02_00_00_00_00_0b;
const C = 0x02_00_00_00_00_0c;
const FRAME = 1000;

/** An Ethernet + IPv4 frame of FRAME bytes from `src` to `dst`, numbered by its IP identification, with ECN codepoint `ecn`. */
function ipFrame(src: number, dst: number, id: number, ecn: number): Uint8Array {
  const f = new Uint8Array(FRAME);
  const v = new DataView(f.buffer);
  v.setUint16(0, Math.floor(dst / 2 ** 32));
  v.setUint32(2, dst >>> 0);
  v.setUint16(6, Math.floor(src / 2 ** 32));
  v.setUint32(8, src >>> 0);
  v.setUint16(12, 0x0800);
  f[14] = 0x45;
  f[15] = ecn; // DSCP 0
  v.setUint16(16, FRAME - 14);
  v.setUint16(18, id);
  f[22] = 64;
  f[23] = 17;
  return f;
}

interface Departure {
  id: number;
  ce: boolean;
  /** Bytes queued behind the frame as it left, and ahead of it as it joined (from the port's own queue samples). */
  behind: number;
  ahead: number;
}

/**
 * Hosts A and B each send `perHost` frames back to back to C at t = 0, ECT(0) unless `notEct`;
 * returns what left C's port, in order. The port's queue samples give each frame's queue: its
 * departure is a fall of FRAME bytes (what is left behind it), its arrival a rise (ahead of it
 * before it, FIFO: the k-th rise is the k-th fall's frame).
 */
function burst(at: EcnMarkingPoint | undefined, kBytes: number, perHost: number, notEct = false): { out: Departure[]; marked: number } {
  const clock = new VirtualClock();
  const left: { id: number; ce: boolean }[] = [];
  const ecn: EcnMarking = at === undefined ? { kind: 'threshold', kBytes } : { kind: 'threshold', kBytes, at };
  const sw = createStarSwitch({
    clock,
    macs: [A, B, C],
    linkRateBps: 10e9,
    bufferBytes: 1e6,
    propagationNs: 1000,
    ecn,
    capture: (f) => left.push({ id: (f[18]! << 8) | f[19]!, ce: (f[15]! & 3) === 3 }),
  });
  for (let i = 0; i < perHost; i++) {
    sw.hosts[0]!.txBurst([ipFrame(A, C, i, notEct ? 0 : 2)]);
    sw.hosts[1]!.txBurst([ipFrame(B, C, 100 + i, notEct ? 0 : 2)]);
  }
  clock.runUntilIdle();
  const s = sw.stats.ports[2]!.samples;
  const rises: number[] = [];
  const falls: number[] = [];
  for (let i = 2; i < s.length; i += 2) (s[i + 1]! > s[i - 1]! ? rises : falls).push(i);
  expect(rises.length).toBe(2 * perHost);
  expect(falls.length).toBe(2 * perHost);
  const received = sw.hosts[2]!.rxBurst(100);
  expect(received.map((f) => (f[15]! & 3) === 3)).toEqual(left.map((d) => d.ce));
  const out = left.map((d, k) => ({ ...d, behind: s[falls[k]! + 1]!, ahead: s[rises[k]! - 1]! }));
  const marked = sw.stats.ecnMarked;
  sw.close();
  return { out, marked };
}

describe('the switch alone: a burst of two hosts into one port, threshold marking at 2500 bytes', () => {
  // Two hosts at line rate into one port: a pair of frames arrives each frame time and one
  // leaves, so the queue grows by a frame per frame time while they send, then drains. A pair
  // arriving as a frame leaves joins first (its events were scheduled first).
  const K = 2500;

  test('on departure (the default): a frame is marked when at least K bytes are queued behind it as it leaves', () => {
    const { out, marked } = burst(undefined, K, 5);
    expect(burst('dequeue', K, 5).out).toEqual(out);
    for (const d of out) expect({ id: d.id, ce: d.ce }).toEqual({ id: d.id, ce: d.behind >= K });
    expect(marked).toBe(out.filter((d) => d.ce).length);
    // Departure order a0 b0 a1 b1 a2 b2 a3 b3 a4 b4 with 0, 2000, 3000, 4000, 5000, 4000, 3000,
    // 2000, 1000, 0 bytes behind: the frames leaving the high queue are marked, the last ones,
    // leaving a queue that has drained below K, are not.
    expect(out.map((d) => d.behind)).toEqual([0, 2000, 3000, 4000, 5000, 4000, 3000, 2000, 1000, 0]);
    expect(out.map((d) => d.ce)).toEqual([false, false, true, true, true, true, true, false, false, false]);
  });

  test('on arrival (at: enqueue): a frame is marked when at least K bytes are queued ahead of it as it joins', () => {
    const { out, marked } = burst('enqueue', K, 5);
    for (const d of out) expect({ id: d.id, ce: d.ce }).toEqual({ id: d.id, ce: d.ahead >= K });
    expect(marked).toBe(out.filter((d) => d.ce).length);
    // The same frames find 0, 0, 1000, 2000, 2000, 3000, 3000, 4000, 4000, 5000 bytes ahead as
    // they join (a pair arrives each frame time, one frame leaves): the last five are marked, the
    // very last one although it leaves an empty queue; its mark reports a queue long gone.
    expect(out.map((d) => d.ahead)).toEqual([0, 0, 1000, 2000, 2000, 3000, 3000, 4000, 4000, 5000]);
    expect(out.map((d) => d.ce)).toEqual([false, false, false, false, false, true, true, true, true, true]);
  });

  test('the two points mark different frames of the same queue: arrival marks later frames, which leave later', () => {
    const deq = burst('dequeue', K, 5).out;
    const enq = burst('enqueue', K, 5).out;
    // The same frames leave in the same order at the same queue lengths.
    expect(enq.map(({ id, behind, ahead }) => ({ id, behind, ahead }))).toEqual(deq.map(({ id, behind, ahead }) => ({ id, behind, ahead })));
    const firstMarked = (o: Departure[]): number => o.findIndex((d) => d.ce);
    expect(firstMarked(deq)).toBeLessThan(firstMarked(enq));
  });

  test('frames that are not ECN-capable are never marked, at either point', () => {
    for (const at of ['dequeue', 'enqueue'] as const) {
      const { out, marked } = burst(at, 0, 5, true);
      expect(marked).toBe(0);
      expect(out.every((d) => !d.ce)).toBe(true);
    }
  });

  test('a marking point other than dequeue or enqueue is refused', () => {
    const o = { clock: new VirtualClock(), macs: [A, B], linkRateBps: 10e9, bufferBytes: 1e6, propagationNs: 0 };
    expect(() => createStarSwitch({ ...o, ecn: { kind: 'threshold', kBytes: 1, at: 'sideways' as EcnMarkingPoint } })).toThrow(LinkConfigError);
    expect(() => createStarSwitch({ ...o, ecn: { kind: 'threshold', kBytes: 1, at: 'sideways' as EcnMarkingPoint } })).toThrow(/'dequeue' or 'enqueue'/);
  });
});

describe('roce sim --ecn ...,at=', () => {
  test.each([
    [['--ecn', 'kmin=5K,kmax=200K,pmax=0.01,at=sideways'], /--ecn: at= is dequeue or enqueue, not "sideways"/],
    [['--ecn', 'threshold=50K,kmin=5K'], /threshold= stands alone/],
    [['--ecn', 'at=enqueue'], /RED needs kmin=, kmax= and pmax=/],
  ] as const)('%j is a usage error', async (argv, msg) => {
    const r = await roce('sim', ...argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(msg);
  });

  test('at=enqueue and at=dequeue (the default) run the same flows and mark differently', async () => {
    const run = async (ecn: string): Promise<{ ecnMarked: number; steady: { frames: number } }> => {
      const r = await roce('sim', '--hosts', '3', '--duration', '2ms', '--ecn', ecn, '--json');
      expect(r.code).toBe(0);
      return JSON.parse(r.out) as { ecnMarked: number; steady: { frames: number } };
    };
    const byDefault = await run('kmin=5K,kmax=200K,pmax=0.01');
    const dequeue = await run('kmin=5K,kmax=200K,pmax=0.01,at=dequeue');
    const enqueue = await run('kmin=5K,kmax=200K,pmax=0.01,at=enqueue');
    expect(dequeue).toEqual(byDefault);
    expect(enqueue.ecnMarked).toBeGreaterThan(0);
    expect(enqueue.ecnMarked).not.toBe(dequeue.ecnMarked);
    const th = await run('threshold=20K,at=enqueue');
    expect(th.ecnMarked).toBeGreaterThan(0);
  }, 60_000);
});
