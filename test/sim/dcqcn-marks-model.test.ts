/**
 * The marks model (apps/sim/dcqcn-marks-model.ts), a second oracle: one reaction point
 * kept discrete under independent marks. Its rules are checked on scripted marks against the
 * rules written out here, its random marks against the NP's renewal law, and its fixed point
 * against what a fixed point must be; bad input is refused with a typed error.
 */
import { type MarksModelInput, marksModelFixedPoint, runReactionPointUnderMarks } from '../../apps/sim/dcqcn-marks-model';
import type { ModelRules } from '../../apps/sim/model-reaction-point';
import { VerbsError } from '../../stack/errors';
import { paperMarksInput, paperModelRules } from '../support/model-rules';

const paperRules = paperModelRules;

const paper = paperMarksInput;

/**
 * Scripted rules: α held at 1/2 (G = 1024 keeps it, an initial α of 512), no monitor period and no
 * NP interval, the cut unbounded, a 1000 Mb/s maximum, and no increase unless asked for.
 */
const scripted = (over: Partial<ModelRules>): MarksModelInput => ({
  ...paper(1),
  maxRateMbps: 1000,
  rules: {
    ...paperRules,
    rpRateReduceMonitorPeriod: 0,
    npMinTimeBetweenCnps: 0,
    rpMinDecFac: 0,
    rpDceTcpG: 1024,
    rpInitialAlphaValue: 512,
    rpDceTcpRtt: 1e6,
    rpTimeReset: 1e9,
    rpByteReset: 1e15,
    rpThreshold: 1000,
    ...over,
  },
});

test('a CNP at every mark: each cuts R_C by α/2, and the mean rate is the time-mean of the steps', () => {
  // Marks at t = 1, 2, 3, ...: the first is the first CNP (the warm-up of one decrease), nine more are counted.
  const run = runReactionPointUnderMarks(scripted({}), 0, 9, 1, (t) => Math.floor(t) + 1);
  let expected = 0;
  for (let k = 1; k <= 9; k++) expected += 1000 * 0.75 ** k;
  expect(run.meanRateMbps).toBeCloseTo(expected / 9, 9);
  expect(run.durationUs).toBeCloseTo(9, 12);
  expect(run.cnpsPerMs).toBeCloseTo(1000, 9);
  expect(run.marksPerMs).toBeCloseTo(1000, 9);
  expect(run.meanAlpha).toBeCloseTo(0.5, 12);
});

test('between cuts, fast recovery halves R_T − R_C, then additive increase raises R_T; a cut clamps R_T to R_C', () => {
  // Marks every 10 µs from 0.5; the timer every 3 µs after a cut: events at +3, +6 (fast recovery, F = 2), +9 (additive, 8 Mb/s).
  const m = scripted({ rpTimeReset: 3, rpThreshold: 2, rpAiRate: 8 });
  const run = runReactionPointUnderMarks(m, 0, 20, 1, (t) => 0.5 + 10 * (Math.floor((t - 0.5) / 10) + 1));
  // The rules written out: cuts at 0.5 + 10k; the warm-up is 2 decreases (cuts 0 and 1), then the 20 cycles from cut 1 to cut 21 count.
  let rc = 1000;
  let rt = 1000;
  let area = 0;
  for (let k = 0; k <= 21; k++) {
    rt = rc; // clamped
    rc *= 0.75; // R_C·(1 − α/2)
    if (k === 21) break;
    const w = k >= 1 ? 1 : 0;
    area += w * 3 * rc;
    rc = (rt + rc) / 2; // fast recovery
    area += w * 3 * rc;
    rc = (rt + rc) / 2; // fast recovery
    area += w * 3 * rc;
    rt = Math.min(1000, rt + 8); // additive
    rc = (rt + rc) / 2;
    area += w * 1 * rc;
  }
  expect(run.durationUs).toBeCloseTo(200, 9);
  expect(run.meanRateMbps).toBeCloseTo(area / 200, 6);
});

test("independent marks at a constant rate: CNPs per mark follow the NP's renewal law, 1/(1 + λτ)", () => {
  // A cut of nothing (rp_min_dec_fac 100) keeps the rate at its maximum: 8000 Mb/s of 1000-byte frames, one packet a µs.
  const m: MarksModelInput = { ...paper(1), packetFrameBytes: 1000, packetWireBytes: 1024, maxRateMbps: 8000, rules: { ...paperRules, rpMinDecFac: 100 } };
  const p = 0.002;
  const run = runReactionPointUnderMarks(m, p, 20_000, 7);
  const lambda = -Math.log1p(-p); // marks per µs
  expect(run.meanRateMbps).toBeCloseTo(8000, 9);
  expect(run.marksPerMs / (1000 * lambda)).toBeGreaterThan(0.98);
  expect(run.marksPerMs / (1000 * lambda)).toBeLessThan(1.02);
  const perMark = run.cnpsPerMs / run.marksPerMs;
  expect(perMark / (1 / (1 + lambda * 50))).toBeGreaterThan(0.98);
  expect(perMark / (1 / (1 + lambda * 50))).toBeLessThan(1.02);
});

test('the fixed point: N flows fill the link at p*, p* grows with N, and the same seed gives the same figures', () => {
  const ps: number[] = [];
  for (const n of [2, 4, 8]) {
    const m = paper(n);
    const fp = marksModelFixedPoint(m, 5_000);
    if (fp === null) throw new Error(`no fixed point for ${n} flows`);
    expect(fp.rateGbps).toBeCloseTo(40 / n, 9);
    const share = (40_000 * (1082 / 1106)) / n;
    const at = runReactionPointUnderMarks(m, fp.markProbability, 5_000, 1);
    expect(Math.abs(at.meanRateMbps / share - 1)).toBeLessThan(1e-3);
    // A little more marking leaves the flows below their share, a little less above it.
    expect(runReactionPointUnderMarks(m, fp.markProbability * 1.05, 5_000, 1).meanRateMbps).toBeLessThan(share);
    expect(runReactionPointUnderMarks(m, fp.markProbability / 1.05, 5_000, 1).meanRateMbps).toBeGreaterThan(share);
    expect(fp.queueBytes).toBeCloseTo(5_000 + (fp.markProbability / 0.01) * 195_000, 6);
    expect(fp.cnpsPerMark).toBeGreaterThan(0);
    expect(fp.cnpsPerMark).toBeLessThan(1);
    ps.push(fp.markProbability);
  }
  expect(ps[1]!).toBeGreaterThan(ps[0]!);
  expect(ps[2]!).toBeGreaterThan(ps[1]!);
  expect(marksModelFixedPoint(paper(2), 5_000)).toEqual(marksModelFixedPoint(paper(2), 5_000));
  // Another seed: the same p* to within the Monte Carlo's spread.
  const other = marksModelFixedPoint(paper(2), 5_000, 2)!;
  expect(Math.abs(other.markProbability / ps[0]! - 1)).toBeLessThan(0.05);
  // So many flows that even pmax leaves them above their share: no fixed point on RED's slope.
  expect(marksModelFixedPoint({ ...paper(64), pmax: 0.0001 }, 2_000)).toBeNull();
}, 60_000);

test('bad input is refused with a typed error', () => {
  expect(() => marksModelFixedPoint({ ...paper(2), flows: 0 })).toThrow(VerbsError);
  expect(() => marksModelFixedPoint({ ...paper(2), kmaxBytes: 1_000 })).toThrow(/kmin < kmax/);
  expect(() => marksModelFixedPoint({ ...paper(2), packetWireBytes: 1000 })).toThrow(/frame bytes <= wire bytes/);
  expect(() => marksModelFixedPoint({ ...paper(2), rules: { ...paperRules, rpAiRate: Number.NaN } })).toThrow(/rpAiRate/);
  expect(() => runReactionPointUnderMarks(paper(2), 1, 10)).toThrow(/\[0, 1\)/);
  expect(() => runReactionPointUnderMarks(paper(2), 0.001, 0)).toThrow(/at least one decrease/);
  expect(() => runReactionPointUnderMarks(paper(2), 0, 10)).toThrow(/no event left/);
});
