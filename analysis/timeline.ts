/**
 * The packets of one conversation as a timeline for the ladder diagram:
 * each frame with its direction, a short label (opcode, PSN, AckReq, AETH),
 * its flags and its decoded fields for a tooltip; plus what the episodes say
 * (lost transmissions, RNR waits). Filters: conversation or QPN, a time
 * window and a frame range.
 */
import * as fs from 'node:fs';
import { type AnalysisEnd, type AnalysisResult, type AnalyzerOptions, analysisEnd, analyzeFile, analyzeCapture } from './analyzer';
import type { RocePacket } from '../packets/decode';
import { packetAddresses } from '../packets/decode';
import { extensionSummary } from '../packets/summary';
import { describeSyndrome } from '../packets/aeth';
import type { FlagName } from './flags';
import type { FrameView } from './frame-view';
import type { FrameResult, Side } from './types';
import { secondsText, spanTime } from '../base/exact-time';
import { RoceError } from '../base/roce-error';
import { type ConversationChoice, choosesConversations, chosenIds, noneChosenText } from './conversation-choice';

export interface TimelineItem {
  frame: number;
  timeNs: number;
  from: Side;
  opcode: string;
  psn: number;
  /** e.g. "SEND_FIRST PSN 12 A" or "ACK PSN 12 · NAK PSN sequence error". */
  label: string;
  flags: FlagName[];
  /** Name/value pairs shown on hover. */
  fields: [string, string][];
  /** The last transmission of a PSN before a loss-recovery episode resent it. */
  lost: boolean;
}

export interface RnrWait {
  fromFrame: number;
  toFrame: number;
  startNs: number;
  endNs: number;
  /** The requester's side. */
  side: Side;
  timerNs: number | null;
}

export interface Timeline {
  conversation: number;
  type: string;
  a: { ip: string; qpn: number | null };
  b: { ip: string; qpn: number | null };
  items: TimelineItem[];
  rnrWaits: RnrWait[];
  /** Items left out by maxFrames. */
  truncated: number;
  /** Decimals of the capture's timestamps (6 for µs, 9 for ns): times are printed with every digit the file has. */
  digits: number;
  /** Whether the capture was read, and analysed, to its end: the diagram shows the frames before the problem. */
  ended: AnalysisEnd;
}

export interface TimelineFilter {
  conversation?: number;
  qpn?: number;
  fromNs?: number;
  toNs?: number;
  firstFrame?: number;
  lastFrame?: number;
  /** At most this many packets (default 400). */
  maxFrames?: number;
}

/** The capture cannot give the timeline asked for: no such file, no RoCE conversation, no conversation matching the filter. */
export class TimelineError extends RoceError<'ROCE_ERR_TIMELINE'> {
  constructor(message: string) {
    super('ROCE_ERR_TIMELINE', message);
  }
}

const short = (op: string): string => op.replace(/^(RC|UC|UD|XRC|RD)_/, '').replace('RDMA_', '').replace('_WITH_IMMEDIATE', '_IMM').replace('_WITH_INVALIDATE', '_INV');

/** `digits`: the capture's decimals; the time is since the capture's first frame, as `roce decode` prints it. */
function fieldsOf(r: FrameResult, p: RocePacket, v: FrameView | null, digits: number): [string, string][] {
  const { src, dst } = packetAddresses(p);
  const out: [string, string][] = [
    ['frame', String(r.frame)],
    ['time', `${secondsText(spanTime(r.timeNs, digits))} s`],
    ['from', `${src}${p.udp ? `:${p.udp.srcPort}` : ''}`],
    ['to', `${dst}${p.udp ? `:${p.udp.dstPort}` : ''}`],
    ['opcode', `${r.opcode}${p.bth ? ` (0x${p.bth.opcode.toString(16).padStart(2, '0')})` : ''}`],
  ];
  if (p.bth !== null) {
    out.push(['DestQP', `0x${p.bth.destQp.toString(16).padStart(6, '0')}`], ['PSN', String(p.bth.psn)], ['AckReq', p.bth.ackReq ? '1' : '0']);
    if (p.bth.se) out.push(['SE', '1']);
    if (p.bth.becn) out.push(['BECN', '1']);
  }
  const ext = extensionSummary(p);
  if (ext) out.push(['headers', ext]);
  if (p.payloadLength > 0) out.push(['payload', `${p.payloadLength} bytes`]);
  if (v?.ecnCe === true) out.push(['ECN', 'CE']);
  out.push(['ICRC', p.icrcOk === null ? 'not checked' : p.icrcOk ? 'ok' : 'BAD']);
  if (r.flags.length > 0) out.push(['flags', r.flags.join(', ')]);
  return out;
}

function labelOf(r: FrameResult, p: RocePacket): string {
  let s = `${short(r.opcode)} PSN ${r.psn}`;
  if (p.bth?.ackReq === true) s += ' A';
  if (p.aeth !== null) {
    const d = describeSyndrome(p.aeth.syndrome).replace(' credits=unlimited', '').replace('PSN sequence error', 'seq err');
    s += ` · ${d}`;
  }
  return s;
}

function pickConversation(first: AnalysisResult, f: TimelineFilter): number {
  const convs = first.conversations;
  if (convs.length === 0) {
    const e = first.captureError;
    throw new TimelineError(`the capture holds no RoCE conversation${e === null ? '' : ` (it ends early at byte ${e.offset}: ${e.reason})`}`);
  }
  const choice: ConversationChoice = { conversation: f.conversation ?? null, qpns: f.qpn === undefined ? null : [f.qpn] };
  if (choosesConversations(choice)) {
    const id = chosenIds(choice, convs)[0];
    if (id === undefined) throw new TimelineError(noneChosenText(choice, convs.length));
    return id;
  }
  return [...convs].sort((x, y) => y.frames - x.frames || x.id - y.id)[0]!.id;
}

/** Builds the timeline of one conversation of a capture (a file path or the capture's bytes). */
export function buildTimeline(source: string | Uint8Array, f: TimelineFilter = {}, opts: AnalyzerOptions = {}): Timeline {
  const run = (o: AnalyzerOptions): AnalysisResult => (typeof source === 'string' ? analyzeFile(source, o) : analyzeCapture(source, o));
  if (typeof source === 'string' && !fs.existsSync(source)) throw new TimelineError(`cannot read ${source}: no such file`);
  const first = run({ ...opts, keep: true });
  const id = pickConversation(first, f);
  const conv = first.conversations.find((c) => c.id === id)!;
  const max = f.maxFrames ?? 400;
  const digits = first.startTime.digits;
  const items: TimelineItem[] = [];
  let truncated = 0;
  const want = (r: FrameResult): boolean =>
    r.conversation === id &&
    (f.fromNs === undefined || r.timeNs >= f.fromNs) &&
    (f.toNs === undefined || r.timeNs <= f.toNs) &&
    (f.firstFrame === undefined || r.frame >= f.firstFrame) &&
    (f.lastFrame === undefined || r.frame <= f.lastFrame);
  run({
    ...opts,
    keep: false,
    onFrame: (r, p, v) => {
      if (!want(r) || r.from === null) return;
      if (items.length >= max) {
        truncated++;
        return;
      }
      items.push({ frame: r.frame, timeNs: r.timeNs, from: r.from, opcode: r.opcode, psn: r.psn, label: labelOf(r, p), flags: r.flags, fields: fieldsOf(r, p, v, digits), lost: false });
    },
  });
  const eps = first.episodes.filter((e) => e.conversation === id);
  const lost = new Set(eps.filter((e) => e.trigger !== 'rnr').map((e) => e.lostFrame).filter((x): x is number => x !== null));
  for (const it of items) if (lost.has(it.frame)) it.lost = true;
  const byFrame = new Map(items.map((it) => [it.frame, it]));
  const rnrWaits: RnrWait[] = [];
  for (const e of eps) {
    if (e.trigger !== 'rnr' || e.triggerFrame === null) continue;
    const from = byFrame.get(e.triggerFrame);
    const to = byFrame.get(e.firstRetransmitFrame);
    if (from === undefined || to === undefined) continue;
    rnrWaits.push({ fromFrame: from.frame, toFrame: to.frame, startNs: from.timeNs, endNs: to.timeNs, side: e.requester, timerNs: e.rnrTimerNs });
  }
  return { conversation: id, type: conv.type, a: { ...conv.a }, b: { ...conv.b }, items, rnrWaits, truncated, digits, ended: analysisEnd(first) };
}
