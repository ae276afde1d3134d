/**
 * A second oracle for the packet-level simulation (issue 14): one DCQCN reaction point, kept
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
 *   - the RP: mlx5's rules (the same ones docs/congestion.md lists: the monitor period, clamping,
 *     the cut bounded by rp_min_dec_fac, α per rp_dce_tcp_rtt, the timer and the byte counter
 *     restarting at a cut, fast recovery, additive and hyper increase, the release to unlimited).
 *
 * The flow's long-run mean rate falls as p grows. The fixed point is the p at which N such flows
 * fill the link, found by bisection over a seeded Monte Carlo of many cuts; the same seed at every
 * p keeps the mean monotone in p. The queue is then RED's inverse at p, as in the fluid model.
 *
 * What it leaves out is what only the switch has: marks that come in clusters (one queue for all
 * flows, so a high queue marks several packets of each in a row), the feedback delay, and flows
 * that cut together. This file shares no code with stack/congestion/: it is its own reading of
 * the rules, written as one event loop.
 */
import { Rng } from '../../base/rng';
import { invalid } from '../../stack/errors';

/** The RP and NP settings the model needs, named as the mlx5 parameters (Mb/s, µs). */
export interface MarksModelRules {
  rpRateReduceMonitorPeriod: number;
  rpClampTgtRate: 0 | 1;
  rpClampTgtRateAti: 0 | 1;
  rpTimeReset: number;
  rpByteReset: number;
  rpThreshold: number;
  rpAiRate: number;
  rpHaiRate: number;
  rpMinDecFac: number;
  rpMinRate: number;
  rpRateToSetOnFirstCnp: number;
  rpDceTcpG: number;
  rpDceTcpRtt: number;
  rpInitialAlphaValue: number;
  rpGd: number;
  npMinTimeBetweenCnps: number;
}

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
  rules: MarksModelRules;
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

function check(m: MarksModelInput): void {
  if (!(Number.isInteger(m.flows) && m.flows >= 1)) throw invalid(`the marks model needs at least one flow, not ${m.flows}`);
  if (!(m.kmaxBytes > m.kminBytes && m.kminBytes >= 0 && m.pmax > 0 && m.pmax <= 1)) throw invalid('the marks model needs RED marking with 0 <= kmin < kmax and 0 < pmax <= 1');
  if (!(m.packetWireBytes >= m.packetFrameBytes && m.packetFrameBytes > 0)) throw invalid('the marks model needs 0 < frame bytes <= wire bytes');
  const r = m.rules;
  if (!(r.rpTimeReset > 0 && r.rpByteReset > 0 && r.rpDceTcpRtt > 0 && m.maxRateMbps > 0)) throw invalid('the marks model needs positive rp_time_reset, rp_byte_reset, rp_dce_tcp_rtt and maximum rate');
  for (const [k, v] of [...Object.entries(m), ...Object.entries(r)]) if (typeof v === 'number' && !(Number.isFinite(v) && v >= 0)) throw invalid(`marks model input ${k} must be a finite number >= 0, not ${String(v)}`);
}

/**
 * One flow at marking probability `p` (or at the marks `schedule` gives), from unlimited, until
 * `decreases` rate decreases have been counted after a warm-up of a tenth as many.
 */
export function runReactionPointUnderMarks(m: MarksModelInput, p: number, decreases: number, seed = 1, schedule: MarkSchedule | null = null): MarksRun {
  check(m);
  if (!(p >= 0 && p < 1)) throw invalid(`the marking probability must be in [0, 1), not ${p}`);
  if (!(Number.isInteger(decreases) && decreases >= 1)) throw invalid(`the marks model needs at least one decrease to count, not ${decreases}`);
  const r = m.rules;
  const rng = new Rng(seed);
  const max = m.maxRateMbps;
  const perMark = -Math.log1p(-p); // marks per packet, as a Poisson intensity
  const keep = r.rpDceTcpG / 1024;
  const warmUp = Math.ceil(decreases / 10);
  const budget = warmUp + decreases;
  // The RP's state (the rules in the file's comment).
  let limited = false;
  let rc = max;
  let rt = max;
  let alpha = 0;
  let alphaDue = NEVER;
  let cnpInPeriod = false;
  let lastDecrease = Number.NEGATIVE_INFINITY;
  let pendingDue = NEVER;
  let timerDue = NEVER;
  let timerStage = 0;
  let byteStage = 0;
  let bytes = 0;
  let lastCnp = Number.NEGATIVE_INFINITY;
  // The run.
  let t = 0;
  let need = -Math.log(1 - rng.float()); // intensity left until the next mark
  let nextScheduled = schedule !== null ? schedule(0) : NEVER;
  let done = 0;
  let from = 0;
  let rateArea = 0;
  let alphaArea = 0;
  let cnps = 0;
  let marks = 0;
  const counting = (): boolean => done >= warmUp;

  const decrease = (): void => {
    if (r.rpClampTgtRate === 1 || byteStage > 0 || (r.rpClampTgtRateAti === 1 && timerStage > 0)) rt = rc;
    const cut = Math.min((rc * alpha) / 2 ** (r.rpGd - 10), (rc * (100 - r.rpMinDecFac)) / 100);
    rc = Math.min(max, Math.max(r.rpMinRate, rc - cut));
    timerStage = 0;
    byteStage = 0;
    bytes = 0;
    lastDecrease = t;
    pendingDue = NEVER;
    timerDue = t + r.rpTimeReset;
    done++;
    if (done === warmUp) {
      from = t;
      rateArea = 0;
      alphaArea = 0;
      cnps = 0;
      marks = 0;
    }
  };
  const release = (): void => {
    limited = false;
    rc = max;
    rt = max;
    timerStage = 0;
    byteStage = 0;
    bytes = 0;
    alphaDue = NEVER;
    pendingDue = NEVER;
    timerDue = NEVER;
  };
  const increase = (byTimer: boolean): void => {
    const f = r.rpThreshold;
    if (Math.max(timerStage, byteStage) < f) {
      // fast recovery: R_T stays
    } else if (Math.min(timerStage, byteStage) > f) rt += r.rpHaiRate;
    else rt += r.rpAiRate;
    if (rt > max) rt = max;
    rc = (rt + rc) / 2;
    if (byTimer) timerStage++;
    else byteStage++;
    if (rt >= max && max - rc < 1) release();
  };
  const cnp = (): void => {
    if (counting()) cnps++;
    if (!limited) {
      limited = true;
      alpha = r.rpInitialAlphaValue / 1024;
      alphaDue = t + r.rpDceTcpRtt;
      cnpInPeriod = false;
      rc = max;
      rt = max;
      timerStage = 0;
      byteStage = 0;
      bytes = 0;
      if (r.rpRateToSetOnFirstCnp > 0) {
        rc = Math.max(r.rpMinRate, Math.min(r.rpRateToSetOnFirstCnp, max));
        rt = rc;
        lastDecrease = t;
        timerDue = t + r.rpTimeReset;
        return;
      }
      decrease();
      return;
    }
    cnpInPeriod = true;
    if (t - lastDecrease >= r.rpRateReduceMonitorPeriod) decrease();
    else if (pendingDue === NEVER) pendingDue = lastDecrease + r.rpRateReduceMonitorPeriod;
  };

  while (done < budget) {
    const packetsPerUs = rc / (8 * m.packetFrameBytes);
    const intensity = perMark * packetsPerUs;
    const markAt = schedule !== null ? nextScheduled : intensity > 0 ? t + need / intensity : NEVER;
    const bytesAt = limited ? t + ((r.rpByteReset - bytes) * 8) / rc : NEVER;
    const next = Math.min(markAt, timerDue, bytesAt, alphaDue, pendingDue);
    if (next === NEVER) throw invalid('the marks model has no event left: give p > 0 or a mark schedule');
    const dt = next - t;
    if (counting()) {
      rateArea += rc * dt;
      alphaArea += alpha * dt;
    }
    if (limited) bytes += (rc * dt) / 8;
    need -= intensity * dt;
    t = next;
    if (next === alphaDue) {
      alpha = keep * alpha + (cnpInPeriod ? 1 - keep : 0);
      cnpInPeriod = false;
      alphaDue += r.rpDceTcpRtt;
    } else if (next === pendingDue) {
      decrease();
    } else if (next === timerDue) {
      timerDue += r.rpTimeReset;
      increase(true);
    } else if (next === bytesAt) {
      bytes = 0;
      increase(false);
    } else {
      if (schedule !== null) nextScheduled = schedule(t);
      else need = -Math.log(1 - rng.float());
      if (counting()) marks++;
      if (t - lastCnp >= r.npMinTimeBetweenCnps) {
        lastCnp = t;
        cnp();
      }
    }
  }
  const span = Math.max(1e-9, t - from);
  return { meanRateMbps: rateArea / span, meanAlpha: alphaArea / span, cnpsPerMs: (1000 * cnps) / span, marksPerMs: (1000 * marks) / span, decreases, durationUs: span };
}

/**
 * The p at which N flows, each as `runReactionPointUnderMarks` finds it, fill the link, or null
 * when even p = pmax leaves them above it (the queue would sit above Kmax).
 */
export function marksModelFixedPoint(m: MarksModelInput, decreases = 20_000, seed = 1): MarksFixedPoint | null {
  check(m);
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
    queueBytes: m.kminBytes + (p / m.pmax) * (m.kmaxBytes - m.kminBytes),
    alpha: at.meanAlpha,
    cnpsPerMs: at.cnpsPerMs,
    cnpsPerMark: at.marksPerMs > 0 ? at.cnpsPerMs / at.marksPerMs : Number.NaN,
    decreases,
  };
}
