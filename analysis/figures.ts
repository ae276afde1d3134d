/**
 * Per-flow figures in constant memory: time series with a bounded number of
 * bins (the bin width doubles as the capture goes on), a log2 histogram of
 * message sizes and the ACK coalescing counts.
 */

/** At most this many bins per series; reaching it merges neighbours and doubles the width. */
export const MAX_BINS = 256;
/** The first bin width: 1 us. */
export const FIRST_BIN_NS = 1000;

export type BinMode = 'sum' | 'max';

/**
 * A time series over [0, ∞) with adaptive bins, in constant memory. Bins before the first value are
 * zero and not held: a flow that starts late in a long capture would otherwise hold up to
 * `MAX_BINS` zeros from the start, 2 KB a series; a capture of 20 000 short-lived flows held 80 MB
 * of them (docs/performance.md, "Many conversations in little memory").
 */
export class TimeSeries {
  binNs = FIRST_BIN_NS;
  /** Bins `start`, `start + 1`, …; those before `start` are zero. */
  private held: number[] = [];
  private start = 0;
  constructor(readonly mode: BinMode) {}

  /** Every bin from the first, zeros included. */
  get bins(): number[] {
    const out = new Array<number>(this.start).fill(0);
    for (const x of this.held) out.push(x);
    return out;
  }

  add(timeNs: number, value: number): void {
    let i = Math.floor(Math.max(0, timeNs) / this.binNs);
    while (i >= MAX_BINS) {
      this.merge();
      i = Math.floor(Math.max(0, timeNs) / this.binNs);
    }
    if (this.held.length === 0) this.start = i;
    while (i < this.start) {
      // Earlier than the first value held (capture times need not increase): the zeros come back.
      this.held.unshift(0);
      this.start--;
    }
    const k = i - this.start;
    while (this.held.length <= k) this.held.push(0);
    const old = this.held[k] ?? 0;
    this.held[k] = this.mode === 'sum' ? old + value : Math.max(old, value);
  }

  /** Merges neighbours (bins 2j and 2j + 1 become bin j) and doubles the width. */
  private merge(): void {
    const start = Math.floor(this.start / 2);
    const out: number[] = [];
    for (let k = 0; k < this.held.length; k++) {
      const j = Math.floor((this.start + k) / 2) - start;
      const x = this.held[k] ?? 0;
      // A bin alone in its pair is combined with the zero beside it, as when the zeros were held.
      if (j === out.length) out.push(this.mode === 'sum' ? 0 + x : Math.max(0, x));
      else out[j] = this.mode === 'sum' ? (out[j] ?? 0) + x : Math.max(out[j] ?? 0, x);
    }
    this.held = out;
    this.start = start;
    this.binNs *= 2;
  }
}

/** Sizes in log2 buckets: bucket k counts sizes in (2^(k-1), 2^k]; bucket 0 holds 0 and 1. */
export class SizeHistogram {
  readonly counts: number[] = [];
  add(size: number): void {
    const k = size <= 1 ? 0 : Math.ceil(Math.log2(size));
    while (this.counts.length <= k) this.counts.push(0);
    this.counts[k] = (this.counts[k] ?? 0) + 1;
  }
  /** Non-empty buckets as { upTo, count }. */
  buckets(): { upTo: number; count: number }[] {
    const out: { upTo: number; count: number }[] = [];
    this.counts.forEach((c, k) => {
      if (c > 0) out.push({ upTo: 2 ** k, count: c });
    });
    return out;
  }
}

/** Running min / mean / max / count of a latency, in ns. */
export class Stat {
  count = 0;
  sum = 0;
  min = Infinity;
  max = -Infinity;
  add(v: number): void {
    this.count++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }
  toJson(): { count: number; minNs: number | null; meanNs: number | null; maxNs: number | null } {
    if (this.count === 0) return { count: 0, minNs: null, meanNs: null, maxNs: null };
    return { count: this.count, minNs: this.min, meanNs: Math.round(this.sum / this.count), maxNs: this.max };
  }
}

/** The figures of one requester flow. */
export class FlowFigures {
  /** New (first-transmission) payload bytes: SEND/WRITE data, READ response data. */
  readonly goodput = new TimeSeries('sum');
  /** PSNs sent and not yet acknowledged, the largest value seen in each bin. */
  readonly outstanding = new TimeSeries('max');
  readonly sizes = new SizeHistogram();
  readonly completion = new Stat();
  readonly readLatency = new Stat();
  readonly atomicLatency = new Stat();
  /** Request packets sent with AckReq (first transmissions). */
  ackReqPackets = 0;
  /** ACK frames (AETH ACK, ACKNOWLEDGE opcode). */
  acks = 0;
  /** New request packets (first transmissions). */
  newRequests = 0;
  goodputBytes = 0;
  firstNs = -1;
  lastNs = -1;

  touch(timeNs: number): void {
    if (this.firstNs < 0) this.firstNs = timeNs;
    this.lastNs = timeNs;
  }
}
