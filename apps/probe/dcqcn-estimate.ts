/**
 * What a DUT's rate levels after our CNPs say about its reaction point, read as DCQCN (Zhu et al.,
 * "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015, §3.2; the mlx5 parameters
 * of stack/congestion/parameters.ts):
 *
 *  - a decrease is R_C ← R_C(1 − α/2) (rp_gd 11), so each cut gives α = 2(1 − R_after/R_before);
 *  - the first increase after a decrease is fast recovery, R_C ← (R_T + R_C)/2, which gives the
 *    target rate: R_T = 2·R_1 − R_0;
 *  - increases come from two sources, both restarted by a decrease: a timer every rp_time_reset
 *    µs (T) and a byte counter every rp_byte_reset bytes sent (B). Which step came from which is
 *    not on the wire, so every assignment of the steps to the two is tried, each step narrowing T
 *    or B to an interval: a timer step m after the decrease at x came at x + m·T, a byte step b
 *    once b·B bytes had been counted since it. The assignments that fit every step (and the
 *    absence of a step where one of them would be due) give T and B as intervals.
 *
 * Where a change lies among the frames, for a level whose first gap ends at frame f (the gap from
 * f − 1 to f is the first at the new rate): a pacer charges each frame's gap when the frame leaves,
 * at the rate then, and re-times a wait in progress when the rate rises (stack/congestion/pacer.ts;
 * a NIC's scheduler is read the same way). So a decrease came in (t[f−2], t[f−1]] and its counter
 * counts from frame f − 1 or f; an increase by the timer came in (t[f−2], t[f]]; one by the byte
 * counter was set off by frame f − 2 or f − 1. The bounds below take each end of these, so they
 * hold for a sender that applies a change one frame sooner or later. Live timestamps widen each
 * time bound by their error.
 */
import type { RateFrame, RateLevel } from './rate-levels';
import { resolution } from './rate-levels';

export interface RateDecrease {
  /** The first frame at the lower rate arrived, ns. */
  atNs: number;
  fromMbps: number;
  toMbps: number;
  /** 2(1 − to/from): the α this cut stands for, were it DCQCN's R_C(1 − α/2). */
  alpha: number;
}

/** An interval a parameter lies in; `hi` null: only a lower bound. */
export interface Bounds {
  lo: number;
  hi: number | null;
}

/** An interval while the search runs (`hi` may be Infinity). */
interface Span {
  lo: number;
  hi: number;
}

export interface DcqcnEstimate {
  decreases: RateDecrease[];
  /** Rate increases after the first decrease. */
  increases: number;
  /** The rate came back to where it was before the CNPs (the reaction point let go), ns after the last decrease; null if not by the end. */
  releasedAfterNs: number | null;
  /** R_T from the first fast-recovery step: 2·R_1 − R_0, Mb/s; null without an increase. */
  targetMbps: number | null;
  /** rp_time_reset, ns, from the steps; null when no assignment fits. */
  timeResetNs: Bounds | null;
  /** rp_byte_reset, bytes, from the steps; null when no assignment fits. */
  byteReset: Bounds | null;
  /** Assignments of the steps to timer and byte counter that fit (0: the DUT does not increase as DCQCN does). */
  fits: number;
  /** Of the first fitting assignment: steps by the timer and by the byte counter. */
  timerSteps: number;
  byteSteps: number;
}

interface Epoch {
  /** Index of the first frame at the cut rate. */
  j: number;
  /** Indices of the first frames of the increases in this epoch. */
  steps: number[];
  /** The last frame whose bytes and time count in this epoch (the frame before the next decrease, or the last frame). */
  end: number;
  /** The steps read end before the epoch does (the rate back, or too near it to show the next step): no bound from an absent step. */
  closed: boolean;
}

interface State {
  b: number;
  m: number;
  B: Span;
  T: Span;
  timerSteps: number;
  byteSteps: number;
}

/** At most this many assignments are followed at once; an interval fits few. */
const MAX_STATES = 4096;

const meet = (x: Span, lo: number, hi: number): Span | null => {
  const out = { lo: Math.max(x.lo, lo), hi: Math.min(x.hi, hi) };
  return out.lo <= out.hi ? out : null;
};

/**
 * The reaction-point figures of a paced DUT: `levels` of its frames (rate-levels.ts pacedLevels),
 * the rate it had before our first CNP (`beforeMbps`, the level in effect then), `errorNs` the
 * timestamps' error.
 */
export function estimateDcqcn(frames: readonly RateFrame[], levels: readonly RateLevel[], firstCnpNs: number, errorNs: number): DcqcnEstimate | null {
  let k0 = -1;
  for (let k = 0; k < levels.length; k++) if (levels[k]!.startNs <= firstCnpNs) k0 = k;
  if (k0 < 0) return null;
  const before = levels[k0]!.mbps;
  const decreases: RateDecrease[] = [];
  const epochs: Epoch[] = [];
  let increases = 0;
  let released: number | null = null;
  for (let k = k0 + 1; k < levels.length; k++) {
    const a = levels[k - 1]!;
    const l = levels[k]!;
    const ep = epochs[epochs.length - 1];
    const res = resolution(l.mbps, frames[l.first - 1]!.len);
    if (l.mbps < a.mbps) {
      decreases.push({ atNs: l.startNs, fromMbps: a.mbps, toMbps: l.mbps, alpha: 2 * (1 - l.mbps / a.mbps) });
      // The frames wholly before this decrease end the epoch before.
      if (ep !== undefined) ep.end = Math.min(ep.end, l.first - 2);
      epochs.push({ j: l.first, steps: [], end: frames.length - 1, closed: false });
      released = null;
      continue;
    }
    if (ep === undefined) continue;
    increases++;
    // Back at the rate before the CNPs: the reaction point is unlimited again, its timers stopped.
    const back = l.mbps >= before * (1 - 2 * res);
    if (back && released === null) released = l.startNs - decreases[decreases.length - 1]!.atNs;
    if (ep.closed) continue;
    ep.steps.push(l.first);
    // Back, or so near that the next step (half as large in fast recovery) may not show: the steps
    // read end here, and no absent step after them says anything.
    if (back || l.mbps - a.mbps < 4 * res * l.mbps) {
      ep.end = l.first;
      ep.closed = true;
    }
  }
  if (decreases.length === 0)
    return { decreases, increases: 0, releasedAfterNs: null, targetMbps: null, timeResetNs: null, byteReset: null, fits: 0, timerSteps: 0, byteSteps: 0 };

  const first = epochs[0]!;
  const r0 = decreases[0]!.toMbps;
  const s1 = first.steps[0];
  const r1 = s1 === undefined ? null : (levels.find((l) => l.first === s1)?.mbps ?? null);
  const targetMbps = r1 === null ? null : 2 * r1 - r0;

  // Prefix sums of frame bytes: bytes of frames [a, b] = sum[b + 1] − sum[a].
  const sum = [0];
  for (const f of frames) sum.push(sum[sum.length - 1]! + f.len);
  const bytes = (a: number, b: number): number => sum[b + 1]! - sum[a]!;
  const t = (i: number): number => frames[Math.max(0, Math.min(frames.length - 1, i))]!.timeNs;
  const e = errorNs + 1;

  let states: State[] = [{ b: 0, m: 0, B: { lo: 0, hi: Number.POSITIVE_INFINITY }, T: { lo: 0, hi: Number.POSITIVE_INFINITY }, timerSteps: 0, byteSteps: 0 }];
  for (const ep of epochs) {
    states = states.map((s) => ({ ...s, b: 0, m: 0 }));
    for (const i of ep.steps) {
      const next: State[] = [];
      for (const s of states) {
        // A byte step: the counter reached (b+1)·B with frame i−1's bytes, not before.
        // Counted from frame j − 1 or j, set off by frame i − 2 or i − 1: b·B was reached by its
        // bytes and not before them.
        const lo = bytes(ep.j, i - 2) - frames[i - 2]!.len;
        const hi = bytes(ep.j - 1, i - 1);
        const b = s.b + 1;
        const B = meet(s.B, lo / b + 1e-9, hi / b);
        if (B !== null) next.push({ ...s, b, B, byteSteps: s.byteSteps + 1 });
        // A timer step: x + m·T in (t[i−2], t[i]] with the decrease x in (t[j−2], t[j−1]].
        const m = s.m + 1;
        const T = meet(s.T, (t(i - 2) - t(ep.j - 1) - e) / m, (t(i) - t(ep.j - 2) + e) / m);
        if (T !== null) next.push({ ...s, m, T, timerSteps: s.timerSteps + 1 });
      }
      states = next.slice(0, MAX_STATES);
    }
    {
      // No step but those read before the epoch's end (or the step that closed the reading): neither
      // source came due unseen.
      // A step that frames up to `end` would show: set off by frame end − 2 at the latest, or fired by t[end − 2].
      const c = bytes(ep.j, Math.max(ep.j, ep.end - 2));
      const d = t(ep.end - 2) - t(ep.j - 1) - e;
      states = states.flatMap((s) => {
        const B = meet(s.B, c / (s.b + 1), Number.POSITIVE_INFINITY);
        const T = meet(s.T, d / (s.m + 1), Number.POSITIVE_INFINITY);
        return B === null || T === null ? [] : [{ ...s, B, T }];
      });
    }
  }
  const hull = (pick: (s: State) => Span): Bounds | null => {
    if (states.length === 0) return null;
    const hi = Math.max(...states.map((s) => pick(s).hi));
    return { lo: Math.min(...states.map((s) => pick(s).lo)), hi: Number.isFinite(hi) ? hi : null };
  };
  return {
    decreases,
    increases,
    releasedAfterNs: released,
    targetMbps,
    timeResetNs: hull((s) => s.T),
    byteReset: hull((s) => s.B),
    fits: states.length,
    timerSteps: states[0]?.timerSteps ?? 0,
    byteSteps: states[0]?.byteSteps ?? 0,
  };
}
