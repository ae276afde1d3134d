/**
 * PSN-versus-time points per requester flow, for the tcptrace-style plot:
 * requests (first transmissions and retransmissions), acknowledgements,
 * NAKs, RNR NAKs and READ responses, PSNs counted from the flow's first PSN.
 */
import { type AnalysisEnd, type AnalysisResult, type AnalyzerOptions, analysisEnd, analyzeCapture, analyzeFile } from './analyzer';
import { FrameRole } from './frame-view';
import { type ConversationChoice, isChosen } from './conversation-choice';
import { psnDiff } from '../base/psn';
import type { Side } from './types';

export const PointKind = { NEW: 'new', RETX: 'retx', ACK: 'ack', NAK: 'nak', RNR: 'rnr', RESP: 'resp' } as const;
export type PointKind = (typeof PointKind)[keyof typeof PointKind];

export interface PsnPoint {
  timeNs: number;
  /** PSN - the flow's first PSN (24-bit difference). */
  psn: number;
  kind: PointKind;
  frame: number;
}

export interface PsnSeries {
  conversation: number;
  requester: Side;
  /** "198.18.0.1 QP 0x000011 → 198.18.0.2 QP 0x000012". */
  title: string;
  basePsn: number;
  points: PsnPoint[];
  /** Points left out by maxPoints. */
  truncated: number;
  /** Decimals of the capture's timestamps: a point's time is printed with every digit the file has. */
  digits: number;
}

/** The flows' series, and how the analysis ended (the series hold the frames before a problem). */
export interface PsnSeriesResult {
  /** Conversations the filter takes (every one without a filter), whether or not they have a flow to draw. */
  chosen: number;
  /** Conversations in the capture (in the frames selected). */
  conversations: number;
  series: PsnSeries[];
  ended: AnalysisEnd;
}

export interface SeriesFilter {
  /** Conversations with one of these QPs at either end (analysis/conversation-choice.ts). */
  qpns?: readonly number[];
  conversation?: number;
  /** Per flow (default 50000). */
  maxPoints?: number;
}

const qp = (q: number | null): string => (q === null ? '?' : `0x${q.toString(16).padStart(6, '0')}`);

export function buildPsnSeries(source: string | Uint8Array, f: SeriesFilter = {}, opts: AnalyzerOptions = {}): PsnSeriesResult {
  const max = f.maxPoints ?? 50000;
  const flows = new Map<string, PsnSeries>();
  const run = (o: AnalyzerOptions): AnalysisResult => (typeof source === 'string' ? analyzeFile(source, o) : analyzeCapture(source, o));
  const result = run({
    ...opts,
    keep: false,
    onFrame: (r, _p, v) => {
      if (v === null || r.conversation === null || r.from === null || v.role === FrameRole.CNP || v.role === FrameRole.OTHER) return;
      const requester: Side = v.role === FrameRole.REQUEST ? r.from : r.from === 'a' ? 'b' : 'a';
      const key = `${r.conversation}${requester}`;
      let s = flows.get(key);
      if (s === undefined) {
        s = { conversation: r.conversation, requester, title: '', basePsn: v.psn, points: [], truncated: 0, digits: 9 };
        flows.set(key, s);
      }
      let kind: PointKind;
      if (v.role === FrameRole.REQUEST) kind = r.flags.includes('retransmission') || r.flags.includes('duplicateFrame') ? PointKind.RETX : PointKind.NEW;
      else if (r.flags.includes('rnrNak')) kind = PointKind.RNR;
      else if (r.flags.some((x) => x.startsWith('nak'))) kind = PointKind.NAK;
      else if (v.opName.includes('READ_RESPONSE')) kind = PointKind.RESP;
      else kind = PointKind.ACK;
      if (s.points.length >= max) {
        s.truncated++;
        return;
      }
      s.points.push({ timeNs: r.timeNs, psn: psnDiff(v.psn, s.basePsn), kind, frame: r.frame });
    },
  });
  const choice: ConversationChoice = { conversation: f.conversation ?? null, qpns: f.qpns ?? null };
  const out: PsnSeries[] = [];
  for (const s of flows.values()) {
    // Conversation ids are 1, 2, … in list order (a search per flow was quadratic in conversations).
    const c = result.conversations[s.conversation - 1];
    if (c === undefined) continue;
    if (!isChosen(choice, c)) continue;
    const req = s.requester === 'a' ? c.a : c.b;
    const rsp = s.requester === 'a' ? c.b : c.a;
    s.digits = result.startTime.digits;
    s.title = `#${c.id} ${c.type} ${req.ip} QP ${qp(req.qpn)} → ${rsp.ip} QP ${qp(rsp.qpn)}`;
    // Start the PSN axis at the lowest PSN seen (a capture may start with responses to earlier requests).
    const low = s.points.reduce((m, p) => Math.min(m, p.psn), 0);
    if (low < 0) for (const p of s.points) p.psn -= low;
    out.push(s);
  }
  return { series: out.sort((x, y) => x.conversation - y.conversation || x.requester.localeCompare(y.requester)), chosen: result.conversations.filter((c) => isChosen(choice, c)).length, conversations: result.conversations.length, ended: analysisEnd(result) };
}
