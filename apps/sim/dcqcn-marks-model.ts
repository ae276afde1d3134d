/**
 * A second oracle for the packet-level simulation: one DCQCN reaction point, kept
 * discrete, under independent marks, with the queue taken as fluid. It answers the question the
 * fluid model (dcqcn-fluid.ts) cannot: how much of the simulation's distance from the paper's
 * equations comes from their mean field, and how much from the switch.
 *
 * The paper's equations average every rule: a cut is a continuous pull of R_C·α/2 at the rate of
 * CNPs, and the timer and the byte counter are Poisson clocks reset by each mark. Here the rules
 * act as the hardware's do, one event at a time, on one flow:
 *   - marks: each packet is marked with probability p, independently (a Poisson process at
 *     −ln(1 − p)·R_C(t) per µs, the rate being the flow's own at that instant);
 *   - the NP: a CNP at a mark at least np_min_time_between_cnps after the last CNP;
 *   - the RP: mlx5's rules, as model-reaction-point.ts reads them.
 *
 * The flow's long-run mean rate falls as p grows. The fixed point is the p at which N such flows
 * fill the link, found by bisection over a seeded Monte Carlo of many cuts; the same seed at every
 * p keeps the mean monotone in p. The queue is then RED's inverse at p, as in the fluid model.
 *
 * What it leaves out is what only the switch has: marks that come in clusters (one queue for all
 * flows, so a high queue marks several packets of each in a row), the feedback delay, and flows
 * that cut together (dcqcn-hybrid-model.ts puts N flows on one fluid queue for those). It shares
 * no code with stack/congestion/.
 */
import { Rng } from '../../base/rng';
import { invalid } from '../../stack/errors';
import { type ModelRules, ModelNotificationPoint, ModelReactionPoint } from './model-reaction-point';
import { checkFlowsAndRed, redQueueFor } from './red-marking';

export interface MarksModelInput {
  flows: number;
  linkRateBps: number;
  /** The Ethernet frame of a data packet: what the pacer spaces and the byte counter counts. */
  packetFrameBytes: number;
  /** The same packet on the wire (with preamble, FCS and gap): what fills the link. */
  packetWireBytes: number;
  kminBytes: number;
  kmaxBytes: number;
  pmax: number;
  /** The RP's maximum rate, Mb/s of frame bytes (rp_max_rate, or the line rate). */
  maxRateMbps: number;
  rules: ModelRules;
}

/** What one flow did over a run at a fixed marking probability. */
export interface MarksRun {
  /** The time-mean of R_C, Mb/s of frame bytes. */
  meanRateMbps: number;
  /** The time-mean of α. */
  meanAlpha: number;
  cnpsPerMs: number;
  marksPerMs: number;
  /** Rate decreases counted (after the warm-up), and the time they took. */
  decreases: number;
  durationUs: number;
}

export interface MarksFixedPoint {
  /** The per-flow rate, Gb/s of wire bytes (the fair share). */
  rateGbps: number;
  markProbability: number;
  queueBytes: number;
  alpha: number;
  cnpsPerMs: number;
  /** CNPs per mark at the fixed point: the NP's rule for independent marks. */
  cnpsPerMark: number;
  /** Rate decreases in each Monte Carlo run. */
  decreases: number;
}

/** Gives the time of the next mark after `t`, or null to draw marks at probability p. */
export type MarkSchedule = (t: number) => number;

const NEVER = Number.POSITIVE_INFINITY;
// Read once: a global's lookup costs much more inside a vm context (the test runner's) than a local's.
const { min, max: maxOf, log } = Math;

/**
 * Refuses input the model cannot run, naming the model: the hybrid model (dcqcn-hybrid-model.ts)
 * runs the same reaction points and checks its input here too. A timer or α period of 0 would
 * make a reaction point's events never advance.
 */
export function checkMarksModelInput(m: MarksModelInput, model = 'marks model'): void {
  checkFlowsAndRed(m, model);
  if (!(m.packetWireBytes >= m.packetFrameBytes && m.packetFrameBytes > 0)) throw invalid(`the ${model} needs 0 < frame bytes <= wire bytes`);
  const r = m.rules;
  if (!(r.rpTimeReset > 0 && r.rpByteReset > 0 && r.rpDceTcpRtt > 0 && m.maxRateMbps > 0))
    throw invalid(`the ${model} needs positive rp_time_reset, rp_byte_reset, rp_dce_tcp_rtt and maximum rate`);
  for (const [k, v] of [...Object.entries(m), ...Object.entries(r)])
    if (typeof v === 'number' && !(Number.isFinite(v) && v >= 0)) throw invalid(`${model} input ${k} must be a finite number >= 0, not ${String(v)}`);
}

/**
 * One flow at marking probability `p` (or at the marks `schedule` gives), from unlimited, until
 * `decreases` rate decreases have been counted after a warm-up of a tenth as many.
 */
export function runReactionPointUnderMarks(m: MarksModelInput, p: number, decreases: number, seed = 1, schedule: MarkSchedule | null = null): MarksRun {
  checkMarksModelInput(m);
  if (!(p >= 0 && p < 1)) throw invalid(`the marking probability must be in [0, 1), not ${p}`);
  if (!(Number.isInteger(decreases) && decreases >= 1)) throw invalid(`the marks model needs at least one decrease to count, not ${decreases}`);
  const rng = new Rng(seed);
  const rp = new ModelReactionPoint(m.rules, m.maxRateMbps);
  const np = new ModelNotificationPoint(m.rules.npMinTimeBetweenCnps);
  const perMark = -Math.log1p(-p); // marks per packet, as a Poisson intensity
  const warmUp = Math.ceil(decreases / 10);
  const budget = warmUp + decreases;
  let t = 0;
  let need = -log(1 - rng.float()); // intensity left until the next mark
  let nextScheduled = schedule !== null ? schedule(0) : NEVER;
  let started = false;
  let from = 0;
  let rateArea = 0;
  let alphaArea = 0;
  let cnps = 0;
  let marks = 0;
  while (rp.decreases < budget) {
    const intensity = (perMark * rp.rc) / (8 * m.packetFrameBytes);
    const markAt = schedule !== null ? nextScheduled : intensity > 0 ? t + need / intensity : NEVER;
    const own = rp.due();
    const next = min(markAt, own);
    if (next === NEVER) throw invalid('the marks model has no event left: give p > 0 or a mark schedule');
    const counting = started;
    if (counting) {
      rateArea += rp.rc * (next - t);
      alphaArea += rp.alpha * (next - t);
    }
    need -= intensity * (next - t);
    t = next;
    if (own <= markAt) rp.runDue(t);
    else {
      if (schedule !== null) nextScheduled = schedule(t);
      else need = -log(1 - rng.float());
      if (counting) marks++;
      if (np.mark(t)) {
        if (counting) cnps++;
        rp.cnp(t);
      }
    }
    if (!started && rp.decreases >= warmUp) {
      // The warm-up ends at this cut: count from here.
      started = true;
      from = t;
      rateArea = 0;
      alphaArea = 0;
      cnps = 0;
      marks = 0;
    }
  }
  const span = maxOf(1e-9, t - from);
  return {
    meanRateMbps: rateArea / span,
    meanAlpha: alphaArea / span,
    cnpsPerMs: (1000 * cnps) / span,
    marksPerMs: (1000 * marks) / span,
    decreases,
    durationUs: span,
  };
}

/**
 * The p at which N flows, each as `runReactionPointUnderMarks` finds it, fill the link, or null
 * when even p = pmax leaves them above it (the queue would sit above Kmax).
 */
export function marksModelFixedPoint(m: MarksModelInput, decreases = 20_000, seed = 1): MarksFixedPoint | null {
  checkMarksModelInput(m);
  // The fair share in Mb/s of frame bytes: N flows of packets that take packetWireBytes on the link.
  const share = ((m.linkRateBps / 1e6) * (m.packetFrameBytes / m.packetWireBytes)) / m.flows;
  const run = (p: number): MarksRun => runReactionPointUnderMarks(m, p, decreases, seed);
  if (run(m.pmax).meanRateMbps > share) return null;
  let lo = 1e-9;
  let hi = m.pmax;
  // Rates fall with p; 28 halvings of the logarithm (ln(pmax/1e-9) < 21) leave p to 1e-7 of itself.
  for (let i = 0; i < 28; i++) {
    const mid = Math.sqrt(lo * hi);
    if (run(mid).meanRateMbps > share) lo = mid;
    else hi = mid;
  }
  const p = Math.sqrt(lo * hi);
  const at = run(p);
  return {
    rateGbps: (share / 1e3) * (m.packetWireBytes / m.packetFrameBytes),
    markProbability: p,
    queueBytes: redQueueFor(m, p),
    alpha: at.meanAlpha,
    cnpsPerMs: at.cnpsPerMs,
    cnpsPerMark: at.marksPerMs > 0 ? at.cnpsPerMs / at.marksPerMs : Number.NaN,
    decreases,
  };
}
