/**
 * The hybrid model (apps/sim/dcqcn-hybrid-model.ts), a third oracle: N discrete reaction
 * points on one fluid queue. Its queue integrates what the flows send, its marks follow RED, the
 * NP's rule holds, the same seed gives the same run, and with eight flows marked on arrival it
 * crosses Kmax where two never do, and marked on departure hardly; bad input is refused with a
 * typed error.
 */
import { type HybridInput, runDcqcnHybrid } from '../../apps/sim/dcqcn-hybrid-model';
import { VerbsError } from '../../stack/errors';
import { paperMarksInput } from '../support/model-rules';

const paper = (flows: number): HybridInput => ({ ...paperMarksInput(flows), feedbackDelayUs: 4.44, bufferBytes: 12e6, windowPackets: 0 });

test('flows that fit the link: no queue, no mark, each at its maximum rate', () => {
  const r = runDcqcnHybrid({ ...paper(3), maxRateMbps: 10_000 }, 2_000, 1_000);
  expect(r.queueMaxBytes).toBe(0);
  expect(r.markProbability).toBe(0);
  expect(r.cnpsPerFlowPerMs).toBe(0);
  for (const g of r.flowsGbps) expect(g).toBeCloseTo(10 * (1106 / 1082), 9);
});

test('no marking below a Kmin above the buffer: the queue grows by what the flows send beyond the port, up to the buffer', () => {
  // Two flows at 30 000 Mb/s of frames into a port that drains 40 Gb/s of wire bytes.
  const m: HybridInput = { ...paper(2), maxRateMbps: 30_000, kminBytes: 2e7, kmaxBytes: 3e7, bufferBytes: 1e6 };
  const r = runDcqcnHybrid(m, 100, 0, 1, 0.25, 25);
  const drain = (40e9 / 8e6) * (1082 / 1106); // frame bytes per µs
  const growth = (2 * 30_000) / 8 - drain;
  for (const [t, q] of r.overTime) expect(q).toBeCloseTo(Math.min(1e6, growth * t), -1);
  expect(r.markProbability).toBe(0);
  const full = runDcqcnHybrid(m, 500, 0);
  expect(full.queueMaxBytes).toBe(1e6);
});

test("DCQCN holds the fair share; the NP's rule bounds the CNPs; the same seed gives the same run", () => {
  const r = runDcqcnHybrid(paper(2), 40_000, 20_000);
  const total = r.flowsGbps.reduce((a, g) => a + g, 0);
  expect(total).toBeGreaterThan(0.95 * 40);
  expect(total).toBeLessThanOrEqual(40 * 1.0001);
  expect(r.markProbability).toBeGreaterThan(0);
  expect(r.cnpsPerFlowPerMs).toBeGreaterThan(0);
  expect(r.cnpsPerFlowPerMs).toBeLessThanOrEqual(1000 / 50);
  expect(runDcqcnHybrid(paper(2), 40_000, 20_000)).toEqual(r);
  expect(runDcqcnHybrid(paper(2), 40_000, 20_000, 2)).not.toEqual(r);
}, 60_000);

test("two flows stay on RED's slope; eight marked on arrival synchronise and cross Kmax, where every packet is marked; marked on departure they stay near the slope", () => {
  for (const marking of ['dequeue', 'enqueue'] as const) {
    const two = runDcqcnHybrid({ ...paper(2), marking }, 100_000, 50_000);
    expect(two.aboveKmax).toBe(0);
    expect(two.markProbability).toBeLessThan(0.01);
  }
  const eight = runDcqcnHybrid({ ...paper(8), marking: 'enqueue' }, 100_000, 50_000);
  expect(eight.queueMaxBytes).toBeGreaterThan(200_000);
  expect(eight.aboveKmax).toBeGreaterThan(0.02);
  // Above Kmax RED marks every packet: the marking exceeds what the slope alone could give (pmax).
  expect(eight.markProbability).toBeGreaterThan(0.01 + eight.aboveKmax * 0.5);
  // Marked on departure, a mark reaches the flows a base delay after the queue it measured, not
  // after the queue too: their cuts follow the queue closely and no longer overshoot together.
  // Seed 1: 0.3 % of packets above Kmax and 0.88 % marked, against 5.9 % and 6.2 % on arrival.
  const onDeparture = runDcqcnHybrid(paper(8), 100_000, 50_000);
  expect(onDeparture.aboveKmax).toBeLessThan(eight.aboveKmax / 5);
  expect(onDeparture.markProbability).toBeLessThan(0.01);
}, 60_000);

test('bad input is refused with a typed error', () => {
  expect(() => runDcqcnHybrid({ ...paper(2), flows: 0 }, 100, 0)).toThrow(VerbsError);
  expect(() => runDcqcnHybrid({ ...paper(2), kmaxBytes: 10 }, 100, 0)).toThrow(/kmin < kmax/);
  expect(() => runDcqcnHybrid({ ...paper(2), bufferBytes: 0 }, 100, 0)).toThrow(/buffer/);
  expect(() => runDcqcnHybrid(paper(2), 100, 100)).toThrow(/steady from < duration/);
  expect(() => runDcqcnHybrid(paper(2), 100, 0, 1, 0)).toThrow(/0 < step/);
  // A timer of 0 would never let a reaction point's events advance: refused, not run forever.
  expect(() => runDcqcnHybrid({ ...paper(2), rules: { ...paper(2).rules, rpTimeReset: 0 } }, 100, 0)).toThrow(/the hybrid model needs positive rp_time_reset/);
  expect(() => runDcqcnHybrid({ ...paper(2), windowPackets: -1 }, 100, 0)).toThrow(/hybrid model input windowPackets/);
  expect(() => runDcqcnHybrid({ ...paper(2), marking: 'sideways' as 'dequeue' }, 100, 0)).toThrow(/marks at 'dequeue' or 'enqueue'/);
});
