/**
 * ECN → CNP → DCQCN end to end on the memory link, on the virtual clock: A streams RDMA WRITEs to
 * B over a 10 Gb/s link; for a while the A→B direction marks a share of frames CE (a congested
 * switch queue, nic-driver/faults.ts `setEcnCe`). B's notification point answers with CNPs, A's
 * reaction point cuts its rate and its pacer holds the requester to it; once the marking stops,
 * DCQCN's timer and byte counter bring the rate back to the line rate. Deterministic under a seed.
 */
import { createSimPair, type SimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CongestionConfig } from '../../stack/congestion/parameters';

const US = 1000;
const LINE_MBPS = 10_000;
const MSG = 64 * 1024;
const OUTSTANDING = 8;

interface Run {
  sim: SimPair;
  qa: QueuePair;
  qb: QueuePair;
  /** Per 100 µs window: the Gb/s B received and the RP's current rate (Gb/s) at its end. */
  windows: { t: number; gbps: number; rate: number; limited: boolean }[];
}

function setup(
  seed: number,
  congestion: CongestionConfig | undefined,
): { sim: SimPair; qa: QueuePair; qb: QueuePair; cq: CompletionQueue; mrA: MemoryRegion; mrB: MemoryRegion } {
  const sim = createSimPair({ seed, bandwidthBps: LINE_MBPS * 1e6, ...(congestion !== undefined ? { congestion } : {}) });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const mrA = sim.a.regMr(pdA, new Uint8Array(MSG), Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, new Uint8Array(MSG), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
  const cq = sim.a.createCq(1024);
  const cqB = sim.b.createCq(1024);
  const qa = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  const qb = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
  const ea = endpointOf(sim.a, qa, 100);
  const eb = endpointOf(sim.b, qb, 200);
  const opts = {
    pathMtu: 5 as const,
    timeout: 14,
    retryCnt: 7,
    rnrRetry: 7,
    minRnrTimer: 12,
    maxRdAtomic: 1,
    maxDestRdAtomic: 1,
    accessFlags: Access.REMOTE_WRITE,
    qkey: 0,
  };
  connectQp(qa, ea, eb, opts);
  connectQp(qb, eb, ea, opts);
  return { sim, qa, qb, cq, mrA, mrB };
}

/** Streams WRITEs for `phases` (duration, CE share), sampling every 100 µs. */
function stream(seed: number, congestion: CongestionConfig | undefined, phases: readonly [number, number][]): Run {
  const { sim, qa, qb, cq, mrA, mrB } = setup(seed, congestion);
  let wr = 0;
  const post = (): void =>
    qa.postSend({
      wrId: wr++,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [mrA.sge(0, MSG)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: mrB.addr(0), rkey: mrB.rkey },
    });
  for (let i = 0; i < OUTSTANDING; i++) post();
  const windows: Run['windows'] = [];
  const t0 = sim.clock.now();
  let end = t0;
  for (const [dur, ce] of phases) {
    sim.link.faults.aToB.setEcnCe(ce);
    end += dur;
    while (sim.clock.now() < end) {
      const from = sim.clock.now();
      const bytes0 = sim.link.b.stats.rxBytes;
      const to = from + 100 * US;
      // Run the window in small steps, topping the send queue up as WRITEs complete.
      for (let t = from + 10 * US; t <= to; t += 10 * US) {
        sim.clock.runUntil(t);
        for (const c of cq.poll(64)) {
          expect(c.status).toBe(0);
          post();
        }
      }
      const rp = qa.cc?.rp ?? null;
      windows.push({
        t: (to - t0) / US,
        gbps: ((sim.link.b.stats.rxBytes - bytes0) * 8) / (100 * US),
        rate: rp === null ? LINE_MBPS / 1000 : rp.currentRate / 1000,
        limited: rp?.limited ?? false,
      });
    }
  }
  return { sim, qa, qb, windows };
}

const DCQCN: CongestionConfig = { np: true, rp: true, lineRateMbps: LINE_MBPS, params: { npMinTimeBetweenCnps: 50 } };
// 3 ms clean, 5 ms with 10 % of A→B frames CE-marked, 12 ms clean again.
const EPISODE: readonly [number, number][] = [
  [3000 * US, 0],
  [5000 * US, 0.1],
  [12_000 * US, 0],
];

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('DCQCN on the memory link', () => {
  // Under marks drawn at random, where the rate settles depends on the draw: with this seed near
  // 5 Gb/s, as with most seeds (1-8: five near 5 Gb/s, three near 7.5).
  const run = stream(1, DCQCN, EPISODE);
  const w = run.windows;
  const before = w.filter((x) => x.t <= 3000);
  const during = w.filter((x) => x.t > 4000 && x.t <= 8000); // after the first millisecond of marking
  const after = w.filter((x) => x.t > 18_000);

  test('before the marks the sender runs at line rate, unlimited', () => {
    expect(before.every((x) => !x.limited)).toBe(true);
    expect(mean(before.slice(1).map((x) => x.gbps))).toBeGreaterThan(9);
  });

  test('CE marks → CNPs → the rate drops, and the pacer holds the sender to it', () => {
    const a = run.qa.counters;
    const b = run.qb.counters;
    const marked = run.sim.link.faults.aToB.counters.ecnMarked;
    expect(marked).toBeGreaterThan(0);
    expect(b.np_ecn_marked_roce_packets).toBe(marked); // every mark reached B's notification point
    expect(b.np_cnp_sent).toBeGreaterThan(0);
    expect(b.np_cnp_sent).toBeLessThanOrEqual(marked);
    expect(a.rp_cnp_handled).toBe(b.np_cnp_sent); // the B→A direction loses nothing
    expect(a.rp_cnp_ignored).toBe(0);
    expect(during.every((x) => x.limited)).toBe(true);
    const rate = mean(during.map((x) => x.rate));
    expect(rate).toBeLessThan(7);
    // What went on the wire follows the RP's rate (wire bytes include headers: a little above).
    expect(mean(during.map((x) => x.gbps))).toBeLessThan(rate * 1.2);
    expect(mean(during.map((x) => x.gbps))).toBeLessThan(0.75 * mean(before.slice(1).map((x) => x.gbps)));
  });

  test('after the marks stop the rate recovers to the line rate and the QP is unlimited again', () => {
    expect(after.every((x) => !x.limited)).toBe(true);
    expect(mean(after.map((x) => x.gbps))).toBeGreaterThan(9);
    const rp = run.qa.cc!.rp!;
    expect(rp.events.released).toBeGreaterThanOrEqual(1);
    expect(rp.events.decreases).toBeGreaterThan(1);
    expect(rp.events.fastRecovery + rp.events.additive + rp.events.hyper).toBeGreaterThan(0);
  });

  test('deterministic: the same seed gives the same rates and counters; another seed other marks', () => {
    const again = stream(1, DCQCN, EPISODE);
    expect(again.windows).toEqual(w);
    expect(again.qa.counters).toEqual(run.qa.counters);
    expect(again.qb.counters).toEqual(run.qb.counters);
    const other = stream(8, DCQCN, EPISODE);
    expect(other.windows).not.toEqual(w);
  });

  test('without congestion control the same marks change nothing: no CNP, line rate throughout', () => {
    const plain = stream(1, undefined, EPISODE);
    expect(plain.qb.counters.np_cnp_sent).toBe(0);
    expect(plain.qa.cc).toBeNull();
    expect(mean(plain.windows.filter((x) => x.t > 4000 && x.t <= 8000).map((x) => x.gbps))).toBeGreaterThan(9);
  });
});
