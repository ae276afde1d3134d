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

/** A time series over [0, ∞) with adaptive bins, in constant memory. */
export class TimeSeries {
  binNs = FIRST_BIN_NS;
  readonly bins: number[] = [];
  constructor(readonly mode: BinMode) {}

  add(timeNs: number, value: number): void {
    let i = Math.floor(Math.max(0, timeNs) / this.binNs);
    while (i >= MAX_BINS) {
      this.merge();
      i = Math.floor(Math.max(0, timeNs) / this.binNs);
    }
    while (this.bins.length <= i) this.bins.push(0);
    const old = this.bins[i] ?? 0;
    this.bins[i] = this.mode === 'sum' ? old + value : Math.max(old, value);
  }

  private merge(): void {
    const out: number[] = [];
    for (let i = 0; i < this.bins.length; i += 2) {
      const x = this.bins[i] ?? 0;
      const y = this.bins[i + 1] ?? 0;
      out.push(this.mode === 'sum' ? x + y : Math.max(x, y));
    }
    this.bins.length = 0;
    this.bins.push(...out);
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
