/**
 * The DCQCN fluid model: an oracle for the packet-level simulation, independent of
 * the stack. It shares no code with stack/congestion/: the reaction point here is the paper's
 * differential equations, not the state machine.
 *
 * The equations are those of Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of DCQCN
 * and TIMELY" (CoNEXT 2016, §3, eqs. 1-5), the fluid model of the DCQCN paper (SIGCOMM 2015).
 * N flows share one bottleneck of capacity C; rates are in packets per µs:
 *
 *   p(t)    = RED(q(t)): 0 up to Kmin, pmax·(q − Kmin)/(Kmax − Kmin) up to Kmax, 1 above
 *   dq/dt   = N·R_C − C
 *   dα/dt   = g/τ' · ((1 − (1 − p')^(τ'·R_C')) − α)
 *   dR_T/dt = −(R_T − R_C)/τ · (1 − (1 − p')^(τ·R_C'))
 *             + R_AI·R_C'·(1 − p')^(F·B)·p' / ((1 − p')^(−B) − 1)
 *             + R_AI·R_C'·(1 − p')^(F·T·R_C')·p' / ((1 − p')^(−T·R_C') − 1)
 *   dR_C/dt = −R_C·α/(2τ) · (1 − (1 − p')^(τ·R_C'))
 *             + (R_T − R_C)/2 · R_C'·p' / ((1 − p')^(−B) − 1)
 *             + (R_T − R_C)/2 · R_C'·p' / ((1 − p')^(−T·R_C') − 1)
 *
 * where p' and R_C' are taken one feedback delay τ* earlier, τ is the CNP interval
 * (np_min_time_between_cnps), τ' the α period (rp_dce_tcp_rtt), T the rate-increase timer
 * (rp_time_reset), B the byte counter in packets (rp_byte_reset), F the fast-recovery threshold
 * (rp_threshold), g = 1 − rp_dce_tcp_g/1024, and R_AI = rp_ai_rate. The model has no hyper
 * increase and no release to the line rate; rates are capped at the line rate.
 *
 * Its fixed point has R_C = C/N; p* solves dR_C = dR_T = dα = 0 (found here by bisection), and
 * q* = Kmin + p*·(Kmax − Kmin)/pmax. `integrateDcqcnFluid` also runs the equations in time (Euler
 * steps with the delay), because a fixed point that is not stable is not where a system sits.
 */
import { invalid } from '../../stack/errors';
import { checkFlowsAndRed, redMark, redQueueFor } from './red-marking';

export interface FluidInput {
  flows: number;
  linkRateBps: number;
  /** Bytes a data packet takes on the wire (frame, preamble, FCS and gap): rates in packets. */
  packetWireBytes: number;
  kminBytes: number;
  kmaxBytes: number;
  pmax: number;
  /** τ: µs between CNPs of one flow (np_min_time_between_cnps). */
  cnpIntervalUs: number;
  /** τ': the α update period, µs (rp_dce_tcp_rtt). */
  alphaPeriodUs: number;
  /** g: α's gain (1 − rp_dce_tcp_g/1024). */
  g: number;
  /** T: the rate-increase timer, µs (rp_time_reset). */
  timerUs: number;
  /** B: the byte counter, bytes (rp_byte_reset). */
  byteCounterBytes: number;
  /** F: the fast-recovery threshold (rp_threshold). */
  threshold: number;
  /** R_AI: the additive increase, Mb/s (rp_ai_rate). */
  aiRateMbps: number;
  /** τ*: the feedback delay from a mark to the rate change, µs. */
  feedbackDelayUs: number;
}

export interface FluidFixedPoint {
  /** The per-flow rate, Gb/s of wire bytes. */
  rateGbps: number;
  /** The marking probability p*, and the queue that gives it. */
  markProbability: number;
  queueBytes: number;
  alpha: number;
  /** Rate cuts (CNPs acted on) per flow and ms: P(a mark in τ)/τ. */
  cnpsPerMs: number;
  /** R_T − R_C at the fixed point, Gb/s. */
  targetAboveCurrentGbps: number;
}

export interface FluidRun {
  /** Means over the second half of the run. */
  meanQueueBytes: number;
  meanMarkProbability: number;
  meanRateGbps: number;
  /** The queue's range over the second half: a limit cycle shows as a wide one. */
  minQueueBytes: number;
  maxQueueBytes: number;
  /** [µs, queue bytes, per-flow Gb/s], one point per `sampleUs`. */
  overTime: [number, number, number][];
}

/** (1 − p)^(−k) − 1, accurate for small p. */
function grow(p: number, k: number): number {
  return Math.expm1(-k * Math.log1p(-p));
}

/** (1 − p)^k. */
function keep(p: number, k: number): number {
  return Math.exp(k * Math.log1p(-p));
}

/** Events per µs of a counter that fires every `k` packets (or µs·rate) unless a mark resets it: R·p/((1 − p)^(−k) − 1). */
function eventRate(rate: number, p: number, k: number): number {
  if (p <= 0) return rate / k;
  return (rate * p) / grow(p, k);
}

interface Units {
  cap: number;
  rai: number;
  bPackets: number;
}

function unitsOf(m: FluidInput): Units {
  const pktPerUsPerGbps = 1e3 / (8 * m.packetWireBytes);
  return { cap: (m.linkRateBps / 1e9) * pktPerUsPerGbps, rai: (m.aiRateMbps / 1e3) * pktPerUsPerGbps, bPackets: m.byteCounterBytes / m.packetWireBytes };
}

function check(m: FluidInput): void {
  checkFlowsAndRed(m, 'fluid model');
  for (const [k, v] of Object.entries(m))
    if (!(typeof v === 'number' && Number.isFinite(v) && v >= 0)) throw invalid(`fluid model input ${k} must be a finite number >= 0, not ${String(v)}`);
}

/**
 * The feedback terms of the equations for a flow sending at `r` under marking probability `p`
 * (both taken one feedback delay earlier in the run in time): the probability of a cut in τ,
 * α's target (a mark in τ'), the increase events per µs by byte counter and by timer, and R_T's
 * additive rise per µs (the events past F stages, times R_AI).
 */
function feedback(m: FluidInput, u: Units, r: number, p: number): { cut: number; alphaTarget: number; byBytes: number; byTimer: number; targetRise: number } {
  const byBytes = eventRate(r, p, u.bPackets);
  const byTimer = eventRate(r, p, m.timerUs * r);
  return {
    cut: 1 - keep(p, m.cnpIntervalUs * r),
    alphaTarget: 1 - keep(p, m.alphaPeriodUs * r),
    byBytes,
    byTimer,
    targetRise: u.rai * (keep(p, m.threshold * u.bPackets) * byBytes + keep(p, m.threshold * m.timerUs * r) * byTimer),
  };
}

/** dR_C/dt of equation 5. */
function rateDerivative(m: FluidInput, rc: number, rt: number, alpha: number, f: ReturnType<typeof feedback>): number {
  return (-rc * alpha * f.cut) / (2 * m.cnpIntervalUs) + ((rt - rc) / 2) * (f.byBytes + f.byTimer);
}

/** Per-flow packets per µs as Gb/s of wire bytes. */
function toGbps(m: FluidInput, pktPerUs: number): number {
  return (pktPerUs * 8 * m.packetWireBytes) / 1e3;
}

/** α, R_T − R_C and dR_C/dt at rate `r` under a constant marking probability `p`, with dα = dR_T = 0. */
function balance(m: FluidInput, u: Units, r: number, p: number): { alpha: number; cut: number; gap: number; dRc: number } {
  const f = feedback(m, u, r, p);
  // dR_T = 0: (R_T − R_C)·cut/τ = the additive rises.
  const gap = f.cut > 0 ? (f.targetRise * m.cnpIntervalUs) / f.cut : Number.POSITIVE_INFINITY;
  return { alpha: f.alphaTarget, cut: f.cut, gap, dRc: rateDerivative(m, r, r + gap, f.alphaTarget, f) };
}

/** The fixed point of N symmetric flows, or null when none lies on RED's slope (the queue would sit above Kmax). */
export function dcqcnFluidFixedPoint(m: FluidInput): FluidFixedPoint | null {
  check(m);
  const u = unitsOf(m);
  const r = u.cap / m.flows;
  // dR_C/dt falls from positive (no marks: only increases) to negative as p grows.
  let lo = 1e-12;
  let hi = m.pmax;
  if (balance(m, u, r, hi).dRc > 0) return null;
  for (let i = 0; i < 200; i++) {
    const mid = Math.sqrt(lo * hi);
    if (balance(m, u, r, mid).dRc > 0) lo = mid;
    else hi = mid;
  }
  const p = Math.sqrt(lo * hi);
  const b = balance(m, u, r, p);
  return {
    rateGbps: toGbps(m, r),
    markProbability: p,
    queueBytes: redQueueFor(m, p),
    alpha: b.alpha,
    cnpsPerMs: (1000 * b.cut) / m.cnpIntervalUs,
    targetAboveCurrentGbps: toGbps(m, b.gap),
  };
}

/**
 * The equations in time from every flow at the line rate and an empty queue, in Euler steps of
 * `stepUs`, for `durationUs`.
 */
export function integrateDcqcnFluid(m: FluidInput, durationUs: number, stepUs = 0.05, sampleUs = 100): FluidRun {
  check(m);
  if (!(durationUs > 0 && stepUs > 0 && stepUs < durationUs)) throw invalid('the fluid run needs 0 < step < duration');
  const u = unitsOf(m);
  const n = m.flows;
  const lag = Math.max(0, Math.round(m.feedbackDelayUs / stepUs));
  const pHist = new Float64Array(lag + 1);
  const rHist = new Float64Array(lag + 1).fill(u.cap);
  let q = 0; // packets
  let rc = u.cap;
  let rt = u.cap;
  let alpha = 1;
  const steps = Math.round(durationUs / stepUs);
  const half = Math.floor(steps / 2);
  const bytesPerPacket = m.packetWireBytes;
  let sumQ = 0;
  let sumP = 0;
  let sumR = 0;
  let minQ = Number.POSITIVE_INFINITY;
  let maxQ = 0;
  const overTime: [number, number, number][] = [];
  const sampleEvery = Math.max(1, Math.round(sampleUs / stepUs));
  for (let i = 0; i < steps; i++) {
    const qBytes = q * bytesPerPacket;
    const p = redMark(m, qBytes);
    const slot = i % (lag + 1);
    // The values one delay ago sit in the slot about to be overwritten.
    const pd = lag === 0 ? p : pHist[slot]!;
    const rd = lag === 0 ? rc : rHist[slot]!;
    pHist[slot] = p;
    rHist[slot] = rc;
    const f = feedback(m, u, rd, pd);
    const dAlpha = (m.g / m.alphaPeriodUs) * (f.alphaTarget - alpha);
    const dRt = (-(rt - rc) / m.cnpIntervalUs) * f.cut + f.targetRise;
    const dRc = rateDerivative(m, rc, rt, alpha, f);
    const dq = n * rc - u.cap;
    alpha = Math.min(1, Math.max(0, alpha + dAlpha * stepUs));
    rt = Math.min(u.cap, Math.max(0, rt + dRt * stepUs));
    rc = Math.min(u.cap, Math.max(0, rc + dRc * stepUs));
    q = Math.max(0, q + dq * stepUs);
    if (i >= half) {
      const qb = q * bytesPerPacket;
      sumQ += qb;
      sumP += redMark(m, qb);
      sumR += rc;
      minQ = Math.min(minQ, qb);
      maxQ = Math.max(maxQ, qb);
    }
    if ((i + 1) % sampleEvery === 0) overTime.push([Math.round((i + 1) * stepUs), Math.round(q * bytesPerPacket), toGbps(m, rc)]);
  }
  const k = Math.max(1, steps - half);
  return { meanQueueBytes: sumQ / k, meanMarkProbability: sumP / k, meanRateGbps: toGbps(m, sumR / k), minQueueBytes: minQ, maxQueueBytes: maxQ, overTime };
}
