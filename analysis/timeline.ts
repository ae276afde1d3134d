/**
 * The packets of one conversation as a timeline for the ladder diagram:
 * each frame with its direction, a short label (opcode, PSN, AckReq, AETH),
 * its flags and its decoded fields for a tooltip; plus what the episodes say
 * (lost transmissions, RNR waits). Filters: conversation or QPN, a time
 * window and a frame range. A conversation longer than the packets drawn is
 * drawn from its first loss-recovery episode or error frame (or the episode
 * asked for), and the timeline says which stretch it holds and why.
 */
import * as fs from 'node:fs';
import { type AnalysisEnd, type AnalysisResult, type AnalyzerOptions, analysisEnd, analyzeFile, analyzeCapture } from './analyzer';
import type { RocePacket } from '../packets/decode';
import { packetAddresses } from '../packets/decode';
import { extensionSummary } from '../packets/summary';
import { describeSyndrome } from '../packets/aeth';
import type { FlagName } from './flags';
import type { FrameView } from './frame-view';
import type { Episode, FrameResult, Side } from './types';
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
  /** Items after the last one drawn, left out by maxFrames. */
  truncated: number;
  /** Which stretch of the conversation the items are, and why. */
  window: TimelineWindow;
  /** Decimals of the capture's timestamps (6 for µs, 9 for ns): times are printed with every digit the file has. */
  digits: number;
  /** Whether the capture was read, and analysed, to its end: the diagram shows the frames before the problem. */
  ended: AnalysisEnd;
}

/**
 * Why the timeline holds the items it holds: `whole` the conversation (as filtered) fits;
 * `episode` it starts just before a loss-recovery episode (the first one, or the one asked for);
 * `error` just before the first error frame (an error NAK, a bad ICRC, a malformed frame);
 * `start` its first packets (no episode or error to start at, or the frames or times asked for).
 */
export const WindowReason = { WHOLE: 'whole', EPISODE: 'episode', ERROR: 'error', START: 'start' } as const;
export type WindowReason = (typeof WindowReason)[keyof typeof WindowReason];

export interface TimelineWindow {
  reason: WindowReason;
  /** The episode the window starts at (reason `episode`). */
  episode: Episode | null;
  /** Whether that episode was asked for (rather than found as the first). */
  asked: boolean;
  /** The error frame the window starts at (reason `error`) and its flag. */
  error: { frame: number; flag: FlagName } | null;
  /** Items before the first one drawn (they pass the filters but are left out). */
  before: number;
  /** The ids of the conversation's episodes (as roce analyze numbers them): the others one can draw. */
  episodeIds: number[];
  /** Whether the caller asked for frames or times (a frame range or time window in the filter, or focus `start`). */
  filtered: boolean;
}

/** Where a long conversation's drawing starts: at its first episode or error (`problem`), at its start, or at the episode with this id. */
export type TimelineFocus = 'problem' | 'start' | { episode: number };

/** Packets drawn before the frame a window starts at: what led up to it. */
export const LEAD_PACKETS = 6;

export interface TimelineFilter {
  conversation?: number;
  qpn?: number;
  fromNs?: number;
  toNs?: number;
  firstFrame?: number;
  lastFrame?: number;
  /** At most this many packets (default 400). */
  maxFrames?: number;
  /**
   * Words an upper-layer protocol adds to a frame's label, by frame number (`roce ladder`: what
   * NVMe-oF command, completion or data the frame carries). Shown after the transport's words.
   */
  frameNotes?: ReadonlyMap<number, string>;
  /**
   * Where to start when the conversation has more packets than maxFrames (default `problem`, or
   * `start` when a frame range or time window is given; a caller that analyses part of the
   * capture, as `roce ladder --frames` does, gives `start` too, and the window says the frames
   * were asked for). An episode asked for is drawn from just before it whatever the length, in its
   * own conversation (which must be the one chosen, if any).
   */
  focus?: TimelineFocus;
}

/**
 * Where an episode shows first: the request that showed the gap, the NAK, or the first resend,
 * whichever came first; the lost transmission itself only when no request showed the gap (a
 * timeout's last request). A lost transmission can precede its gap by many packets; the few
 * packets drawn before the episode show it when it is near.
 */
export function episodeStartFrame(e: Episode): number {
  return Math.min(...[e.gapFrame ?? e.lostFrame, e.triggerFrame, e.firstRetransmitFrame].filter((x): x is number => x !== null));
}

/** Flags that make a frame an error worth starting a picture at. */
const ERROR_FLAGS: readonly FlagName[] = ['nakInvReq', 'nakRemAccess', 'nakRemOp', 'icrcBad', 'malformed'];

/** The capture cannot give the timeline asked for: no such file, no RoCE conversation, no conversation matching the filter. */
export class TimelineError extends RoceError<'ROCE_ERR_TIMELINE'> {
  constructor(message: string) {
    super('ROCE_ERR_TIMELINE', message);
  }
}

const short = (op: string): string =>
  op
    .replace(/^(RC|UC|UD|XRC|RD)_/, '')
    .replace('RDMA_', '')
    .replace('_WITH_IMMEDIATE', '_IMM')
    .replace('_WITH_INVALIDATE', '_INV');

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

function pickConversation(first: AnalysisResult, f: TimelineFilter, episode: Episode | null): number {
  const convs = first.conversations;
  if (convs.length === 0) {
    const e = first.captureError;
    throw new TimelineError(`the capture holds no RoCE conversation${e === null ? '' : ` (it ends early at byte ${e.offset}: ${e.reason})`}`);
  }
  const choice: ConversationChoice = { conversation: f.conversation ?? null, qpns: f.qpn === undefined ? null : [f.qpn] };
  if (choosesConversations(choice)) {
    const ids = chosenIds(choice, convs);
    const id = ids[0];
    if (id === undefined) throw new TimelineError(noneChosenText(choice, convs.length));
    if (episode !== null && !ids.includes(episode.conversation))
      throw new TimelineError(`episode #${episode.id} is in conversation #${episode.conversation}, not the one chosen (#${id})`);
    return episode?.conversation ?? id;
  }
  if (episode !== null) return episode.conversation;
  return [...convs].sort((x, y) => y.frames - x.frames || x.id - y.id)[0]!.id;
}

function askedEpisode(first: AnalysisResult, focus: TimelineFocus): Episode | null {
  if (typeof focus === 'string') return null;
  const e = first.episodes.find((x) => x.id === focus.episode);
  if (e === undefined) {
    const n = first.episodes.length;
    throw new TimelineError(
      `no episode #${focus.episode}: the capture${n === 0 ? ' has no loss-recovery episode' : ` has episodes #1 to #${n} (roce analyze lists them)`}`,
    );
  }
  return e;
}

/** Builds the timeline of one conversation of a capture (a file path or the capture's bytes). */
/** A label and an upper layer's words about the frame, if any. */
function withNote(label: string, note: string | undefined): string {
  return note === undefined ? label : `${label} · ${note}`;
}

export function buildTimeline(source: string | Uint8Array, f: TimelineFilter = {}, opts: AnalyzerOptions = {}): Timeline {
  const run = (o: AnalyzerOptions): AnalysisResult => (typeof source === 'string' ? analyzeFile(source, o) : analyzeCapture(source, o));
  if (typeof source === 'string' && !fs.existsSync(source)) throw new TimelineError(`cannot read ${source}: no such file`);
  const first = run({ ...opts, keep: true });
  const filtered = f.fromNs !== undefined || f.toNs !== undefined || f.firstFrame !== undefined || f.lastFrame !== undefined;
  const focus: TimelineFocus = f.focus ?? (filtered ? 'start' : 'problem');
  const askedPart = filtered || focus === 'start';
  const asked = askedEpisode(first, focus);
  const id = pickConversation(first, f, asked);
  const conv = first.conversations.find((c) => c.id === id)!;
  const max = f.maxFrames ?? 400;
  const digits = first.startTime.digits;
  const want = (r: FrameResult): boolean =>
    r.conversation === id &&
    r.from !== null &&
    (f.fromNs === undefined || r.timeNs >= f.fromNs) &&
    (f.toNs === undefined || r.timeNs <= f.toNs) &&
    (f.firstFrame === undefined || r.frame >= f.firstFrame) &&
    (f.lastFrame === undefined || r.frame <= f.lastFrame);
  const eps = first.episodes.filter((e) => e.conversation === id);
  // The stretch to draw: from a few packets before the episode asked for, or, when the
  // conversation is longer than the drawing, before its first episode or error frame.
  let anchor: { frame: number; reason: WindowReason; episode: Episode | null; error: TimelineWindow['error'] } | null = null;
  if (asked !== null) anchor = { frame: episodeStartFrame(asked), reason: WindowReason.EPISODE, episode: asked, error: null };
  else if (focus === 'problem' && conv.frames > max) {
    const ep = [...eps].sort((x, y) => episodeStartFrame(x) - episodeStartFrame(y))[0];
    const bad = first.frameResults.find((r) => want(r) && r.flags.some((x) => ERROR_FLAGS.includes(x)));
    const epFrame = ep === undefined ? Infinity : episodeStartFrame(ep);
    if (bad !== undefined && bad.frame < epFrame)
      anchor = {
        frame: bad.frame,
        reason: WindowReason.ERROR,
        episode: null,
        error: { frame: bad.frame, flag: bad.flags.find((x) => ERROR_FLAGS.includes(x))! },
      };
    else if (ep !== undefined) anchor = { frame: epFrame, reason: WindowReason.EPISODE, episode: ep, error: null };
  }
  const items: TimelineItem[] = [];
  /** The last LEAD_PACKETS items before the anchor, and how many came before them. */
  const lead: TimelineItem[] = [];
  let before = 0;
  let truncated = 0;
  run({
    ...opts,
    keep: false,
    onFrame: (r, p, v) => {
      if (!want(r)) return;
      const item = (): TimelineItem => ({
        frame: r.frame,
        timeNs: r.timeNs,
        from: r.from!,
        opcode: r.opcode,
        psn: r.psn,
        label: withNote(labelOf(r, p), f.frameNotes?.get(r.frame)),
        flags: r.flags,
        fields: fieldsOf(r, p, v, digits),
        lost: false,
      });
      if (anchor !== null && r.frame < anchor.frame) {
        lead.push(item());
        if (lead.length > LEAD_PACKETS) {
          lead.shift();
          before++;
        }
        return;
      }
      if (lead.length > 0) {
        // The lead-in never pushes the anchor out of the drawing.
        const keep = Math.min(lead.length, Math.max(0, max - 1));
        before += lead.length - keep;
        items.push(...lead.slice(lead.length - keep));
        lead.length = 0;
      }
      if (items.length >= max) {
        truncated++;
        return;
      }
      items.push(item());
    },
  });
  // An anchor with no packet at or after it (cannot happen for an episode of this conversation): the lead-in is the drawing.
  if (lead.length > 0) items.push(...lead.splice(0));
  const lost = new Set(
    eps
      .filter((e) => e.trigger !== 'rnr')
      .map((e) => e.lostFrame)
      .filter((x): x is number => x !== null),
  );
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
  const reason = anchor?.reason ?? (before + truncated === 0 ? WindowReason.WHOLE : WindowReason.START);
  const window: TimelineWindow = {
    reason,
    episode: anchor?.episode ?? null,
    asked: asked !== null,
    error: anchor?.error ?? null,
    before,
    episodeIds: eps.map((e) => e.id),
    filtered: askedPart,
  };
  return { conversation: id, type: conv.type, a: { ...conv.a }, b: { ...conv.b }, items, rnrWaits, truncated, window, digits, ended: analysisEnd(first) };
}
