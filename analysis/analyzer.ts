/**
 * The transport analyzer: frames go in one at a time (streaming), each is
 * decoded, routed to its conversation and flow, and flagged. What the flows
 * find (messages, episodes, violations) goes to sinks that either keep it
 * (the default, for reports) or only count it (`keep: false`, constant memory).
 */
import { type DecodeOptions, type DecodedFrame, type RocePacket, decodeAt, frameFault } from '../packets/decode';
import { Transport } from '../packets/opcodes';
import { type CaptureRecord, iterateCapture } from '../packets/pcap';
import type { WireError } from '../packets/errors';
import { ConversationTable, type Conversation } from './conversations';
import { FLAG_BIT, FLAG_NAMES, type FlagName, emptyFlagCounts, flagList } from './flags';
import { FrameRole, type FrameView, viewFrame } from './frame-view';
import { AddressNames } from './address-names';
import type { FlowSinks } from './flow';
import { streamCaptureFile } from './capture-stream';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { type ExactTime, exactTime } from '../base/exact-time';
import { perftestAnnouncement, tcpConnectionRequest } from './oob';
import { icmpUnreachable } from './icmp-unreachable';
import { ConnectionDoctor, type Diagnosis, type WireFacts, wireFacts } from './connection-doctor';
import { type CmConnection, CmConnectionTracker } from './cm-connections';
import { RECEIVE_DEPENDENT_RULES } from './gbn-checks';
import { type CaptureGap, type Episode, type FrameResult, type Message, type RuleId, type Side, Trigger, type Violation } from './types';
import { RXE_BEHAVIOUR_IDS, type RxeBehaviour, type RxeBehaviourId } from './rxe-behaviours';
import { PendingFrames } from './pending-frames';

/** rxe behaviours kept in the result; more are counted only. */
const MAX_RXE_BEHAVIOURS = 10_000;

/**
 * Where the capture was taken, as far as loss goes: 'unknown' (default; the analyzer
 * notices requests lost before the capture point by itself) or 'sent': every frame is
 * captured as its sender sent it and drops happen after the capture point, in both
 * directions (a mirror or tap before the lossy segment, the rxe lab's qemu filter-dump).
 * Then what each requester received is not known, and the rules that depend on it are
 * not checked (RECEIVE_DEPENDENT_RULES).
 * `host:IP`: the capture was taken at that host's NIC (tcpdump there): its own frames as it sent
 * them, its peers' as the network delivered them (lost, duplicated or reordered on the way). Each
 * flow is judged on the side the host plays: where it is the requester, the requester rules (it saw
 * exactly what it received); where it is the responder, the responder rules (it saw exactly the
 * requests it got). The peer's rules are not checked: a resend lost on the way looks like a skip,
 * a NAK the network reordered like a NAK out of order.
 */
export type CapturePoint = 'unknown' | 'sent' | `host:${string}`;

/** The host address of a `host:IP` capture point, or null. */
export function capturedAtHost(p: CapturePoint): string | null {
  return p.startsWith('host:') ? p.slice(5) : null;
}

/** A capture point as a user writes it (`--capture-point`), or null when it is none. */
export function parseCapturePoint(s: string): CapturePoint | null {
  if (s === 'unknown' || s === 'sent') return s;
  if (s.startsWith('host:') && s.length > 5) return s as CapturePoint;
  return null;
}

/** How to analyse: decode options, which lists to keep, the capture point, the conversation limit and the like. */
export interface AnalyzerOptions {
  decode?: DecodeOptions;
  /**
   * Keep messages, episodes, violations, flagged frames, capture gaps and CM connections in the
   * result (default true); false only counts them (constant memory). A `KeptLists` keeps the lists
   * it names and counts the rest: `roce analyze`'s summary needs none of the long ones.
   */
  keep?: boolean | KeptLists;
  /** Keep a FrameResult for every RoCE frame, not only flagged ones (default false). */
  allFrames?: boolean;
  /** Called for every RoCE frame with its result (e.g. to draw a ladder). */
  onFrame?: (r: FrameResult, p: RocePacket, v: FrameView | null) => void;
  /** Called with each loss-recovery episode once it is final (recovered, superseded, or at the end), whether kept or not. */
  onEpisode?: (e: Episode) => void;
  /** Called with each go-back-N rule violation as it is found, whether kept or not. */
  onViolation?: (v: Violation) => void;
  /**
   * Asked after each frame: true ends the analysis there, as if the capture ended (`roce analyze
   * --follow --fail-on` on a live capture stops at the first violation it names). The loops that
   * feed the analyzer (`analyzeFile`, view-batch.ts) read it through `Analyzer.wantsStop`.
   */
  until?: () => boolean;
  /**
   * Which frames the analysis takes, by number and time since the capture's first frame: one it
   * refuses is passed over as if the capture did not hold it (`--frames`, `--time-window`), and
   * times stay counted from the capture's first frame, selected or not.
   */
  select?: (index: number, timeNs: number) => boolean;
  /**
   * The conversations (by id) whose findings are reported: the messages, episodes, violations,
   * capture gaps, flagged frames and flag counts of the others are neither kept nor counted nor
   * handed on (`onEpisode`, `onViolation`, `spool`), nor are frames of no conversation. Every frame
   * is still analysed, so the conversation and episode ids and each conversation's findings are
   * those of the analysis without it (`roce analyze --conversation`, `--qpn`). `onFrame` still sees
   * every frame.
   */
  report?: ((conversation: number) => boolean) | undefined;
  /**
   * The most conversations the analysis starts (default `DEFAULT_MAX_CONVERSATIONS`). A frame that
   * would start one more ends the analysis there (`AnalysisResult.stopped`): each conversation
   * holds its counts and figures to the end, so a capture that starts one at nearly every frame
   * (PSNs that jump at random: not RoCE flows, or a corrupted capture) would otherwise grow until
   * the heap is exhausted and the process aborts.
   */
  maxConversations?: number;
  capturePoint?: CapturePoint;
  /**
   * Kept lists handed on as they are found, each item once final, instead of kept in the result
   * (whose array for such a list stays empty). `roce analyze` writes them to a temporary file
   * (base/sorted-spool.ts), so that its memory stays flat in the capture's size.
   */
  spool?: SpooledLists | undefined;
}

/**
 * Where `AnalyzerOptions.spool` hands each long list's items, with the key of their report order:
 * messages by first frame, episodes by first retransmission, violations by their last frame,
 * frames and capture gaps by number. A list without one is kept in memory.
 */
export interface SpooledLists {
  messages?: (key: number, m: Message) => void;
  episodes?: (key: number, e: Episode) => void;
  violations?: (key: number, v: Violation) => void;
  frames?: (key: number, f: FrameResult) => void;
  captureGaps?: (key: number, g: CaptureGap) => void;
}

/** Each long list's report order, by a key: the keys `SpooledLists` gets, and the sort of the lists kept in memory. */
const messageKey = (m: Message): number => m.firstFrame;
const episodeKey = (e: Episode): number => e.firstRetransmitFrame;
/** A violation is listed by its last frame. */
const violationKey = (v: Violation): number => v.frames[v.frames.length - 1] ?? 0;
const gapKey = (g: CaptureGap): number => g.frame;

/** A kept item: to its spool with its key when the list has one, else to the list in memory. */
function keepItem<T>(kept: T[], spool: ((key: number, item: T) => void) | undefined, key: (item: T) => number, item: T): void {
  if (spool !== undefined) spool(key(item), item);
  else kept.push(item);
}

/** Which lists an analysis keeps (`AnalyzerOptions.keep`); a list not named is only counted. */
export interface KeptLists {
  messages?: boolean;
  episodes?: boolean;
  violations?: boolean;
  /** Flagged frames (every RoCE frame with `allFrames`). */
  frames?: boolean;
  captureGaps?: boolean;
  cmConnections?: boolean;
}

function keptLists(keep: boolean | KeptLists | undefined): Required<KeptLists> {
  if (typeof keep === 'object') {
    const k = (v: boolean | undefined): boolean => v ?? false;
    return {
      messages: k(keep.messages),
      episodes: k(keep.episodes),
      violations: k(keep.violations),
      frames: k(keep.frames),
      captureGaps: k(keep.captureGaps),
      cmConnections: k(keep.cmConnections),
    };
  }
  const all = keep ?? true;
  return { messages: all, episodes: all, violations: all, frames: all, captureGaps: all, cmConnections: all };
}

export interface FrameTotals {
  total: number;
  roce: number;
  notRoce: number;
  /** RoCE frames that do not decode (other than a bad ICRC). */
  malformed: number;
  icrcBad: number;
  /** RoCE frames the capture cut short (snaplen): headers analysed, ICRC not captured. */
  truncated: number;
  /** RoCE frames whose ICRC was checked (captured in full, checking not turned off). */
  icrcChecked: number;
}

/**
 * How complete and faithful the capture is, as far as the frames show: how many RoCE frames it
 * holds and how many more the responses imply were sent, how many it cut short, whether it kept
 * the ICRCs, and whether it joined conversations after they started.
 */
export interface CaptureQuality {
  /** RoCE frames in the capture. */
  framesCaptured: number;
  /** Requests the responses show the responder got, that the capture does not hold (one per PSN). */
  framesImplied: number;
  /** Capture gaps (each a run of such requests), listed in `captureGaps`. */
  captureGaps: number;
  /** RoCE frames cut short by the capture (snaplen). */
  truncated: number;
  /**
   * 'preserved': the ICRCs checked are (nearly all) right; 'notPreserved': most fail, so the capture
   * tool likely did not keep them (analyse with --ignore-icrc); 'notChecked': checking turned off;
   * 'notCaptured': no frame was captured in full; 'none': no RoCE frame.
   */
  icrc: 'preserved' | 'notPreserved' | 'notChecked' | 'notCaptured' | 'none';
  /** Where the capture started: at the start of every conversation, or after some had begun. */
  start: 'connectionStart' | 'midConversation';
  /** Requester flows the capture joined after they started (first frame a response, first request mid-message, or an MSN counting unseen messages). */
  flowsJoinedMidway: number;
  /**
   * Responses captured before the request they answer, that request following within one trigger
   * TTL (8 round trips, at least 500 µs): the capture put the two directions out of order.
   */
  responsesBeforeRequests: number;
}

/** Share of checked ICRCs that must fail before the capture quality says the capture tool did not preserve them. */
export const ICRC_NOT_PRESERVED_SHARE = 0.5;

/**
 * Conversations an analysis starts at most unless told otherwise: about 3.7 KB each
 * (docs/performance.md, "Many conversations in little memory"), so about 370 MB in all, well
 * inside V8's default heap; ten times the 10 000 QPs of the largest run the project measures.
 */
export const DEFAULT_MAX_CONVERSATIONS = 100_000;

/** Why an analysis ended before its capture did, other than the capture's own end or error. */
export interface AnalysisStop {
  /** 'conversationLimit': frame `frame` would have started conversation `limit` + 1. */
  reason: 'conversationLimit';
  /** The last frame analysed (it is counted, and belongs to no conversation). */
  frame: number;
  limit: number;
}

/** How an analysis ended: whether the capture was read to its end, and whether the analysis went that far. */
export type AnalysisEnd = Pick<AnalysisResult, 'captureError' | 'stopped'>;

/** The part of `result` that says how it ended. */
export function analysisEnd(result: AnalysisResult): AnalysisEnd {
  return { captureError: result.captureError, stopped: result.stopped };
}

/** Everything an analysis found: frame totals, conversations, messages, episodes, violations, flagged frames and CM connections. */
export interface AnalysisResult {
  frames: FrameTotals;
  /** Capture time of the first frame, exact, with the capture's decimals (the epoch for an empty capture). */
  startTime: ExactTime;
  durationNs: number;
  conversations: Conversation[];
  messages: Message[];
  episodes: Episode[];
  violations: Violation[];
  /** Behaviour of rxe's own choosing (rxe-behaviours.ts), never a violation: kept whatever `keep` says (one per RNR NAK at most). */
  rxeBehaviours: RxeBehaviour[];
  /** Flagged frames (every RoCE frame with `allFrames`). */
  frameResults: FrameResult[];
  flagCounts: Record<FlagName, number>;
  messageCount: number;
  episodeCount: number;
  violationCount: number;
  /** Messages per requester flow, by `flowKey` of conversation id and requester side: counted whether or not the messages are kept. */
  messagesPerFlow: ReadonlyMap<number, number>;
  /** Episodes by trigger, counted whether or not they are kept. */
  episodesByTrigger: Record<Trigger, number>;
  /** Violations by rule, counted whether or not they are kept. */
  violationsByRule: ReadonlyMap<RuleId, number>;
  /** rxe behaviours by kind, counted whether or not they are kept. */
  rxeBehavioursById: Readonly<Record<RxeBehaviourId, number>>;
  /** How reading the capture ended: null when read completely. */
  captureError: WireError | null;
  /** Why the analysis ended before the capture did (null: it did not, or `until` ended it). */
  stopped: AnalysisStop | null;
  capturePoint: CapturePoint;
  /** Rules not checked anywhere in this capture because of where it was taken. */
  rulesNotChecked: RuleId[];
  /** Requests the capture missed although the responder got them (kept with `keep`). */
  captureGaps: CaptureGap[];
  captureQuality: CaptureQuality;
  /** RDMA CM connections by communication-ID pair (kept with `keep`; cm-connections.ts). */
  cmConnections: CmConnection[];
  cmConnectionCount: number;
  /** Why a connection never came up, as the frames show it (connection-doctor.ts); empty when they show nothing wrong. */
  diagnosis: Diagnosis[];
}

/** How a RoCE frame decoded, as the frame totals count it (`Analyzer.pushRoce`). */
export const TotalsBit = { ICRC_CHECKED: 1, ICRC_BAD: 2, ERROR: 4, TRUNCATED: 8 } as const;

/** `TotalsBit`s of a decoded RoCE frame. ERROR is a fault of the frame (`frameFault`): the capture's cut is TRUNCATED only. */
export function frameTotalsBits(d: RocePacket): number {
  return (
    (d.icrcOk !== null ? TotalsBit.ICRC_CHECKED : 0) |
    (d.icrcOk === false ? TotalsBit.ICRC_BAD : 0) |
    (frameFault(d) !== null ? TotalsBit.ERROR : 0) |
    (d.truncated ? TotalsBit.TRUNCATED : 0)
  );
}

/** A MAD to the general services QP (QP 1), by the frame's transport and BTH DestQP: RDMA CM sets connections up with these. */
export function isCmMad(transport: Transport | '', destQp: number): boolean {
  return transport === Transport.UD && destQp === 1;
}

/** The key of a requester flow in `AnalysisResult.messagesPerFlow`. */
export function flowKey(conversation: number, requester: Side): number {
  return conversation * 2 + (requester === 'a' ? 0 : 1);
}

/** Frames whose flags may still change, kept at most (the oldest are let go). */
const PENDING_FLAGS = 1 << 16;

export class Analyzer {
  private readonly table: ConversationTable;
  /** Address texts made once per address (frame-view.ts). */
  private readonly names = new AddressNames();
  private readonly keep: Required<KeptLists>;
  private readonly spool: SpooledLists;
  private readonly allFrames: boolean;
  private readonly onFrame: AnalyzerOptions['onFrame'];
  private readonly until: AnalyzerOptions['until'];
  private readonly select: AnalyzerOptions['select'];
  private readonly report: AnalyzerOptions['report'];
  private readonly decodeOpts: DecodeOptions;
  /** The buffer the last record lay in, and a view of it. */
  private buffer: Uint8Array = new Uint8Array(0);
  private bufferView: DataView = new DataView(new ArrayBuffer(0));
  private readonly capturePoint: CapturePoint;
  private t0: bigint | null = null;
  private startTime: ExactTime = { sec: 0, nsec: 0, digits: 6 };
  private lastNs = 0;
  private episodeId = 0;
  readonly totals: FrameTotals = { total: 0, roce: 0, notRoce: 0, malformed: 0, icrcBad: 0, truncated: 0, icrcChecked: 0 };
  readonly captureGaps: CaptureGap[] = [];
  captureGapCount = 0;
  /** Results of frames flagged outOfSequence, until the responses say whether the hole was the capture's. */
  private readonly pendingFlags = new PendingFrames(PENDING_FLAGS);
  readonly flagCounts = emptyFlagCounts();
  readonly messages: Message[] = [];
  readonly episodes: Episode[] = [];
  readonly violations: Violation[] = [];
  readonly rxeBehaviours: RxeBehaviour[] = [];
  private readonly rxeBehavioursById = Object.fromEntries(RXE_BEHAVIOUR_IDS.map((b) => [b, 0])) as Record<RxeBehaviourId, number>;
  readonly frameResults: FrameResult[] = [];
  messageCount = 0;
  episodeCount = 0;
  violationCount = 0;
  private readonly messagesPerFlow = new Map<number, number>();
  private readonly episodesByTrigger = Object.fromEntries(Object.values(Trigger).map((t) => [t, 0])) as Record<Trigger, number>;
  private readonly violationsByRule = new Map<RuleId, number>();
  captureError: WireError | null = null;
  /** The diagnosis of connections that never came up. */
  private readonly doctor = new ConnectionDoctor();

  constructor(opts: AnalyzerOptions = {}) {
    this.keep = keptLists(opts.keep);
    this.spool = opts.spool ?? {};
    this.allFrames = opts.allFrames ?? false;
    this.onFrame = opts.onFrame;
    this.until = opts.until;
    this.select = opts.select;
    this.report = opts.report;
    this.decodeOpts = opts.decode ?? {};
    this.capturePoint = opts.capturePoint ?? 'unknown';
    const sinks: FlowSinks = {
      requesterInputKnown: this.capturePoint !== 'sent',
      capturedAt: capturedAtHost(this.capturePoint),
      message: (m) => {
        if (!this.reports(m.conversation)) return;
        this.messageCount++;
        const flow = flowKey(m.conversation, m.requester);
        this.messagesPerFlow.set(flow, (this.messagesPerFlow.get(flow) ?? 0) + 1);
        if (this.keep.messages) keepItem(this.messages, this.spool.messages, messageKey, m);
      },
      episode: (e) => {
        if (!this.reports(e.conversation)) return;
        this.episodeCount++;
        this.episodesByTrigger[e.trigger]++;
        if (this.keep.episodes) keepItem(this.episodes, this.spool.episodes, episodeKey, e);
        opts.onEpisode?.(e);
      },
      violation: (v) => {
        if (!this.reports(v.conversation)) return;
        this.violationCount++;
        this.violationsByRule.set(v.rule, (this.violationsByRule.get(v.rule) ?? 0) + 1);
        if (this.keep.violations) keepItem(this.violations, this.spool.violations, violationKey, v);
        opts.onViolation?.(v);
      },
      rxeBehaviour: (b) => {
        if (!this.reports(b.conversation)) return;
        this.rxeBehavioursById[b.behaviour]++;
        if (this.rxeBehaviours.length < MAX_RXE_BEHAVIOURS) this.rxeBehaviours.push(b);
      },
      nextEpisodeId: () => ++this.episodeId,
      captureGap: (g, clear, mark, conversation) => {
        // The frames marked or cleared are the flow's own: their flags were counted only if it is reported.
        if (!this.reports(conversation)) return;
        if (g !== null) {
          this.captureGapCount++;
          if (this.keep.captureGaps) keepItem(this.captureGaps, this.spool.captureGaps, gapKey, g);
        }
        if (mark !== null) this.reflag(mark, 'notCaptured', true);
        for (const f of clear) this.reflag(f, 'outOfSequence', false);
      },
    };
    const maxConversations = opts.maxConversations ?? DEFAULT_MAX_CONVERSATIONS;
    if (!(maxConversations >= 1)) throw new ProgrammingError(ProgrammingErrorCode.Misuse, `maxConversations must be at least 1, not ${maxConversations}`);
    this.table = new ConversationTable(sinks, maxConversations);
    this.cm = new CmConnectionTracker(
      {
        established: (active, passive, connection) => {
          const c = this.table.cmEstablished(active, passive);
          c.cmConnection = connection;
          return c.id;
        },
        disconnected: (conversation) => this.table.cmEnded(conversation, this.frameNo),
      },
      this.keep.cmConnections,
    );
  }

  /** RDMA CM connections; a REP answering an RC REQ the capture holds establishes a conversation (IBTA vol. 1 §12.6), a DREQ or REJ ends it. */
  private readonly cm: CmConnectionTracker;
  /** The frame being analysed. */
  private frameNo = 0;

  /** Whether the findings of `conversation` (null: a frame of none) are reported (`AnalyzerOptions.report`). */
  private reports(conversation: number | null): boolean {
    return this.report === undefined || (conversation !== null && this.report(conversation));
  }

  /** True when the analysis is to end after the frame just pushed: `AnalyzerOptions.until` asks it, or the frame was past the conversation limit. */
  get wantsStop(): boolean {
    return this.table.refusedFrame !== null || this.until?.() === true;
  }

  /** Why the analysis ended early, if it was not `until`. */
  private get stopped(): AnalysisStop | null {
    const frame = this.table.refusedFrame;
    return frame === null ? null : { reason: 'conversationLimit', frame, limit: this.table.limit };
  }

  /** A CM MAD: to the connection tracker. */
  private cmMessage(d: RocePacket, v: FrameView): void {
    const m = d.mad?.cm;
    if (m === undefined || m === null) return;
    this.cm.message(m, d.mad?.ipCm ?? null, { frame: v.frame, timeNs: v.timeNs, src: v.src, dst: v.dst });
  }

  /** Sets or clears a flag of a frame already reported (a capture gap found after it). */
  private reflag(frame: number, name: FlagName, on: boolean): void {
    this.flagCounts[name] += on ? 1 : -1;
    const r = this.pendingFlags.get(frame);
    if (r === undefined) return;
    const set = new Set(r.flags);
    if (on) set.add(name);
    else set.delete(name);
    r.flags.splice(0, r.flags.length, ...FLAG_NAMES.filter((n) => set.has(n)));
    if (!on) {
      this.pendingFlags.delete(frame);
      this.spoolFrame(r);
    }
  }

  /** A kept frame's result is final (no longer pending): to the spool, if flagged or all frames are kept. */
  private spoolFrame(r: FrameResult): void {
    const spool = this.spool.frames;
    if (spool !== undefined && this.keep.frames && (this.allFrames || r.flags.length > 0)) spool(r.frame, r);
  }

  /** Decodes and analyses one capture record (its data need only stay valid for this call). */
  push(rec: CaptureRecord): void {
    // Records usually lie in one read buffer (capture-stream.ts): one DataView over it serves them
    // all, where a DataView per frame cost about 5 % of the analysis.
    const d = rec.data;
    if (d.buffer !== this.buffer.buffer) {
      this.buffer = new Uint8Array(d.buffer);
      this.bufferView = new DataView(d.buffer);
    }
    const start = d.byteOffset;
    this.pushDecoded(rec, decodeAt(this.bufferView, this.buffer, start, start + d.byteLength, rec.linkType, this.decodeOpts, rec.origLen));
  }

  /**
   * Analyses a frame already decoded. With the record's `data` and `linkType`, a frame that is
   * not RoCE is looked at for an out-of-band connection set-up (TCP SYN; see conversations.ts).
   */
  pushDecoded(rec: { index: number; timestampNs: bigint; timeDigits: number; data?: Uint8Array; linkType?: number }, d: DecodedFrame): void {
    if (this.t0 === null) {
      this.t0 = rec.timestampNs;
      this.startTime = exactTime(rec.timestampNs, rec.timeDigits);
    }
    const timeNs = Number(rec.timestampNs - this.t0);
    if (!d.roce) {
      const { data, linkType } = rec;
      if (data !== undefined && linkType !== undefined) this.pushNotRoceFrame(rec.index, timeNs, data, linkType);
      else this.pushNotRoce(rec.index, timeNs, null);
      return;
    }
    this.pushRoce(rec.index, timeNs, frameTotalsBits(d), viewFrame(rec.index, timeNs, d, this.names), d);
  }

  /**
   * The capture time of the first frame, for a caller that hands in frames by `pushNotRoce` and
   * `pushRoce` with times it made relative to that frame itself (capture-engine/analyze-workers.ts).
   */
  setStartTime(t: ExactTime): void {
    this.startTime = { ...t };
  }

  /**
   * Frame `index`, `timeNs` after the first, is not RoCE, with its bytes: a TCP SYN opens a
   * connection (conversations.ts); an ICMP unreachable for the RoCE port or a perftest key message
   * goes to the diagnosis.
   */
  pushNotRoceFrame(index: number, timeNs: number, data: Uint8Array, linkType: number): void {
    this.pushNotRoce(index, timeNs, tcpConnectionRequest(data, linkType));
    if (this.select !== undefined && !this.select(index, timeNs)) return;
    const u = icmpUnreachable(data, linkType, this.decodeOpts.rocePort ?? 4791);
    if (u !== null) this.doctor.onIcmp(index, u);
    const said = u === null ? perftestAnnouncement(data, linkType) : null;
    if (said !== null) this.doctor.onAnnouncement(index, said);
  }

  /** Frame `index`, `timeNs` after the first, is not RoCE; `syn` is the connection it opens, if it is a TCP SYN. */
  pushNotRoce(index: number, timeNs: number, syn: { src: string; dst: string } | null): void {
    if (this.select !== undefined && !this.select(index, timeNs)) return;
    this.frameStart(index, timeNs);
    this.totals.notRoce++;
    if (syn !== null) this.table.outOfBand(syn.src, syn.dst, timeNs);
  }

  private frameStart(index: number, timeNs: number): void {
    this.totals.total++;
    this.frameNo = index;
    this.lastNs = Math.max(this.lastNs, timeNs);
  }

  /**
   * RoCE frame `index`, `timeNs` after the first: `totalsBits` (`frameTotalsBits`) says how it
   * decoded, `v` is its view (null without a BTH). `d`, the packet itself, is needed only for a CM
   * MAD (UD to QP 1) and by `onFrame`. `facts`, what the diagnosis reads beyond the view, is taken
   * from `d` when it is given, else from `facts` (view-batch.ts carries them).
   */
  pushRoce(index: number, timeNs: number, totalsBits: number, v: FrameView | null, d: RocePacket | null, facts?: WireFacts): void {
    if (this.select !== undefined && !this.select(index, timeNs)) return;
    this.frameStart(index, timeNs);
    this.totals.roce++;
    const truncated = (totalsBits & TotalsBit.TRUNCATED) !== 0;
    if ((totalsBits & TotalsBit.ICRC_BAD) !== 0) this.totals.icrcBad++;
    else if ((totalsBits & TotalsBit.ERROR) !== 0) this.totals.malformed++;
    if ((totalsBits & TotalsBit.ICRC_CHECKED) !== 0) this.totals.icrcChecked++;
    if (truncated) this.totals.truncated++;
    let bits = 0;
    let conversation: number | null = null;
    let from: 'a' | 'b' | null = null;
    if (v === null) {
      // No BTH: the frame is malformed, or the capture ended inside the BTH (it is only truncated).
      bits = (totalsBits & TotalsBit.ERROR) !== 0 ? FLAG_BIT.malformed : 0;
    } else {
      // A MAD to the GSI QP (RDMA CM) sets connections up between the two hosts.
      if (isCmMad(v.transport, v.destQp)) {
        this.table.outOfBand(v.src, v.dst, timeNs);
        if (d === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a MAD to QP 1 must be pushed with its packet: its CM message is read from it');
        this.cmMessage(d, v);
      }
      const f = d !== null ? wireFacts(d) : facts;
      if (f === undefined) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a RoCE frame pushed without its packet needs its wire facts');
      this.doctor.onRoce(v, f);
      const r = v.role === FrameRole.OTHER || v.transport === '' ? null : this.table.route(v);
      if (r === null) {
        if (v.role === FrameRole.CNP) bits |= FLAG_BIT.cnp;
        if (v.icrcBad) bits |= FLAG_BIT.icrcBad;
        else if (v.malformed) bits |= FLAG_BIT.malformed;
        if (v.ecnCe) bits |= FLAG_BIT.ecnCe;
      } else {
        const { conv } = r;
        conv.touch(v);
        if (conv.cmConnection !== null) this.cm.data(conv.id, v.frame, v.timeNs);
        conversation = conv.id;
        from = r.from;
        const flow = conv.flow(r.requester);
        if (v.role === FrameRole.CNP) {
          conv.cnps++;
          conv.congestionOf(r.requester, timeNs, true)?.onCnp(index, timeNs);
          bits = FLAG_BIT.cnp | (v.ecnCe ? FLAG_BIT.ecnCe : 0) | (v.icrcBad ? FLAG_BIT.icrcBad : 0);
        } else if (v.role === FrameRole.REQUEST) {
          bits = flow.onRequest(v);
          conv.congestionOf(r.requester, timeNs, v.ecnCe)?.onRequest(timeNs, v.payloadLength, v.ecnCe);
        } else {
          bits = flow.onResponse(v);
        }
      }
    }
    if (truncated) bits |= FLAG_BIT.truncated;
    const reported = this.reports(conversation);
    if (reported) for (const name of flagList(bits)) this.flagCounts[name]++;
    const kept = reported && this.keep.frames && (bits !== 0 || this.allFrames);
    const pending = reported && (bits & FLAG_BIT.outOfSequence) !== 0;
    if (!pending && this.onFrame === undefined && !kept) return;
    const res: FrameResult = {
      frame: index,
      timeNs,
      conversation,
      from,
      opcode: v?.opName ?? 'UNDECODED',
      psn: v?.psn ?? -1,
      flags: flagList(bits),
    };
    if (kept) {
      // A pending frame's flags may still change: it goes to the spool once they are final.
      if (this.spool.frames === undefined) this.frameResults.push(res);
      else if (!pending) this.spoolFrame(res);
    }
    if (pending) {
      const oldest = this.pendingFlags.add(index, res);
      if (oldest !== undefined) this.spoolFrame(oldest);
    }
    if (this.onFrame !== undefined) {
      if (d === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'an analysis with onFrame needs every RoCE frame pushed with its packet');
      this.onFrame(res, d, v);
    }
  }

  /** Ends the analysis: flushes open messages and episodes. */
  finish(): AnalysisResult {
    for (const c of this.table.list) {
      c.flows.a?.finish();
      c.flows.b?.finish();
      c.congestion.a?.finish(this.lastNs);
      c.congestion.b?.finish(this.lastNs);
    }
    // Frames still pending at the end keep the flags they have.
    for (const r of this.pendingFlags.values()) this.spoolFrame(r);
    this.pendingFlags.clear();
    this.messages.sort((x, y) => messageKey(x) - messageKey(y));
    this.episodes.sort((x, y) => episodeKey(x) - episodeKey(y));
    this.violations.sort((x, y) => violationKey(x) - violationKey(y));
    this.rxeBehaviours.sort((x, y) => (x.frames[x.frames.length - 1] ?? 0) - (y.frames[y.frames.length - 1] ?? 0));
    this.captureGaps.sort((x, y) => gapKey(x) - gapKey(y));
    // A frame whose only flag was taken back (outOfSequence in a capture gap) is no longer flagged.
    const results = this.allFrames ? this.frameResults : this.frameResults.filter((r) => r.flags.length > 0);
    return {
      frames: this.totals,
      startTime: this.startTime,
      durationNs: this.lastNs,
      conversations: this.table.list,
      messages: this.messages,
      episodes: this.episodes,
      violations: this.violations,
      rxeBehaviours: this.rxeBehaviours,
      frameResults: results,
      flagCounts: this.flagCounts,
      messageCount: this.messageCount,
      episodeCount: this.episodeCount,
      violationCount: this.violationCount,
      messagesPerFlow: this.messagesPerFlow,
      episodesByTrigger: { ...this.episodesByTrigger },
      violationsByRule: this.violationsByRule,
      rxeBehavioursById: { ...this.rxeBehavioursById },
      captureError: this.captureError,
      capturePoint: this.capturePoint,
      rulesNotChecked: this.capturePoint === 'sent' ? [...RECEIVE_DEPENDENT_RULES] : [],
      captureGaps: this.captureGaps,
      captureQuality: this.quality(),
      cmConnections: this.cm.finish(),
      cmConnectionCount: this.cm.count,
      stopped: this.stopped,
      diagnosis: this.doctor.finish(),
    };
  }

  private quality(): CaptureQuality {
    const t = this.totals;
    let implied = 0;
    let early = 0;
    let midway = 0;
    for (const c of this.table.list) {
      for (const f of [c.flows.a, c.flows.b]) {
        if (f === null) continue;
        implied += f.unseenPsns;
        if (f.startedMidway) midway++;
        early += f.responsesBeforeRequests;
      }
    }
    const icrc: CaptureQuality['icrc'] =
      t.roce === 0
        ? 'none'
        : this.decodeOpts.verifyIcrc === false
          ? 'notChecked'
          : t.icrcChecked === 0
            ? 'notCaptured'
            : t.icrcBad > t.icrcChecked * ICRC_NOT_PRESERVED_SHARE
              ? 'notPreserved'
              : 'preserved';
    return {
      framesCaptured: t.roce,
      framesImplied: implied,
      captureGaps: this.captureGapCount,
      truncated: t.truncated,
      icrc,
      start: midway > 0 ? 'midConversation' : 'connectionStart',
      flowsJoinedMidway: midway,
      responsesBeforeRequests: early,
    };
  }
}

/** Analyses a whole capture held in memory. */
export function analyzeCapture(file: Uint8Array, opts: AnalyzerOptions = {}): AnalysisResult {
  const a = new Analyzer(opts);
  const it = iterateCapture(file);
  for (;;) {
    const step = it.next();
    if (step.done === true) {
      a.captureError = step.value;
      break;
    }
    a.push(step.value);
    if (a.wantsStop) break;
  }
  return a.finish();
}

/** Analyses a capture file read from disk in pieces (memory does not grow with the file: classic pcap in chunks, pcapng by block). */
export function analyzeFile(path: string, opts: AnalyzerOptions = {}): AnalysisResult {
  const a = new Analyzer(opts);
  const it = streamCaptureFile(path);
  for (;;) {
    const step = it.next();
    if (step.done === true) {
      a.captureError = step.value.error;
      break;
    }
    a.push(step.value);
    if (a.wantsStop) {
      it.return({ format: 'pcap', error: null });
      break;
    }
  }
  return a.finish();
}
