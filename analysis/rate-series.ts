/**
 * Per requester flow of a capture: its request payload rate over time in bins (the rate inferred
 * from the packets' spacing, as bytes per bin), the instants of its CE-marked requests, and the
 * CNPs sent to it, for `roce plot --rate`.
 */
import { type AnalysisEnd, type AnalyzerOptions, analysisEnd, analyzeCapture, analyzeFile } from './analyzer';
import { FrameRole } from './frame-view';
import { type ConversationChoice, isChosen } from './conversation-choice';
import type { Side } from './types';

export interface RateSeries {
  conversation: number;
  requester: Side;
  title: string;
  /** [bin end µs, Gb/s of request payload in the bin]. */
  gbps: [number, number][];
  ceUs: number[];
  cnpUs: number[];
  /** Decimals of the capture's timestamps (6 for µs, 9 for ns). */
  digits: number;
}

/** The flows' series, and how the analysis ended (the series hold the frames before a problem). */
export interface RateSeriesResult {
  /** Conversations the filter takes (every one without a filter), whether or not they have a flow to draw. */
  chosen: number;
  /** Conversations in the capture (in the frames selected). */
  conversations: number;
  series: RateSeries[];
  ended: AnalysisEnd;
}

export interface RateFilter {
  /** Conversations with one of these QPs at either end (analysis/conversation-choice.ts). */
  qpns?: readonly number[];
  conversation?: number;
  /** Bin width (default: the capture's span in 200 bins, at least 1 µs). */
  binNs?: number;
}

const qp = (q: number | null): string => (q === null ? '?' : `0x${q.toString(16).padStart(6, '0')}`);

export function buildRateSeries(source: string | Uint8Array, f: RateFilter = {}, opts: AnalyzerOptions = {}): RateSeriesResult {
  const flows = new Map<string, { conversation: number; requester: Side; bytes: Map<number, number>; ce: number[]; cnp: number[] }>();
  const events: { key: string; timeNs: number; bytes: number }[] = [];
  const flowOf = (
    conversation: number,
    requester: Side,
  ): { key: string; f: { conversation: number; requester: Side; bytes: Map<number, number>; ce: number[]; cnp: number[] } } => {
    const key = `${conversation}${requester}`;
    let x = flows.get(key);
    if (x === undefined) flows.set(key, (x = { conversation, requester, bytes: new Map(), ce: [], cnp: [] }));
    return { key, f: x };
  };
  const result = (typeof source === 'string' ? analyzeFile : analyzeCapture)(source as string & Uint8Array, {
    ...opts,
    keep: false,
    onFrame: (r, _d, v) => {
      if (v === null || r.conversation === null || r.from === null) return;
      if (v.role === FrameRole.CNP) {
        flowOf(r.conversation, r.from === 'a' ? 'b' : 'a').f.cnp.push(r.timeNs / 1000);
        return;
      }
      if (v.role !== FrameRole.REQUEST) return;
      const { key, f: x } = flowOf(r.conversation, r.from);
      if (v.ecnCe) x.ce.push(r.timeNs / 1000);
      events.push({ key, timeNs: r.timeNs, bytes: v.payloadLength });
    },
  });
  const span = Math.max(1, result.durationNs);
  const bin = f.binNs ?? Math.max(1000, Math.ceil(span / 200));
  const bins = Math.max(1, Math.ceil((span + 1) / bin));
  const sums = new Map<string, number[]>();
  for (const e of events) {
    let s = sums.get(e.key);
    if (s === undefined) sums.set(e.key, (s = new Array<number>(bins).fill(0)));
    const b = Math.min(bins - 1, Math.floor(e.timeNs / bin));
    s[b] = (s[b] as number) + e.bytes;
  }
  const choice: ConversationChoice = { conversation: f.conversation ?? null, qpns: f.qpns ?? null };
  const out: RateSeries[] = [];
  for (const [key, x] of flows) {
    // Conversation ids are 1, 2, … in list order.
    const c = result.conversations[x.conversation - 1];
    if (c === undefined) continue;
    if (!isChosen(choice, c)) continue;
    const req = x.requester === 'a' ? c.a : c.b;
    const rsp = x.requester === 'a' ? c.b : c.a;
    const s = sums.get(key) ?? new Array<number>(bins).fill(0);
    out.push({
      conversation: c.id,
      requester: x.requester,
      title: `#${c.id} ${c.type} ${req.ip} QP ${qp(req.qpn)} → ${rsp.ip} QP ${qp(rsp.qpn)}`,
      gbps: s.map((b, i) => [((i + 1) * bin) / 1000, Math.round(((b * 8) / bin) * 1000) / 1000]),
      ceUs: x.ce,
      cnpUs: x.cnp,
      digits: result.startTime.digits,
    });
  }
  return {
    series: out.sort((p, q) => p.conversation - q.conversation || p.requester.localeCompare(q.requester)),
    chosen: result.conversations.filter((c) => isChosen(choice, c)).length,
    conversations: result.conversations.length,
    ended: analysisEnd(result),
  };
}
