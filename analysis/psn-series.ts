/**
 * PSN-versus-time points per requester flow, for the tcptrace-style plot:
 * requests (first transmissions and retransmissions), acknowledgements,
 * NAKs, RNR NAKs and READ responses, PSNs counted from the flow's first PSN;
 * and the flow's marks: frames carrying ECN CE, the CNPs sent to its
 * requester, and the resends its requester's ACK timer started.
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

/**
 * `ce`: a frame of the flow with ECN CE in its IP header, where its point is; `cnp`: a CNP to the
 * flow's requester, at the highest PSN it had sent by then; `timeout`: the first resend of a
 * timeout episode (the local ACK timer ran out, IBTA §9.7.6.1.3), at the PSN resent.
 */
export const MarkKind = { CE: 'ce', CNP: 'cnp', TIMEOUT: 'timeout' } as const;
export type MarkKind = (typeof MarkKind)[keyof typeof MarkKind];

export interface PsnMark {
  timeNs: number;
  /** As PsnPoint's: PSN - the flow's first PSN. */
  psn: number;
  kind: MarkKind;
  frame: number;
  /** For `ce`: the kind of the point the mark is on (an ACK or response is drawn at psn + 1). */
  on: PointKind | null;
}

export interface PsnSeries {
  conversation: number;
  requester: Side;
  /** "198.18.0.1 QP 0x000011 → 198.18.0.2 QP 0x000012". */
  title: string;
  basePsn: number;
  points: PsnPoint[];
  marks: PsnMark[];
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
  /** Highest PSN sent per flow so far (as a difference from its first), where a CNP to it is drawn. */
  const highest = new Map<string, number>();
  /** CNPs by flow, kept apart: a CNP can come before the flow's first request in the capture. */
  const cnps = new Map<string, { timeNs: number; frame: number; psn: number }[]>();
  const run = (o: AnalyzerOptions): AnalysisResult => (typeof source === 'string' ? analyzeFile(source, o) : analyzeCapture(source, o));
  const result = run({
    ...opts,
    keep: { episodes: true },
    onFrame: (r, _p, v) => {
      if (v === null || r.conversation === null || r.from === null || v.role === FrameRole.OTHER) return;
      if (v.role === FrameRole.CNP) {
        // A CNP goes from the congested flow's responder side to its requester (RoCE v2 annex A17.9.2: the CNP, addressed to the requester's QP).
        const key = `${r.conversation}${r.from === 'a' ? 'b' : 'a'}`;
        let l = cnps.get(key);
        if (l === undefined) cnps.set(key, (l = []));
        l.push({ timeNs: r.timeNs, frame: r.frame, psn: highest.get(key) ?? 0 });
        return;
      }
      const requester: Side = v.role === FrameRole.REQUEST ? r.from : r.from === 'a' ? 'b' : 'a';
      const key = `${r.conversation}${requester}`;
      let s = flows.get(key);
      if (s === undefined) {
        s = { conversation: r.conversation, requester, title: '', basePsn: v.psn, points: [], marks: [], truncated: 0, digits: 9 };
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
      const psn = psnDiff(v.psn, s.basePsn);
      s.points.push({ timeNs: r.timeNs, psn, kind, frame: r.frame });
      if (v.role === FrameRole.REQUEST && psn > (highest.get(key) ?? -Infinity)) highest.set(key, psn);
      if (v.ecnCe) s.marks.push({ timeNs: r.timeNs, psn, kind: MarkKind.CE, frame: r.frame, on: kind });
    },
  });
  for (const [key, l] of cnps) {
    const s = flows.get(key);
    if (s !== undefined) for (const c of l) s.marks.push({ timeNs: c.timeNs, psn: c.psn, kind: MarkKind.CNP, frame: c.frame, on: null });
  }
  for (const e of result.episodes) {
    if (e.trigger !== 'timeout') continue;
    const s = flows.get(`${e.conversation}${e.requester}`);
    const resend = s?.points.find((p) => p.frame === e.firstRetransmitFrame);
    if (s === undefined || resend === undefined) continue;
    s.marks.push({ timeNs: resend.timeNs, psn: resend.psn, kind: MarkKind.TIMEOUT, frame: resend.frame, on: null });
  }
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
    if (low < 0) for (const p of [...s.points, ...s.marks]) p.psn -= low;
    s.marks.sort((x, y) => x.frame - y.frame || x.kind.localeCompare(y.kind));
    out.push(s);
  }
  return {
    series: out.sort((x, y) => x.conversation - y.conversation || x.requester.localeCompare(y.requester)),
    chosen: result.conversations.filter((c) => isChosen(choice, c)).length,
    conversations: result.conversations.length,
    ended: analysisEnd(result),
  };
}
