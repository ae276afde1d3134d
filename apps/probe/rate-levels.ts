/**
 * The DUT's send rate over time, read from the arrival times of its request frames at this stack's
 * driver. A paced requester (a DCQCN reaction point, or a NIC's transmit scheduler at line rate)
 * lets a frame of L bytes go W(L)·8/R after the one before it, W(L) its bytes on the wire
 * (packets/wire-size.ts), so each gap between two frames gives the rate R the requester had when it
 * timed the second: R = W(L_prev)·8 / gap. The path adds the same delay to every frame, so the
 * gaps at the receiver are the sender's.
 *
 * A rate-limited sender holds one rate until its reaction point changes it, so the gaps fall into
 * levels: runs of frames at one rate. A change that comes while the pacer waits re-times that
 * wait, so the gap it ends is at the new rate; one that comes after the wait was over leaves a
 * single gap between the two rates, which belongs to neither level and is dropped.
 *
 * On a live driver frames arrive in bursts (the polling delay), and the gaps say nothing: there the
 * rate is compared over windows on each side of our first CNP instead (`windowCut`).
 */
import { wireBytes } from '../../packets/wire-size';

/** A frame of the DUT's data direction: when it arrived and its bytes (no FCS). */
export interface RateFrame {
  timeNs: number;
  len: number;
}

/** A run of frames at one rate. */
export interface RateLevel {
  /** The arrival of the first frame timed at this rate (the end of the first gap at it), ns. */
  startNs: number;
  /** The arrival of the last frame at this rate, ns. */
  endNs: number;
  /** Mb/s. */
  mbps: number;
  /** Index (in the frames) of the first frame timed at this rate: the change came after frame `first - 1` left. */
  first: number;
  /** Index of the last frame at this rate. */
  last: number;
}

/**
 * How far a frame's arrival may be from where its level's rate puts it, ns: the pacer's timer fires
 * on whole nanoseconds of the virtual clock (stack/congestion/pacer.ts rounds each wait up), so a
 * frame's arrival is its exact time plus less than 1 ns, and a level's rate measured from its first frame
 * to the latest puts the next frame within 2 ns of its arrival; no error accumulates along a level.
 */
export const GAP_NOISE_NS = 2;

/** The smallest change of rate, as a share, that a level at `mbps` of `len`-byte frames shows. */
export function resolution(mbps: number, len: number): number {
  return GAP_NOISE_NS / ((wireBytes(len) * 8 * 1000) / mbps);
}

/**
 * The levels of a paced sender's frames (in arrival order). A frame stays in its level while its
 * arrival is within GAP_NOISE_NS of where the level's rate (measured over the level so far) puts
 * it; the first frame that is not starts a new one. A level of a single gap between two others is a
 * transition and is left out; so is a gap of zero (a burst).
 */
export function pacedLevels(frames: readonly RateFrame[]): RateLevel[] {
  const runs: (RateLevel & { bits: number })[] = [];
  for (let i = 1; i < frames.length; i++) {
    const prev = frames[i - 1]!;
    const f = frames[i]!;
    const gap = f.timeNs - prev.timeNs;
    if (!(gap > 0)) continue;
    const bits = wireBytes(prev.len) * 8;
    const cur = runs[runs.length - 1];
    if (cur !== undefined && cur.last === i - 1) {
      // Where the level's rate puts this frame, from the level's first frame on.
      const span = prev.timeNs - frames[cur.first - 1]!.timeNs;
      const expected = ((cur.bits + bits) * span) / cur.bits;
      if (Math.abs(f.timeNs - frames[cur.first - 1]!.timeNs - expected) <= GAP_NOISE_NS) {
        cur.bits += bits;
        cur.last = i;
        cur.endNs = f.timeNs;
        cur.mbps = (cur.bits * 1000) / (f.timeNs - frames[cur.first - 1]!.timeNs);
        continue;
      }
    }
    runs.push({ startNs: f.timeNs, endNs: f.timeNs, mbps: (bits * 1000) / gap, first: i, last: i, bits });
  }
  // Transitions: one gap between two runs it does not belong to.
  const kept = runs.filter((l, k) => l.last > l.first || k === 0 || k === runs.length - 1);
  // Neighbours at one rate (a transition removed between them) are one level.
  const out: RateLevel[] = [];
  for (const l of kept) {
    const prev = out[out.length - 1];
    if (prev !== undefined && Math.abs(prev.mbps - l.mbps) <= resolution(l.mbps, frames[l.first - 1]!.len) * l.mbps) {
      prev.last = l.last;
      prev.endNs = l.endNs;
    } else out.push({ startNs: l.startNs, endNs: l.endNs, mbps: l.mbps, first: l.first, last: l.last });
  }
  return out;
}

/** The DUT's rate before and after our first CNP, over windows of a live driver's timestamps. */
export interface WindowCut {
  windowNs: number;
  /** Windows wholly before the first CNP (after the DUT's first frame): their median rate and their lower quartile, Mb/s. */
  beforeMbps: number;
  lowerQuartileMbps: number;
  windowsBefore: number;
  /** Windows from the first CNP on while the DUT was still sending: their median rate, Mb/s. */
  afterMbps: number;
  windowsAfter: number;
  /** The rate fell beyond its own variation: every window after below the lower quartile of those before, and the median by a fifth at least. */
  cut: boolean;
}

/**
 * Rates over windows of `windowNs` on each side of our first CNP (at `firstCnpNs`), for timestamps
 * too coarse for single gaps: up to 16 windows before, and after it those in `afterNs` (at least a
 * window) that end before the DUT's last frame, so the end of its transfer is no cut. Quantiles,
 * not means: a window of a stall (a start-up, a pause of the DUT's process) neither makes a cut
 * (every window after must be low) nor hides one. Null without two windows before and one after.
 */
export function windowCut(frames: readonly RateFrame[], firstCnpNs: number, windowNs: number, afterNs: number): WindowCut | null {
  if (frames.length < 2 || !(windowNs > 0)) return null;
  const t0 = frames[0]!.timeNs;
  const tEnd = frames[frames.length - 1]!.timeNs;
  const rateIn = (from: number, to: number): number => {
    let bytes = 0;
    for (const f of frames) if (f.timeNs >= from && f.timeNs < to) bytes += wireBytes(f.len);
    return (bytes * 8 * 1000) / (to - from);
  };
  const before: number[] = [];
  for (let k = 1; k <= 16 && firstCnpNs - k * windowNs >= t0; k++) before.push(rateIn(firstCnpNs - k * windowNs, firstCnpNs - (k - 1) * windowNs));
  const after: number[] = [];
  for (let from = firstCnpNs; from + windowNs <= tEnd && from < firstCnpNs + Math.max(windowNs, afterNs); from += windowNs)
    after.push(rateIn(from, from + windowNs));
  if (before.length < 2 || after.length === 0) return null;
  const quantile = (xs: readonly number[], q: number): number => {
    const s = [...xs].sort((a, b) => a - b);
    const at = q * (s.length - 1);
    const lo = Math.floor(at);
    return s[lo]! + (s[Math.min(s.length - 1, lo + 1)]! - s[lo]!) * (at - lo);
  };
  const mb = quantile(before, 0.5);
  const q1 = quantile(before, 0.25);
  const ma = quantile(after, 0.5);
  return {
    windowNs,
    beforeMbps: mb,
    lowerQuartileMbps: q1,
    windowsBefore: before.length,
    afterMbps: ma,
    windowsAfter: after.length,
    cut: after.every((x) => x < q1) && ma < 0.8 * mb,
  };
}
