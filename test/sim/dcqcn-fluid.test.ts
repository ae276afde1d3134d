/**
 * The DCQCN fluid model (the oracle, apps/sim/dcqcn-fluid.ts): its fixed point solves the
 * equations, the equations run in time settle there, the fixed point moves as the model says it
 * must with more flows, and bad input is refused with a typed error.
 */
import { type FluidInput, dcqcnFluidFixedPoint, integrateDcqcnFluid } from '../../apps/sim/dcqcn-fluid';
import { VerbsError } from '../../stack/errors';

/** The DCQCN paper's setting at 40 Gb/s with 1 KiB payloads. */
const paper = (flows: number): FluidInput => ({
  flows,
  linkRateBps: 40e9,
  packetWireBytes: 1106,
  kminBytes: 5_000,
  kmaxBytes: 200_000,
  pmax: 0.01,
  cnpIntervalUs: 50,
  alphaPeriodUs: 55,
  g: 1 / 256,
  timerUs: 55,
  byteCounterBytes: 10 * 1024 * 1024,
  threshold: 5,
  aiRateMbps: 40,
  feedbackDelayUs: 4,
});

/** dR_C/dt of the paper's equation 5 at a steady p, R_C, R_T, α (rates in packets/µs). */
function dRc(m: FluidInput, p: number, rc: number, rt: number, alpha: number): number {
  const b = m.byteCounterBytes / m.packetWireBytes;
  const cut = 1 - (1 - p) ** (m.cnpIntervalUs * rc);
  const byBytes = (rc * p) / ((1 - p) ** -b - 1);
  const byTimer = (rc * p) / ((1 - p) ** (-m.timerUs * rc) - 1);
  return (-rc * alpha * cut) / (2 * m.cnpIntervalUs) + ((rt - rc) / 2) * (byBytes + byTimer);
}

test('the fixed point shares the link equally and zeroes dR_C/dt, written out here from the paper independently', () => {
  for (const n of [2, 4, 8]) {
    const m = paper(n);
    const fp = dcqcnFluidFixedPoint(m);
    if (fp === null) throw new Error(`no fixed point for ${n} flows`);
    expect(fp.rateGbps).toBeCloseTo(40 / n, 6);
    const pktPerUs = (fp.rateGbps * 1e3) / (8 * m.packetWireBytes);
    const rt = pktPerUs + (fp.targetAboveCurrentGbps * 1e3) / (8 * m.packetWireBytes);
    // α* = P(a mark in one α period).
    expect(fp.alpha).toBeCloseTo(1 - (1 - fp.markProbability) ** (m.alphaPeriodUs * pktPerUs), 9);
    // Cuts per ms = P(a mark in τ)/τ.
    expect(fp.cnpsPerMs).toBeCloseTo((1000 * (1 - (1 - fp.markProbability) ** (m.cnpIntervalUs * pktPerUs))) / m.cnpIntervalUs, 9);
    // The rate's derivative vanishes; either side of p* it does not.
    const scale = (pktPerUs * fp.alpha) / m.cnpIntervalUs;
    expect(Math.abs(dRc(m, fp.markProbability, pktPerUs, rt, fp.alpha)) / scale).toBeLessThan(1e-6);
    expect(fp.queueBytes).toBeCloseTo(5_000 + (fp.markProbability / 0.01) * 195_000, 6);
    expect(fp.markProbability).toBeGreaterThan(0);
    expect(fp.markProbability).toBeLessThan(0.01);
  }
});

test('more flows need more marking: p* and q* grow with N', () => {
  const q = [2, 4, 8, 12].map((n) => dcqcnFluidFixedPoint(paper(n))?.queueBytes ?? Number.NaN);
  for (let i = 1; i < q.length; i++) expect(q[i]!).toBeGreaterThan(q[i - 1]!);
});

test('the equations run in time from the line rate settle at the fixed point', () => {
  for (const n of [2, 8]) {
    const m = paper(n);
    const fp = dcqcnFluidFixedPoint(m)!;
    const run = integrateDcqcnFluid(m, 100_000, 0.05);
    expect(run.meanRateGbps).toBeCloseTo(40 / n, 2);
    expect(Math.abs(run.meanQueueBytes - fp.queueBytes) / fp.queueBytes).toBeLessThan(0.02);
    expect(Math.abs(run.meanMarkProbability - fp.markProbability) / fp.markProbability).toBeLessThan(0.02);
    // The start: every flow at the line rate fills the queue past Kmax before the cuts bite.
    expect(Math.max(...run.overTime.map(([, q]) => q))).toBeGreaterThan(200_000);
  }
});

test("a marking too weak for the flows has no fixed point on RED's slope", () => {
  expect(dcqcnFluidFixedPoint({ ...paper(64), pmax: 0.0001 })).toBeNull();
});

test('bad input is refused with a typed error', () => {
  expect(() => dcqcnFluidFixedPoint({ ...paper(2), flows: 0 })).toThrow(VerbsError);
  expect(() => dcqcnFluidFixedPoint({ ...paper(2), kmaxBytes: 1_000 })).toThrow(/kmin < kmax/);
  expect(() => dcqcnFluidFixedPoint({ ...paper(2), timerUs: Number.NaN })).toThrow(/timerUs/);
  expect(() => integrateDcqcnFluid(paper(2), 10, 20)).toThrow(/step < duration/);
});
