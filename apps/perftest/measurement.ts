/**
 * What a side's loop measures and how: the start and end of the measured
 * part, the messages in it, the latency samples, perftest's duration-mode
 * window, the latency statistics and the bandwidth report perftest sends.
 */
import type { BwReport } from '../oob/perftest-messages';
import type { ResolvedConfig } from './config';
import { shortestNsPerMessage } from './bw-peak';

export interface LatencyStats {
  min: number;
  /** The nearest-rank median. */
  p50: number;
  /**
   * perftest's t_typical: the median as perftest's get_median() takes it (the mean of the two middle
   * samples of an even count).
   */
  typical: number;
  p90: number;
  p99: number;
  /** The 99.9th percentile. */
  p999: number;
  max: number;
  avg: number;
  /** The standard deviation over every sample (perftest's t_stdev: the square root of the mean squared deviation). */
  stdev: number;
  /**
   * The whole distribution: [lower bound µs, count] of each non-empty bucket, buckets spaced four
   * to an octave (bucket k holds [2^(k/4), 2^((k+1)/4)) µs; below 1 µs counts in the first), as
   * bench/c/udp_pingpong.c reports its own, so the two can be laid side by side.
   */
  histogram: [number, number][];
}

/** Buckets per octave of the latency histogram. */
const BUCKETS_PER_OCTAVE = 4;

/** [lower bound µs, count] of the non-empty log-spaced buckets of `samplesUs`. */
export function latencyHistogram(samplesUs: readonly number[]): [number, number][] {
  const counts = new Map<number, number>();
  for (const us of samplesUs) {
    const k = us < 1 ? 0 : Math.floor(Math.log2(us) * BUCKETS_PER_OCTAVE);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => a[0] - b[0]).map(([k, n]) => [Math.round(2 ** (k / BUCKETS_PER_OCTAVE) * 1000) / 1000, n]);
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

export function latencyStats(samplesUs: readonly number[]): LatencyStats | null {
  if (samplesUs.length === 0) return null;
  const s = [...samplesUs].sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  const n = s.length;
  const avg = s.reduce((a, b) => a + b, 0) / n;
  const middle = n >> 1;
  const typical = n % 2 === 1 ? (s[middle] as number) : ((s[middle - 1] as number) + (s[middle] as number)) / 2;
  return {
    min: round(s[0] as number),
    p50: round(percentile(s, 0.5)),
    typical: round(typical),
    p90: round(percentile(s, 0.9)),
    p99: round(percentile(s, 0.99)),
    p999: round(percentile(s, 0.999)),
    max: round(s[s.length - 1] as number),
    avg: round(avg),
    stdev: round(Math.sqrt(s.reduce((a, x) => a + (x - avg) ** 2, 0) / n)),
    histogram: latencyHistogram(s),
  };
}

/**
 * perftest's duration mode (-D, -f): a run from `t0` for `durationS` seconds, measured from
 * `marginS` after its start to `marginS` before its end. `note` records the count of messages
 * done when the clock first passes each mark, and says whether the run goes on.
 */
export class MeasuringWindow {
  startCount = -1;
  endCount = -1;
  startedAt = 0;
  endedAt = 0;
  private readonly from: number;
  private readonly to: number;
  private readonly end: number;

  constructor(t0: number, durationS: number, marginS: number) {
    this.from = t0 + marginS * 1e9;
    this.to = t0 + (durationS - marginS) * 1e9;
    this.end = t0 + durationS * 1e9;
  }

  /** Records `count` at `now` against the marks; false once the run's time is up. */
  note(now: number, count: number): boolean {
    if (this.startCount < 0 && now >= this.from) {
      this.startCount = count;
      this.startedAt = now;
    }
    if (this.endCount < 0 && now >= this.to) {
      this.endCount = count;
      this.endedAt = now;
    }
    return now < this.end;
  }

  /** Ends the window at `at` with `count` if the clock never reached its end mark. */
  close(at: number, count: number): void {
    if (this.startCount >= 0 && this.endCount < 0) {
      this.endCount = count;
      this.endedAt = at;
    }
  }
}

/** The figures of one side's measured loop (clock nanoseconds). */
export class Measurement {
  started = 0;
  finished = 0;
  messages = 0;
  /** Duration mode: every message posted (the measured ones are `messages`). */
  posted = 0;
  /** Latency tests: one-way latency of each round, in nanoseconds. */
  readonly latSamplesNs: number[] = [];
  /**
   * The peak's samples (bw-peak.ts), kept by a sending loop when perftest would measure the peak:
   * when each message was posted, and when each polled completion was seen. Null: not measured.
   */
  peakSamples: { posted: number[]; completed: Map<number, number> } | null = null;

  /** Starts keeping the peak's samples. */
  keepPeak(): void {
    this.peakSamples = { posted: [], completed: new Map() };
  }

  /** The shortest time per message of the run (ns), or null when the peak was not measured. */
  peakNsPerMessage(): number | null {
    const t = this.peakSamples === null ? null : shortestNsPerMessage(this.peakSamples);
    return t !== null && t > 0 ? t : null;
  }

  /** Takes the figures of a duration-mode run from what its window saw; false when it saw no whole window. */
  takeWindow(w: MeasuringWindow | null): boolean {
    if (w === null || w.startCount < 0 || w.endCount < 0) return false;
    this.started = w.startedAt;
    this.finished = w.endedAt;
    this.messages = w.endCount - w.startCount;
    return true;
  }

  /**
   * Latency figures from the times each message was posted: the run lasts from the first post to
   * `now`, and each sample is the time between two posts divided by `rttFactor` (2 for the
   * ping-pong of WRITE and SEND, where a round trip is two one-way trips; 1 for READ).
   */
  takeLatency(posted: readonly number[], now: number, rttFactor: number): void {
    const first = posted[0] ?? 0;
    this.started = first;
    this.finished = now;
    this.messages = posted.length;
    for (let i = 0; i + 1 < posted.length; i++) this.latSamplesNs.push(((posted[i + 1] as number) - (posted[i] as number)) / rttFactor);
  }

  /**
   * The bandwidth report of what was measured (`messages` of `size` bytes between `started` and
   * `finished`), as perftest sends it: print_report_bw's format_factor is 0x100000 (MiB/s) or,
   * with --report_gbits, 125000000 (Gb/s); bw_peak is 0 when the peak was not measured (noPeak).
   */
  bwReport(size: number, reportGbits: boolean): BwReport {
    const secs = Math.max(1e-9, (this.finished - this.started) / 1e9);
    const fmt = bwFormatFactor(reportGbits);
    const bwAvg = (size * this.messages) / secs / fmt;
    const peakNs = this.peakNsPerMessage();
    const bwPeak = peakNs === null ? 0 : size / (peakNs / 1e9) / fmt;
    return { size: BigInt(size), iters: BigInt(this.messages), bwPeak, bwAvg, msgRateAvg: this.messages / secs / 1e6 };
  }
}

/** print_report_bw's format_factor: bytes per unit of the reported bandwidth, MiB (0x100000) or, with --report_gbits, Gb (10^9 bits = 125000000 bytes). */
export function bwFormatFactor(reportGbits: boolean): number {
  return reportGbits ? 125_000_000 : 0x100000;
}

/** What one size of a perftest -a run measured. */
export interface SizeResult {
  msgSize: number;
  messages: number;
  seconds: number;
  gbps: number;
  /** perftest's BW peak in Gb/s (bw-peak.ts), or null where it is not measured. */
  peakGbps: number | null;
  mpps: number;
  /** Latency tests: one-way latency in microseconds (null where this side does not measure). */
  latencyUs: LatencyStats | null;
}

/** The figures `m` holds for messages of `rc.size`. */
export function sizeResult(m: Measurement, rc: ResolvedConfig): SizeResult {
  const seconds = Math.max(0, (m.finished - m.started) / 1e9);
  const round = (x: number, d = 6): number => Math.round(x * 10 ** d) / 10 ** d;
  return {
    msgSize: rc.size,
    messages: m.messages,
    seconds: round(seconds, 9),
    gbps: seconds > 0 ? round((rc.size * m.messages * 8) / seconds / 1e9) : 0,
    peakGbps: peakGbps(m, rc.size),
    mpps: seconds > 0 ? round(m.messages / seconds / 1e6) : 0,
    latencyUs: rc.lat ? latencyStats(m.latSamplesNs.map((ns) => ns / 1000)) : null,
  };
}

/** The peak `m` measured for messages of `size` bytes, in Gb/s, or null. */
export function peakGbps(m: Measurement, size: number): number | null {
  const ns = m.peakNsPerMessage();
  return ns === null ? null : Math.round(((size * 8) / ns) * 1e6) / 1e6;
}
