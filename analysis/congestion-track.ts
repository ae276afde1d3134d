/**
 * What a capture shows of congestion control for one requester of a conversation: the
 * ECN CE marks on its requests (the switch's), the CNPs sent to it (the notification point's),
 * the delay from the first unanswered mark to the CNP, the interval between CNPs, and its request
 * payload rate just before and just after each CNP (the reaction point's cut, seen on the wire).
 * A track starts at the conversation's first CE mark or CNP (so the analysis of a capture without
 * congestion costs nothing); a rate before a CNP that the track did not see whole is null. Memory
 * stays bounded: a window of the last requests, at most `MAX_SAMPLES` CNPs described one by one,
 * and at most `MAX_VALUES` values behind each median.
 */

/** The window the rate before and after a CNP is measured over. */
export const RATE_WINDOW_NS = 100_000;
const MAX_SAMPLES = 256;
const MAX_VALUES = 10_000;

/** min / median / mean / max of what was seen, in µs; null when nothing was. */
export interface DelayStats {
  count: number;
  minUs: number;
  p50Us: number;
  meanUs: number;
  maxUs: number;
}

/** One CNP: when, how long after the mark it answers, and the requester's rate around it. */
export interface CnpSample {
  frame: number;
  timeUs: number;
  /** From the first CE-marked request not answered before to this CNP; null when none was in the capture. */
  ceToCnpUs: number | null;
  /** Payload Gb/s of the requester's requests in the window before the CNP (null when the track began inside it), and in the window after it (null when the capture ends first). */
  gbpsBefore: number | null;
  gbpsAfter: number | null;
}

export interface CongestionReport {
  /** Requests of this requester that arrived CE-marked. */
  ceMarked: number;
  /** CNPs addressed to this requester's QP. */
  cnps: number;
  ceToCnp: DelayStats | null;
  cnpInterval: DelayStats | null;
  /** The first CNPs, one by one (at most 256). */
  samples: CnpSample[];
  /** Mean of the samples' rates before and after, Gb/s (null without a complete sample). */
  meanGbpsBefore: number | null;
  meanGbpsAfter: number | null;
}

class Values {
  count = 0;
  private sum = 0;
  private min = Infinity;
  private max = -Infinity;
  private readonly kept: number[] = [];

  add(ns: number): void {
    this.count++;
    this.sum += ns;
    if (ns < this.min) this.min = ns;
    if (ns > this.max) this.max = ns;
    if (this.kept.length < MAX_VALUES) this.kept.push(ns);
  }

  stats(): DelayStats | null {
    if (this.count === 0) return null;
    const sorted = [...this.kept].sort((x, y) => x - y);
    const us = (ns: number): number => Math.round(ns) / 1000;
    return {
      count: this.count,
      minUs: us(this.min),
      p50Us: us(sorted[Math.floor((sorted.length - 1) / 2)] as number),
      meanUs: us(this.sum / this.count),
      maxUs: us(this.max),
    };
  }
}

export class CongestionTrack {
  ceMarked = 0;
  cnps = 0;
  private unansweredCeNs: number | null = null;
  private lastCnpNs: number | null = null;
  private readonly ceToCnp = new Values();
  private readonly interval = new Values();
  /** The requests of the last window: (time, bytes) pairs from `head`. */
  private win: number[] = [];
  private head = 0;
  private winBytes = 0;
  /** Samples whose window after the CNP is still open. */
  private readonly open: { sample: CnpSample; untilNs: number; bytes: number }[] = [];
  readonly samples: CnpSample[] = [];

  /** `startNs`: when the track began (its first CE mark or CNP). */
  constructor(private readonly startNs: number) {}

  /** A request frame of `bytes` from this requester at `timeNs`, CE-marked or not. */
  onRequest(timeNs: number, bytes: number, ce: boolean): void {
    if (ce) {
      this.ceMarked++;
      this.unansweredCeNs ??= timeNs;
    }
    for (let i = 0; i < this.open.length; ) {
      const o = this.open[i] as (typeof this.open)[number];
      if (timeNs > o.untilNs) {
        o.sample.gbpsAfter = gbps(o.bytes, RATE_WINDOW_NS);
        this.open.splice(i, 1);
      } else {
        o.bytes += bytes;
        i++;
      }
    }
    this.win.push(timeNs, bytes);
    this.winBytes += bytes;
    this.trim(timeNs);
  }

  /** A CNP to this requester's QP at `timeNs` (capture frame `frame`). */
  onCnp(frame: number, timeNs: number): void {
    this.cnps++;
    let ceToCnpUs: number | null = null;
    if (this.unansweredCeNs !== null) {
      this.ceToCnp.add(timeNs - this.unansweredCeNs);
      ceToCnpUs = Math.round(timeNs - this.unansweredCeNs) / 1000;
      this.unansweredCeNs = null;
    }
    if (this.lastCnpNs !== null) this.interval.add(timeNs - this.lastCnpNs);
    this.lastCnpNs = timeNs;
    if (this.samples.length >= MAX_SAMPLES) return;
    this.trim(timeNs);
    const sample: CnpSample = {
      frame,
      timeUs: Math.round(timeNs) / 1000,
      ceToCnpUs,
      gbpsBefore: timeNs - this.startNs >= RATE_WINDOW_NS ? gbps(this.winBytes, RATE_WINDOW_NS) : null,
      gbpsAfter: null,
    };
    this.samples.push(sample);
    this.open.push({ sample, untilNs: timeNs + RATE_WINDOW_NS, bytes: 0 });
  }

  /** The capture ended at `endNs`: windows it covered whole are closed, the others stay unknown. */
  finish(endNs: number): void {
    for (const o of this.open) if (endNs >= o.untilNs) o.sample.gbpsAfter = gbps(o.bytes, RATE_WINDOW_NS);
    this.open.length = 0;
  }

  report(): CongestionReport | null {
    if (this.ceMarked === 0 && this.cnps === 0) return null;
    const full = this.samples.filter((s) => s.gbpsAfter !== null && s.gbpsBefore !== null);
    const mean = (xs: number[]): number | null => (xs.length === 0 ? null : Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1000) / 1000);
    return {
      ceMarked: this.ceMarked,
      cnps: this.cnps,
      ceToCnp: this.ceToCnp.stats(),
      cnpInterval: this.interval.stats(),
      samples: this.samples,
      meanGbpsBefore: mean(full.map((s) => s.gbpsBefore as number)),
      meanGbpsAfter: mean(full.map((s) => s.gbpsAfter as number)),
    };
  }

  /** Drops the requests older than the window before `nowNs`. */
  private trim(nowNs: number): void {
    const w = this.win;
    while (this.head < w.length && (w[this.head] as number) <= nowNs - RATE_WINDOW_NS) {
      this.winBytes -= w[this.head + 1] as number;
      this.head += 2;
    }
    if (this.head > 4096 && this.head * 2 > w.length) {
      this.win = w.slice(this.head);
      this.head = 0;
    }
  }
}

function gbps(bytes: number, ns: number): number {
  return Math.round(((bytes * 8) / ns) * 1000) / 1000;
}
