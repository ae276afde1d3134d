/**
 * perftest's BW peak (apps/perftest/bw-peak.ts): the shortest time per message over any stretch
 * from a post to a polled completion, found by bisection; held to print_report_bw's double loop
 * over every pair, written out here, on runs of every shape.
 */
import fc from 'fast-check';
import { shortestNsPerMessage } from '../../apps/perftest/bw-peak';
import { Measurement } from '../../apps/perftest/measurement';

/** print_report_bw's loop: every i, every completion j >= i, (tcompleted[j] - tposted[i]) / (j - i + 1). */
function bruteForce(posted: readonly number[], completed: ReadonlyMap<number, number>): number | null {
  let best: number | null = null;
  for (let i = 0; i < posted.length; i++) {
    for (const [j, c] of completed) {
      if (j < i || j >= posted.length) continue;
      const t = (c - (posted[i] as number)) / (j - i + 1);
      if (best === null || t < best) best = t;
    }
  }
  return best;
}

/** A run: post times in batches, completions of every cq_mod-th message (and the last), each after its post. */
const run = fc
  .record({
    n: fc.integer({ min: 1, max: 300 }),
    cqMod: fc.integer({ min: 1, max: 20 }),
    gaps: fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 300, maxLength: 300 }),
    lags: fc.array(fc.integer({ min: 1, max: 50_000 }), { minLength: 300, maxLength: 300 }),
    batch: fc.integer({ min: 1, max: 16 }),
  })
  .map(({ n, cqMod, gaps, lags, batch }) => {
    const posted: number[] = [];
    let t = 1_000_000;
    for (let i = 0; i < n; i++) {
      if (i % batch === 0) t += gaps[i] as number; // a post call's messages share its time
      posted.push(t);
    }
    const completed = new Map<number, number>();
    let last = 0;
    for (let j = 0; j < n; j++) {
      if ((j + 1) % cqMod !== 0 && j !== n - 1) continue;
      // RC completes in order: a completion is polled no earlier than the one before it.
      last = Math.max(last, (posted[j] as number) + (lags[j] as number));
      completed.set(j, last);
    }
    return { posted, completed };
  });

test("the bisection finds print_report_bw's minimum on any run", () => {
  fc.assert(
    fc.property(run, ({ posted, completed }) => {
      const want = bruteForce(posted, completed) as number;
      const got = shortestNsPerMessage({ posted, completed }) as number;
      expect(Math.abs(got - want)).toBeLessThanOrEqual(want * 1e-9 + 1e-9);
    }),
    { numRuns: 300 },
  );
});

test("a run with a burst: the peak is the burst's rate, above the average", () => {
  // 100 messages posted at once at t=0, completing 10 ns apart from 1000 ns; then 100 more, 100 ns apart.
  const posted = Array.from({ length: 200 }, (_, i) => (i < 100 ? 0 : 2000));
  const completed = new Map<number, number>();
  for (let j = 0; j < 100; j++) completed.set(j, 1000 + 10 * (j + 1));
  for (let j = 100; j < 200; j++) completed.set(j, 3000 + 100 * (j - 99));
  const t = shortestNsPerMessage({ posted, completed }) as number;
  expect(t).toBeCloseTo(bruteForce(posted, completed) as number, 6);
  // From the first post to the 100th completion: 2000 ns for 100 messages.
  expect(t).toBeCloseTo(20, 6);
  const m = new Measurement();
  m.keepPeak();
  m.peakSamples?.posted.push(...posted);
  for (const [j, c] of completed) m.peakSamples?.completed.set(j, c);
  m.started = 0;
  m.finished = 13_000;
  m.messages = 200;
  const r = m.bwReport(4096, true);
  // 4096 bytes per 20 ns = 204.8 GB/s = 1638.4 Gb/s; the average 4096 × 200 bytes in 13 µs.
  expect(r.bwPeak).toBeCloseTo(1638.4, 6);
  expect(r.bwAvg).toBeCloseTo((4096 * 200 * 8) / 13_000, 6);
  expect(r.bwPeak).toBeGreaterThan(r.bwAvg);
  // MiB/s: perftest's format_factor 0x100000.
  expect(m.bwReport(4096, false).bwPeak).toBeCloseTo(4096 / 20e-9 / 0x100000, 3);
});

test("no samples (perftest's noPeak): no peak, and the report's bw_peak is 0", () => {
  expect(shortestNsPerMessage({ posted: [], completed: new Map() })).toBeNull();
  expect(shortestNsPerMessage({ posted: [0, 1], completed: new Map() })).toBeNull();
  const m = new Measurement();
  m.started = 0;
  m.finished = 1000;
  m.messages = 10;
  expect(m.peakNsPerMessage()).toBeNull();
  expect(m.bwReport(64, false).bwPeak).toBe(0);
});
