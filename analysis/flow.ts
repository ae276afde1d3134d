/**
 * One requester flow of a conversation: the requests one endpoint sends and
 * the responses its peer sends back. Decides each frame's flags and feeds the
 * message, recovery, rule and figure trackers. Constant memory per flow
 * except for bounded windows (outstanding PSNs, open messages).
 *
 * PSN models kept here (all modulo 2^24):
 *  - coverHigh: highest PSN the requester has sent (requests, and READ response PSNs);
 *  - expected: the next PSN a responder would accept (its ePSN), from the requests in the
 *    capture in order, re-synchronised by NAK and RNR NAK PSNs;
 *  - respHigh: highest PSN any response has acknowledged;
 *  - compHigh (in MessageTracker): the requester's in-order completion point.
 */
import { OpFlag } from '../packets/opcodes';
import { AethKind, NakCode, RNR_TIMER_USEC } from '../packets/aeth';
import { FLAG_BIT, type FlagName, emptyFlagCounts } from './flags';
import type { FrameView } from './frame-view';
import { MessageTracker } from './messages';
import { RecoveryTracker, type TxInfo } from './episodes';
import { GbnChecker, resumesAtFirstUnacked } from './gbn-checks';
import { TxRing } from './tx-ring';
import { type RxeBehaviour, RxeBehaviourTracker } from './rxe-behaviours';
import { FlowFigures } from './figures';
import { psnAdd, psnDiff, psnMax } from '../base/psn';
import { type CaptureGap, type Episode, type Message, MessageOp, type Side, Trigger, type Violation } from './types';

/** A copy of the previous frame within this time, with nothing in between, is a network duplicate. */
export const DUP_WINDOW_NS = 8000;
/** Smallest path MTU: bounds how many PSNs a READ of unknown MTU may cover. */
const MIN_PMTU = 256;
/** PSNs a READ may cover at most: a message of 2^31 bytes (rxe_param.h RXE_PORT_MAX_MSG_SZ, IBTA's largest) in 256-byte packets. */
const READ_SPAN_MAX = 2 ** 31 / MIN_PMTU;
/** A NAK not answered by a retransmission within this long (or 8 round trips) was ignored by the requester. */
export const TRIGGER_TTL_FLOOR_NS = 500_000;
/** Out-of-sequence frames remembered per open hole (for taking the flag back when the hole was the capture's). */
const HOLE_FRAMES = 4096;
/** PSNs a go-back-N burst went past that are marked as sent unseen (tx-ring.ts `unseen`); a wider skip marks its first ones. */
const MAX_UNSEEN_MARKED = 256;

export interface FlowSinks {
  message: (m: Message) => void;
  episode: (e: Episode) => void;
  violation: (v: Violation) => void;
  nextEpisodeId: () => number;
  /** False when the capture does not show what a requester received (frames captured as sent, dropped after). */
  requesterInputKnown?: boolean;
  /** The host whose NIC the capture was taken at (`host:IP` capture point), or null. */
  capturedAt?: string | null;
  /**
   * A capture gap found (`g`): requests the responder got that the capture does not hold; `mark` is
   * the frame that shows it, to flag notCaptured (null when it carries ackedUnseen already). Or
   * (`g` null) frames flagged outOfSequence that were in sequence for the responder after all: `clear`.
   * `conversation`: the flow's, which every frame marked or cleared belongs to.
   */
  captureGap?: (g: CaptureGap | null, clear: readonly number[], mark: number | null, conversation: number) => void;
  /** A behaviour of rxe's own choosing (rxe-behaviours.ts): reported beside violations, never as one. */
  rxeBehaviour?: (b: RxeBehaviour) => void;
}

/**
 * A violation waiting for the responses (`deferUnlessReceived`), over PSNs from `from` on.
 * `turnedAway`: the responder turned away a PSN before `from` (an RNR NAK, a PSN sequence error NAK)
 * while the violation waited or just before: it dropped whatever it got of those PSNs unanswered.
 */
interface Deferred {
  report: () => void;
  from: number;
  turnedAway: boolean;
}

/**
 * PSNs a responder has not been shown to receive: the requests after them arrived out of sequence
 * as far as the capture shows. Whether the hole is the capture's or the wire's is decided by the
 * responses: one that acknowledges past a range shows the responder got it (a capture gap); a
 * PSN sequence error NAK inside it shows it did not.
 */
interface Hole {
  /** Each range of PSNs not shown, the frame after it, and the violations that hold only if the responder did not get them. */
  ranges: { from: number; to: number; frame: number; deferred: Deferred[]; shownTo?: number }[];
  /** Frames flagged outOfSequence while the hole was open, with their PSNs. */
  oos: { frame: number; psn: number }[];
  /** Highest PSN the out-of-sequence requests covered. */
  seenHigh: number;
}

/** Ranges kept per hole (more are folded into the last). */
const HOLE_RANGES = 256;

interface LastFrame {
  frame: number;
  timeNs: number;
  psn: number;
  icrc: number;
}

const NAK_FLAG: Readonly<Record<number, FlagName>> = {
  [NakCode.PSN_SEQUENCE_ERROR]: 'nakSeqErr',
  [NakCode.INVALID_REQUEST]: 'nakInvReq',
  [NakCode.REMOTE_ACCESS_ERROR]: 'nakRemAccess',
  [NakCode.REMOTE_OPERATIONAL_ERROR]: 'nakRemOp',
};

export class RequesterFlow {
  readonly figures = new FlowFigures();
  readonly counts = emptyFlagCounts();
  requests = 0;
  responses = 0;
  /** Highest PSN sent, null before the first request. */
  coverHigh: number | null = null;
  expected: number | null = null;
  private expectedSlack = 0;
  /**
   * A first transmission skipped PSNs: requests are lost before this capture point, so what
   * the requester sent cannot be judged from it (its rules are not checked from then on).
   */
  lossBeforeCapture = false;
  /** PSNs the last new request may cover beyond coverHigh (a READ of unknown path MTU). */
  private coverSlack = 0;
  /** The last request of the go-back-N burst in progress, when it is a READ resent before the path MTU was known. */
  private burstRead: { psn: number; length: number } | null = null;
  /** The last new request, when it is a READ sent before the path MTU was known: its span is learnt with the MTU. */
  private spanUnknownRead: { psn: number; length: number } | null = null;
  respHigh: number | null = null;
  /** Path MTU learnt from full-size FIRST/MIDDLE packets (0 = not yet). */
  pmtu = 0;
  readonly messages: MessageTracker;
  readonly recovery: RecoveryTracker;
  readonly checker: GbnChecker;
  private readonly tx = new TxRing();
  private lastReq: LastFrame | null = null;
  /** PSNs of first-transmission requests with AckReq, not yet acknowledged (a FIFO). */
  private readonly ackReqPsns: number[] = [];
  private readonly ackReqTimes: number[] = [];
  /** Smallest request-to-ACK time seen (a round trip at the requester's host), or Infinity. */
  rttMinNs = Infinity;
  private ackReqHead = 0;
  /** The responder's QPN, fixed by the first request (null while only responses were seen). */
  responderQpn: number | null = null;
  /** Capture gaps found in this flow (requests the responder got that the capture does not hold). */
  captureGaps = 0;
  /** Request PSNs the responses show were sent but the capture does not hold. */
  unseenPsns = 0;
  /**
   * The capture joined this flow after it started: its first frame is a response, its first
   * request continues a message, or the responder's first MSN counts messages never captured.
   */
  startedMidway = false;
  private hole: Hole | null = null;
  /** Highest PSN a captured request may draw a response for (a READ's responses run past its PSN). */
  /** The highest PSN a READ response may carry: a READ's last response PSN (with a 256-byte MTU while the MTU is unknown). */
  reachHigh: number | null = null;
  /** Highest PSN acknowledged although no captured request carried it (ackedUnseen). */
  private unseenHigh: number | null = null;
  /** The response behind unseenHigh: if a later first transmission carries one of its PSNs, it acknowledged a PSN before it was sent. */
  private aheadAck: { frame: number; psn: number; opName: string; timeNs: number } | null = null;
  /**
   * Responses captured before the first transmission of a PSN they acknowledge, that request following
   * within one trigger TTL: the capture recorded the two directions out of order (a mirror port,
   * per-queue timestamps), which is evidence about the capture point, not about the protocol.
   */
  responsesBeforeRequests = 0;
  private messageStarts = 0;
  private reachOpen = false;
  /** The latest RNR NAK's PSN and frame, RNR NAKs for that PSN in a row, and resends of it the capture lost (rnrAnswered). */
  private readonly rnrSeen = { psn: -1, frame: -1, answers: 0, lost: 0 };
  /** The latest PSN sequence error NAK's PSN, and the request (a later PSN) captured just before it: what drew it (-1 when unknown). */
  private readonly nakSeqDrawn = { psn: -1, byFrame: -1 };
  /** The PSN the responder last turned away (RNR NAK, PSN sequence error NAK), until a request at it or an acknowledgement past it. */
  private refusedAt: number | null = null;
  private msnSeen = false;
  private readonly sinks: FlowSinks;
  private readonly rxe: RxeBehaviourTracker;
  /** The capture was taken at the requester's NIC: it sent each request when the capture shows it. */
  private readonly capturedAtRequester: boolean;

  constructor(
    readonly conversation: number,
    readonly requester: Side,
    /** RC or XRC: acknowledged, go-back-N. */
    readonly reliable: boolean,
    /** UD: no PSN order across destinations, no responses. */
    readonly datagram: boolean,
    sinks: FlowSinks,
    /** The requester's IP address (null when not known). */
    requesterIp: string | null = null,
  ) {
    this.sinks = sinks;
    this.messages = new MessageTracker(conversation, requester, reliable, (m) => {
      this.onMessage(m);
      sinks.message(m);
    });
    this.recovery = new RecoveryTracker(conversation, requester, 0, sinks.nextEpisodeId, sinks.episode);
    this.checker = new GbnChecker(conversation, requester, sinks.violation);
    this.rxe = new RxeBehaviourTracker(conversation, requester, sinks.rxeBehaviour ?? (() => undefined));
    this.checker.requesterInputKnown = sinks.requesterInputKnown ?? true;
    // A capture at one host judges the side that host plays (analyzer.ts CapturePoint).
    const at = sinks.capturedAt ?? null;
    this.capturedAtRequester = at !== null && at === requesterIp;
    if (at !== null && requesterIp !== null) {
      if (at === requesterIp) this.checker.responderRules = false;
      else this.checker.requesterRules = false;
    }
    this.checker.defer = (from, to, frame, report) => this.deferUnlessReceived(from, to, frame, report);
  }

  /**
   * The connection's start as an RDMA CM exchange in the capture gives it: this requester's first
   * PSN. A first request after it then shows the requests the capture lost before it.
   */
  seedStart(psn: number, responderQpn: number): void {
    if (this.coverHigh !== null || this.requests > 0) return;
    this.firstPsn = psn;
    this.coverHigh = psnAdd(psn, -1);
    this.reachHigh = this.coverHigh;
    if (!this.datagram) this.expected = psn;
    this.responderQpn = responderQpn;
    this.startKnown = true;
  }

  /** The capture shows where this flow started (seedStart): it cannot have joined it midway. */
  private startKnown = false;

  /** The hole a request out of sequence shows: PSNs from `from` up to it that the capture has not shown. */
  private noteHole(from: number, v: FrameView, n: number): void {
    const top = psnAdd(v.psn, this.spanUpTo(v, n) - 1);
    let h = this.hole;
    if (h === null) h = this.hole = { ranges: [], oos: [], seenHigh: psnAdd(from, -1) };
    const gapFrom = psnDiff(from, psnAdd(h.seenHigh, 1)) > 0 ? from : psnAdd(h.seenHigh, 1);
    if (psnDiff(v.psn, gapFrom) > 0) {
      const r = this.addRange(h, gapFrom, psnAdd(v.psn, -1), v.frame);
      // The PSNs the capture already showed being sent (a READ's whole span as far as it can tell):
      // should the responder turn out to have got them, they are not missing from the capture.
      const shown = this.reachHigh !== null && this.coverHigh !== null && psnDiff(this.reachHigh, this.coverHigh) > 0 ? this.reachHigh : this.coverHigh;
      if (r.shownTo === undefined && shown !== null && psnDiff(shown, gapFrom) >= 0) r.shownTo = shown;
    }
    if (h.oos.length < HOLE_FRAMES) h.oos.push({ frame: v.frame, psn: v.psn });
    if (psnDiff(top, h.seenHigh) > 0) h.seenHigh = top;
  }

  private addRange(h: Hole, from: number, to: number, frame: number): Hole['ranges'][number] {
    const last = h.ranges[h.ranges.length - 1];
    if (last !== undefined && h.ranges.length >= HOLE_RANGES) {
      if (psnDiff(to, last.to) > 0) last.to = to;
      return last;
    }
    const r = { from, to, frame, deferred: [] };
    h.ranges.push(r);
    return r;
  }

  /**
   * A violation that holds only if the responder did not get PSNs from..to, which the capture does
   * not show being sent (a retransmission the capture missed looks like a skip): it waits for the
   * responses. A PSN sequence error NAK inside the range confirms it; an acknowledgement past the
   * range shows the capture missed the requests, and it is dropped.
   */
  private deferUnlessReceived(from: number, to: number, frame: number, report: () => void): void {
    let h = this.hole;
    if (h === null) h = this.hole = { ranges: [], oos: [], seenHigh: to };
    const r = h.ranges.find((x) => psnDiff(from, x.to) <= 0 && psnDiff(to, x.from) >= 0) ?? this.addRange(h, from, to, frame);
    r.deferred.push({ report, from, turnedAway: this.refusedAt !== null && psnDiff(this.refusedAt, from) < 0 });
  }

  /** Out-of-sequence frames after `from` were out of sequence for the responder too: their flags stay. */
  private settleAfter(h: Hole, from: number): void {
    h.oos = h.oos.filter((o) => psnDiff(o.psn, from) <= 0);
  }

  /**
   * PSNs request `v` may take at most (`n` as far as the capture tells): a READ of unknown path MTU
   * one per 256 bytes of its length.
   */
  private spanUpTo(v: FrameView, n: number): number {
    return (v.opFlags & OpFlag.READ) !== 0 && v.dmaLength > 0 ? Math.max(n, Math.ceil(v.dmaLength / (this.pmtu || MIN_PMTU))) : n;
  }

  /**
   * A retransmission the capture shows, of PSNs in the hole: the responder may have got them from
   * it, so the responses cannot tell the hole was the capture's there; the PSNs of a range it does
   * not carry stay in the hole. A READ request takes one PSN per response packet (IBTA §9.7.4.1.3):
   * its resend carries `n` PSNs, and perhaps up to `upTo` while the path MTU is not known.
   * A skip over PSNs it surely carries was real, unless the responder had turned away a PSN before
   * the range since (an RNR NAK or a PSN sequence error NAK): it then dropped whatever it got of the
   * range unanswered, the requester had to send it again either way, and the resend tells nothing
   * (the skip is not reported).
   */
  private fillHole(psn: number, n: number, upTo: number): void {
    const h = this.hole;
    if (h === null) return;
    const overlaps = (r: Hole['ranges'][number], span: number): boolean => psnDiff(psnAdd(psn, span - 1), r.from) >= 0 && psnDiff(psn, r.to) <= 0;
    const last = psnAdd(psn, upTo - 1);
    const filled = h.ranges.filter((r) => overlaps(r, upTo));
    if (filled.length === 0) return;
    const left: Hole['ranges'] = [];
    for (const r of filled) {
      if (overlaps(r, n)) for (const d of r.deferred) if (!d.turnedAway) d.report();
      this.settleAfter(h, r.from);
      // What the resend does not carry, before and after it (its skips judged: no deferred left).
      const shown = r.shownTo !== undefined ? { shownTo: r.shownTo } : {};
      if (psnDiff(psn, r.from) > 0) left.push({ from: r.from, to: psnAdd(psn, -1), frame: r.frame, deferred: [], ...shown });
      if (psnDiff(r.to, last) > 0) left.push({ from: psnAdd(last, 1), to: r.to, frame: r.frame, deferred: [], ...shown });
    }
    h.ranges = [...h.ranges.filter((r) => !filled.includes(r)), ...left];
    if (h.ranges.length === 0) this.hole = null;
  }

  /**
   * What a response shows about the open hole: the responder got every PSN through `through`, and
   * (a PSN sequence error NAK) expects `nakPsn`, so it did not get that one. `refused`: the PSN of a
   * PSN sequence error NAK or an RNR NAK, which the responder turned away, with what came after it.
   */
  private resolveHole(through: number, nakPsn: number | null, refused: number | null): void {
    const h = this.hole;
    if (h === null) return;
    if (refused !== null) for (const r of h.ranges) for (const d of r.deferred) if (psnDiff(refused, d.from) < 0) d.turnedAway = true;
    const keep: Hole['ranges'] = [];
    let wireFrom: number | null = null;
    const gaps: Hole['ranges'] = [];
    for (const r of h.ranges) {
      if (nakPsn !== null && psnDiff(nakPsn, r.from) >= 0 && psnDiff(nakPsn, r.to) <= 0) {
        // The responder did not get these PSNs: a hole on the wire (or a real skip), not the capture's.
        for (const d of r.deferred) d.report();
        if (wireFrom === null || psnDiff(r.from, wireFrom) < 0) wireFrom = r.from;
      } else if (psnDiff(through, r.to) >= 0) {
        gaps.push(r);
      } else {
        keep.push(r);
      }
    }
    if (wireFrom !== null) this.settleAfter(h, wireFrom);
    const low = keep.reduce<number | null>((m, r) => (m === null || psnDiff(r.from, m) < 0 ? r.from : m), wireFrom);
    // Frames flagged out of sequence only because of ranges the responder got (after the lowest
    // such range, up to the lowest range still open or missed on the wire) were in sequence for it.
    const clear: number[] = [];
    const gapLow = gaps.reduce<number | null>((m, r) => (m === null || psnDiff(r.from, m) < 0 ? r.from : m), null);
    if (gapLow !== null) {
      h.oos = h.oos.filter((o) => {
        if (psnDiff(o.psn, gapLow) <= 0 || (low !== null && psnDiff(o.psn, low) > 0)) return true;
        clear.push(o.frame);
        return false;
      });
    }
    for (const r of gaps) {
      // PSNs the capture showed being sent before the hole opened are no capture gap: the responder's
      // ePSN as the analyzer follows it went back (a NAK for a PSN it then got from requests still
      // on their way to it), the capture did not lose them.
      const first = r.shownTo !== undefined && psnDiff(r.shownTo, r.from) >= 0 ? psnAdd(r.shownTo, 1) : r.from;
      if (psnDiff(r.to, first) < 0) continue;
      const g: CaptureGap = { conversation: this.conversation, requester: this.requester, firstPsn: first, lastPsn: r.to, frame: r.frame, how: 'notCaptured' };
      this.captureGaps++;
      this.unseenPsns += psnDiff(r.to, first) + 1;
      this.counts.notCaptured++;
      this.sinks.captureGap?.(g, [], r.frame, this.conversation);
    }
    this.counts.outOfSequence -= clear.length;
    if (clear.length > 0) this.sinks.captureGap?.(null, clear, null, this.conversation);
    h.ranges = keep;
    if (keep.length === 0) {
      this.hole = null;
      if (wireFrom === null && gaps.length > 0) {
        // The responder got everything the capture missed: its ePSN follows what was sent.
        let next = psnAdd(h.seenHigh, 1);
        if (psnDiff(psnAdd(through, 1), next) > 0) next = psnAdd(through, 1);
        if (this.expected === null || psnDiff(next, this.expected) > 0) this.expected = next;
      }
    }
  }

  private onMessage(m: Message): void {
    const f = this.figures;
    f.sizes.add(m.size);
    if (m.completionNs !== null && m.status === 'ok') f.completion.add(m.completionNs);
    if (m.responseLatencyNs !== null) (m.op === MessageOp.READ ? f.readLatency : f.atomicLatency).add(m.responseLatencyNs);
  }

  private mark(bits: number, name: FlagName): number {
    this.counts[name]++;
    return bits | FLAG_BIT[name];
  }

  /** PSNs a request covers: a READ's response packets (estimated from the MTU when known), else 1. */
  private span(v: FrameView): number {
    if ((v.opFlags & OpFlag.READ) === 0 || v.dmaLength <= 0 || this.pmtu === 0) return 1;
    return Math.max(1, Math.ceil(v.dmaLength / this.pmtu));
  }

  private learnMtu(v: FrameView): void {
    if ((v.opFlags & (OpFlag.START | OpFlag.MIDDLE)) !== 0 && (v.opFlags & OpFlag.END) === 0 && v.payloadLength >= MIN_PMTU) {
      this.pmtu = v.payloadLength;
      // The READ sent last before the MTU was known covers its whole response range: a later request
      // inside that range (the rest of the READ, after a loss) is a retransmission, as the requester counts it.
      const r = this.spanUnknownRead;
      if (r !== null) {
        this.spanUnknownRead = null;
        const top = psnAdd(r.psn, Math.max(1, Math.ceil(r.length / this.pmtu)) - 1);
        if (this.coverHigh !== null && psnDiff(top, this.coverHigh) > 0) this.coverHigh = top;
      }
    }
  }

  /**
   * Whether a response since `sinceNs` asked for a resend of `psn` (a NAK, RNR NAK or implied NAK): an
   * identical copy of the last request is then the requester's resend, not a network duplicate.
   */
  private triggeredSince(psn: number, sinceNs: number): boolean {
    return this.recovery.pending.some((t) => t.psn === psn && t.timeNs >= sinceNs);
  }

  private isDuplicateFrame(last: LastFrame | null, v: FrameView): boolean {
    return last !== null && last.psn === v.psn && last.icrc === v.icrc && v.icrc !== -1 && v.timeNs - last.timeNs <= DUP_WINDOW_NS;
  }

  private sampleOutstanding(timeNs: number): void {
    if (this.coverHigh === null) return;
    const c = this.messages.compHigh ?? this.respHigh;
    const out = c === null ? psnDiff(this.coverHigh, psnAdd(this.firstPsn, -1)) : psnDiff(this.coverHigh, c);
    this.figures.outstanding.add(timeNs, Math.max(0, out));
  }

  private firstPsn = 0;

  /**
   * PSNs past its first that a request may cover without the capture showing how many: a READ of
   * unknown path MTU (up to one per 256 bytes), and a READ whose RETH the capture cut (any number:
   * its DMA length is not known, and the next request may follow it anywhere ahead).
   */
  private readSlack(v: FrameView): number {
    if ((v.opFlags & OpFlag.READ) === 0) return 0;
    if (v.dmaLength < 0) return READ_SPAN_MAX;
    return this.pmtu === 0 && v.dmaLength > MIN_PMTU ? Math.ceil(v.dmaLength / MIN_PMTU) - 1 : 0;
  }

  /** A request from the requester. Returns the frame's flag bits. */
  onRequest(v: FrameView): number {
    let bits = 0;
    this.requests++;
    this.figures.touch(v.timeNs);
    if (this.responderQpn === null) this.responderQpn = v.destQp;
    if (v.ecnCe) bits = this.mark(bits, 'ecnCe');
    if (v.icrcBad || v.malformed) return this.mark(bits, v.icrcBad ? 'icrcBad' : 'malformed'); // a receiver drops it
    if (this.isDuplicateFrame(this.lastReq, v) && !this.triggeredSince(v.psn, this.lastReq?.timeNs ?? 0)) {
      this.lastReq = { frame: v.frame, timeNs: v.timeNs, psn: v.psn, icrc: v.icrc };
      return this.mark(bits, 'duplicateFrame');
    }
    this.learnMtu(v);
    const n = this.span(v);
    const psn = v.psn;
    this.checker.onRequestAt(psn);
    if (psn === this.refusedAt) this.refusedAt = null;
    if (this.coverHigh === null) {
      this.firstPsn = psn;
      // The capture joined in the middle of a message.
      if (this.reliable && (v.opFlags & OpFlag.START) === 0) this.startedMidway = true;
    }
    const isRetx = this.coverHigh !== null && psnDiff(psn, this.coverHigh) <= 0;
    // A request sent a round trip after a response was captured was sent after the requester got it;
    // at the requester's own NIC (capture point host:IP) any request after it was.
    if (this.reliable) this.rxe.onRequest(psn, v.frame, v.timeNs, this.reactNs());
    if (isRetx) {
      bits = this.mark(bits, 'retransmission');
      this.fillHole(psn, n, this.spanUpTo(v, n));
      this.checker.onRetransmitAt(psn, v.timeNs);
    }
    if (!isRetx && this.aheadAck !== null) {
      // A response acknowledged PSNs no captured request carried. If this first transmission carries
      // one of them, the response came before the request; else the capture missed those requests.
      const a = this.aheadAck;
      this.aheadAck = null;
      if (psnDiff(psn, a.psn) <= 0) {
        // Only a responder that acknowledged a PSN long before it was sent broke a rule; a request
        // captured shortly after its answer shows a capture that put the two directions out of order.
        if (v.timeNs - a.timeNs <= this.triggerTtlNs()) {
          this.responsesBeforeRequests++;
          this.unseenPsns -= Math.min(this.unseenPsns, psnDiff(a.psn, psn) + 1);
        } else this.checker.onResponseBeforeRequest(a, v);
      }
    }

    // The responder's view: ePSN and out-of-sequence requests (rxe check_psn).
    if (!this.datagram) {
      if (this.expected === null) this.expected = psnAdd(psn, n);
      else {
        const d = psnDiff(psn, this.expected);
        if (d === 0 || (d > 0 && d <= this.expectedSlack)) {
          this.expected = psnAdd(psn, n);
        } else if (d > 0 || !this.reliable) {
          bits = this.mark(bits, 'outOfSequence');
          if (!this.reliable)
            this.expected = psnAdd(psn, n); // UC resynchronises on every packet
          else this.noteHole(this.expected, v, n);
        } else {
          bits = this.mark(bits, 'duplicateRequest');
        }
      }
      // The slack belongs to the request that set the ePSN: a duplicate leaves both as they were (a
      // resend of a READ sent before the path MTU was known does not tell where that READ ended).
      if (this.expected === psnAdd(psn, n) || !this.reliable) this.expectedSlack = this.readSlack(v);
    }

    // A first transmission that skips PSNs: the capture does not hold every request (lost before
    // this capture point, or by the capture itself), unless a response already showed them (ackedUnseen).
    const sentHigh =
      this.coverHigh === null ? null : this.unseenHigh !== null && psnDiff(this.unseenHigh, this.coverHigh) > 0 ? this.unseenHigh : this.coverHigh;
    if (!isRetx && sentHigh !== null && this.reliable && !this.lossBeforeCapture && psnDiff(psn, psnAdd(sentHigh, 1)) > this.coverSlack) {
      this.lossBeforeCapture = true;
      this.checker.requesterRules = false;
    }
    const slack = this.readSlack(v);
    if (!isRetx) this.coverSlack = slack;
    if (this.reliable) {
      // The burst's last request was a READ whose span was unknown when it was sent: once the path
      // MTU is known, the burst goes on after its last response PSN; before, the next PSN may lie up
      // to ⌈length / 256⌉ PSNs further without skipping any.
      let burstSlack = 0;
      const r = this.burstRead;
      if (r !== null) {
        if (r.length < 0)
          burstSlack = READ_SPAN_MAX; // its RETH was cut off: any span
        else if (this.pmtu > 0) this.recovery.spanKnown(r.psn, psnAdd(r.psn, Math.max(1, Math.ceil(r.length / this.pmtu))));
        else burstSlack = Math.ceil(r.length / MIN_PMTU) - 1;
      }
      this.burstRead = isRetx && slack > 0 ? { psn, length: v.dmaLength } : null;
      const next = this.recovery.burstNext;
      if (isRetx) {
        if (next !== null && psnDiff(psn, next) > burstSlack && this.continuesBurst(psn, v.timeNs)) {
          this.checker.onSkip(this.lastReq?.frame ?? v.frame, v, next);
          // The burst's copies of the PSNs it went past are not in the capture: a gap there shows from this request on.
          if (burstSlack === 0) for (let p = next, k = 0; p !== psn && k < MAX_UNSEEN_MARKED; p = psnAdd(p, 1), k++) this.tx.unseen(p, v.frame, v.timeNs);
          this.recovery.skipTo(psn);
        }
        const tx = this.tx.get(psn) ?? this.fromPrevious(psn);
        const compHigh = this.messages.compHigh;
        const latestNak = this.recovery.latestNak(v.timeNs, this.triggerTtlNs());
        const started = this.recovery.onRetransmission(v, n, this.coverHigh ?? psn, tx, this.triggerTtlNs(), burstSlack, this.reactNs(), compHigh);
        if (started !== null) {
          started.ep.qpn = v.destQp;
          const rxeRetry = this.rxe.onRewind(psn, v.frame, compHigh);
          this.checker.onEpisode(started.ep, v, started.trigger, latestNak, compHigh, this.recentCompletionPoints(v.timeNs), rxeRetry);
          this.checker.onRewindPast(psn);
        }
      } else {
        if (next !== null && psnDiff(psn, next) > burstSlack) this.checker.onSkip(this.lastReq?.frame ?? v.frame, v, next);
        this.recovery.onNewRequest();
      }
      const reach = psnAdd(psn, ((v.opFlags & OpFlag.READ) !== 0 && v.dmaLength > 0 ? Math.ceil(v.dmaLength / (this.pmtu || MIN_PMTU)) : 1) - 1);
      if (this.reachHigh === null || psnDiff(reach, this.reachHigh) > 0) this.reachHigh = reach;
      // A READ whose RETH the capture cut off: its responses may run up to the next request's PSN.
      if (!isRetx) this.reachOpen = (v.opFlags & OpFlag.READ) !== 0 && v.dmaLength < 0;
    }
    if (!isRetx) {
      this.coverHigh = psnAdd(psn, n - 1);
      this.spanUnknownRead = (v.opFlags & OpFlag.READ) !== 0 && this.pmtu === 0 && v.dmaLength > MIN_PMTU ? { psn, length: v.dmaLength } : null;
      if ((v.opFlags & OpFlag.START) !== 0) this.messageStarts++;
      this.messages.completedByLast = 0;
      this.messages.onNewRequest(v);
      const f = this.figures;
      f.newRequests++;
      if ((v.opFlags & (OpFlag.SEND | OpFlag.WRITE | OpFlag.ATOMIC_WRITE)) !== 0 && v.payloadLength > 0) {
        f.goodput.add(v.timeNs, v.payloadLength);
        f.goodputBytes += v.payloadLength;
      }
      if (v.ackReq && this.reliable) {
        f.ackReqPackets++;
        this.ackReqPsns.push(psn);
        this.ackReqTimes.push(v.timeNs);
      }
    }
    this.recordTx(v);
    this.lastReq = { frame: v.frame, timeNs: v.timeNs, psn, icrc: v.icrc };
    this.sampleOutstanding(v.timeNs);
    return bits;
  }

  /**
   * An RNR NAK for `psn`. The responder sends one for each request at that PSN it gets and cannot
   * take (IBTA §9.7.5.2.8), and handles requests in the order they come, so this one answers a
   * request at `psn` that the capture lost when the last request at `psn` it holds came before
   *   - the previous RNR NAK for `psn`, which answered it (or an earlier one), or
   *   - the later request that drew a PSN sequence error NAK for `psn`: by then the responder had
   *     answered every request at `psn` before it.
   * That lost request was the requester's resend after an RNR wait. The go-back-N burst it began
   * goes on in the requests that follow it, sent before this NAK reached the requester: they are
   * not a reaction to this NAK (the next rewind to `psn` is, and is judged as one).
   * With more than one copy of `psn` captured, a responder slow to drain its queue (rxe under qemu)
   * may still be answering an older copy, and what drew an earlier NAK is not known: only more RNR
   * NAKs for `psn` than copies of it show a copy the capture lost.
   */
  private rnrAnswered(psn: number, frame: number): void {
    const r = this.rnrSeen;
    const prev = r.psn === psn ? r.frame : -1;
    if (r.psn !== psn) {
      r.answers = 0;
      r.lost = 0;
    }
    r.psn = psn;
    r.frame = frame;
    r.answers++;
    const last = this.tx.get(psn)?.frame ?? 0;
    const n = this.nakSeqDrawn;
    const copies = this.tx.copies(psn) + r.lost;
    const lost = copies <= 1 ? prev > last || (n.psn === psn && n.byFrame > last) : r.answers > copies;
    if (lost) {
      r.lost++;
      this.recovery.unseenResend(psn, 1); // RNR NAKs name single-packet requests
    }
  }

  /**
   * A PSN sequence error NAK for `psn`: a request at a later PSN drew it. When an RNR NAK for `psn`
   * answered the last request captured, at `psn` itself, that later request is one the capture lost:
   * the next packet of the go-back-N burst in progress, if any (its next captured packet is not a
   * skip). When the last request captured lies past `psn`, it may have drawn the NAK: the responder
   * answers requests in the order they come, and a slow one (rxe under qemu) answers a request at
   * `psn` with an RNR NAK after the requester has sent the packets behind it.
   */
  private nakSeqAnswered(psn: number): void {
    const q = this.lastReq;
    this.nakSeqDrawn.psn = psn;
    this.nakSeqDrawn.byFrame = q !== null && psnDiff(q.psn, psn) > 0 ? q.frame : -1;
    if (this.rnrSeen.psn === psn && this.rnrSeen.frame > (q?.frame ?? -1) && (q === null || psnDiff(q.psn, psn) <= 0)) this.recovery.burstPacketLost();
  }

  /**
   * A resend past the next PSN of the burst in progress: the burst going on with PSNs skipped (or
   * lost by the capture; the checker waits for the responses to say which), unless a trigger calls
   * for a resend from there. An RNR NAK for an earlier PSN calls for one only from the first
   * unacknowledged PSN, where the requester resumes after its wait (gbn-checks.ts `onEpisode`); a
   * resend elsewhere is the burst the requester was sending when the NAK reached it.
   */
  private continuesBurst(psn: number, nowNs: number): boolean {
    const t = this.recovery.matchTrigger(psn);
    if (t === null) return true;
    if (t.kind !== Trigger.RNR || t.psn === psn) return false;
    return !resumesAtFirstUnacked(psn, this.messages.compHigh, this.recentCompletionPoints(nowNs));
  }

  /** Transmission info for a PSN the capture never showed: the request after its predecessor. */
  private fromPrevious(psn: number): TxInfo | undefined {
    const prev = this.tx.get(psnAdd(psn, -1));
    if (prev === undefined) return undefined;
    return { frame: null, timeNs: null, followerFrame: prev.followerFrame, followerNs: prev.followerNs };
  }

  private recordTx(v: FrameView): void {
    const last = this.lastReq;
    if (last !== null && psnDiff(v.psn, last.psn) > 0) this.tx.follow(last.psn, v.frame, v.timeNs);
    this.tx.record(v.psn, v.frame, v.timeNs);
  }

  /** AckReq requests acknowledged by an ACK through `q`. */
  private popAckReqs(q: number, nowNs: number): number {
    let k = 0;
    const a = this.ackReqPsns;
    while (this.ackReqHead < a.length && psnDiff(a[this.ackReqHead]!, q) <= 0) {
      const sentNs = this.ackReqTimes[this.ackReqHead] ?? nowNs;
      const rtt = nowNs - sentNs;
      // Karn's rule: an ACK for a PSN sent again since says nothing of the round trip (it may answer
      // either copy); a sample across a timeout would make the trigger TTL as long as the timeout.
      const last = this.tx.get(a[this.ackReqHead]!);
      const resent = last !== undefined && last.timeNs !== null && last.timeNs !== sentNs;
      if (nowNs >= 0 && rtt >= 0 && !resent && rtt < this.rttMinNs) this.rttMinNs = rtt;
      this.ackReqHead++;
      k++;
    }
    if (this.ackReqHead > 1024 && this.ackReqHead * 2 > a.length) {
      a.splice(0, this.ackReqHead);
      this.ackReqTimes.splice(0, this.ackReqHead);
      this.ackReqHead = 0;
    }
    return k;
  }

  /**
   * Completion points of the last trigger TTL before `nowNs` (and the one in force when that
   * window began): a requester cannot act on a response before it has processed it, and a
   * capture on the wire or at the NIC sees the response first. A resend from the first
   * unacknowledged PSN as of any of these is one from the first unacknowledged PSN.
   */
  private recentCompletionPoints(nowNs: number): number[] {
    const from = nowNs - this.triggerTtlNs();
    const log = this.compLog;
    let i = log.length - 1;
    while (i > 0 && (log[i] as { t: number }).t > from) i--;
    const points = log.slice(Math.max(0, i)).map((e) => e.c);
    // Nothing was acknowledged when the window began: the first PSN was the first unacknowledged.
    if (log.length > 0 && (log[0] as { t: number }).t > from && i === 0) points.push(psnAdd(this.firstPsn, -1));
    return points;
  }

  /** Times at which the completion point moved, and where to (bounded). */
  private readonly compLog: { t: number; c: number }[] = [];

  /**
   * How long after a response was captured the requester may still send requests without having got
   * it: a round trip (the TTL floor before one is measured); none at the requester's own NIC.
   */
  private reactNs(): number {
    if (this.capturedAtRequester) return 0;
    return Number.isFinite(this.rttMinNs) ? this.rttMinNs : TRIGGER_TTL_FLOOR_NS;
  }

  /** How long a NAK stays a candidate trigger: 8 round trips, at least 500 us. */
  private triggerTtlNs(): number {
    return Math.max(TRIGGER_TTL_FLOOR_NS, Number.isFinite(this.rttMinNs) ? 8 * this.rttMinNs : 0);
  }

  /** A response from the responder. Returns the frame's flag bits. */
  onResponse(v: FrameView): number {
    let bits = 0;
    this.responses++;
    this.figures.touch(v.timeNs);
    if (v.ecnCe) bits = this.mark(bits, 'ecnCe');
    if (v.icrcBad || v.malformed) return this.mark(bits, v.icrcBad ? 'icrcBad' : 'malformed');
    // An ACKNOWLEDGE whose AETH the capture cut: whether it acknowledges or NAKs, and through which
    // PSN (a PSN sequence error NAK names the PSN it did not get), is not known. It is counted and
    // tells the flow nothing (a READ response or atomic ACK needs only its BTH).
    if (v.aethKind === null && (v.opFlags & (OpFlag.READ | OpFlag.ATOMIC)) === 0) return bits;
    const m = this.messages;
    const compBefore = m.compHigh;
    m.completedByLast = 0;
    const psn = v.psn;
    const f = v.opFlags;
    // What the response shows the responder got: every PSN through `through` (a PSN sequence error
    // NAK: up to the PSN it names, which it did not get).
    const nakSeq = v.aethKind === AethKind.NAK && v.aethValue === NakCode.PSN_SEQUENCE_ERROR;
    const through = nakSeq ? psnAdd(psn, -1) : psn;
    let unseen = false;
    if (this.reliable) {
      if (this.coverHigh === null) this.startedMidway = true;
      if (!this.msnSeen && v.aethKind !== null && !this.startKnown) {
        this.msnSeen = true;
        if (v.msn > this.messageStarts) this.startedMidway = true; // it counts messages before the capture
      }
      // An ACK or NAK answers a request PSN, or the last PSN of the READ sent last (coverReach); a
      // READ response or atomic ACK may run to the end of a READ whose path MTU is not known yet (reachHigh).
      const sent = (f & (OpFlag.READ | OpFlag.ATOMIC)) !== 0 ? this.reachHigh : this.coverReach();
      const known = this.sentOrShown(sent);
      if (known !== null && !this.reachOpen && psnDiff(through, known) > 0) {
        // Acknowledges requests no captured frame carried: the capture missed them (rule checks skip
        // this response; a first transmission of one of its PSNs later would show it came too early).
        unseen = true;
        bits = this.mark(bits, 'ackedUnseen');
        this.captureGaps++;
        this.unseenPsns += psnDiff(through, known);
        this.sinks.captureGap?.(
          { conversation: this.conversation, requester: this.requester, firstPsn: psnAdd(known, 1), lastPsn: through, frame: v.frame, how: 'ackedUnseen' },
          [],
          null,
          this.conversation,
        );
        this.unseenHigh = through;
        // An RNR NAK shows its PSN received but not taken: the requester sends it again, so only the
        // PSNs before it count as acknowledged ahead of their requests (IBTA §9.7.5.2.8).
        const acked = v.aethKind === AethKind.RNR_NAK ? psnAdd(psn, -1) : through;
        if (psnDiff(acked, known) > 0) this.aheadAck = { frame: v.frame, psn: acked, opName: v.opName, timeNs: v.timeNs };
        if (this.expected === null || psnDiff(psnAdd(through, 1), this.expected) > 0) {
          this.expected = psnAdd(through, 1);
          this.expectedSlack = 0;
        }
      }
      const refused = nakSeq || v.aethKind === AethKind.RNR_NAK ? psn : null;
      if (refused !== null) this.refusedAt = refused;
      else if (this.refusedAt !== null && psnDiff(through, this.refusedAt) >= 0) this.refusedAt = null;
      this.resolveHole(through, nakSeq ? psn : null, refused);
      // An acknowledgement at or past the responder's ePSN shows it got through there (after a NAK
      // set the ePSN back, requests the network delivered out of order): its ePSN is after it. A
      // READ response says so at the READ's end (its LAST or ONLY); IBTA §9.7.5.1.2. A responder slow
      // to drain its queue takes copies sent before a NAK or RNR NAK that reset the ePSN (rxe_resp.c
      // acknowledges only what check_psn() let through): the next resend from there is in sequence.
      const acks = (v.aethKind === AethKind.ACK && (f & OpFlag.READ) === 0) || (f & OpFlag.ATOMIC) !== 0 || ((f & OpFlag.READ) !== 0 && (f & OpFlag.END) !== 0);
      if (acks && !unseen && this.expected !== null && psnDiff(through, this.expected) >= 0) {
        this.expected = psnAdd(through, 1);
        this.expectedSlack = 0;
      }
    }
    if ((f & OpFlag.READ) !== 0) {
      this.learnMtu(v);
      if (this.coverHigh === null || psnDiff(psn, this.coverHigh) > 0) this.coverHigh = psn;
      const firstTime = this.respHigh === null || psnDiff(psn, this.respHigh) > 0;
      const r = m.onReadResponse(v);
      if (r === 'gap') this.triggerImplied(v);
      if (firstTime && v.payloadLength > 0) {
        this.figures.goodput.add(v.timeNs, v.payloadLength);
        this.figures.goodputBytes += v.payloadLength;
      }
      this.respHigh = psnMax(this.respHigh, psn);
      this.popAckReqs(psn, -1);
      if (m.completedByLast > (r === 'ok' && (f & OpFlag.END) !== 0 ? 1 : 0)) bits = this.mark(bits, 'impliedAck');
    } else if ((f & OpFlag.ATOMIC) !== 0) {
      // An atomic ACK past an unfinished READ or atomic is an implied NAK for it (rxe_comp.c check_psn()).
      const blocked = m.onAtomicAck(v);
      if (blocked !== null && psnDiff(psn, this.lastPsnOf(blocked)) > 0) this.triggerImplied(v);
      this.respHigh = psnMax(this.respHigh, psn);
      this.popAckReqs(psn, -1);
      if (m.completedByLast > 1) bits = this.mark(bits, 'impliedAck');
    } else if (v.aethKind === AethKind.ACK) {
      this.figures.acks++;
      if (!unseen) this.checker.onResponsePsn(v, this.sentOrShown(this.coverReach()), false);
      if (this.popAckReqs(psn, v.timeNs) >= 2) bits = this.mark(bits, 'ackCoalesced');
      this.respHigh = psnMax(this.respHigh, psn);
      const blocked = m.advance(psn, v.timeNs);
      if (blocked !== null && psnDiff(psn, this.lastPsnOf(blocked)) > 0) this.triggerImplied(v);
    } else if (v.aethKind === AethKind.RNR_NAK || v.aethKind === AethKind.NAK) {
      const rnr = v.aethKind === AethKind.RNR_NAK;
      const name: FlagName = rnr ? 'rnrNak' : (NAK_FLAG[v.aethValue] ?? 'nakRemOp');
      bits = this.mark(bits, name);
      if (!unseen) this.checker.onResponsePsn(v, this.sentOrShown(this.coverReach()), true);
      const before = psnAdd(psn, -1);
      this.respHigh = psnMax(this.respHigh, before);
      this.popAckReqs(before, -1);
      if (name === 'nakSeqErr') {
        this.checker.onNakSeq(v, compBefore, this.triggerTtlNs());
        this.rxe.onSeqNak(psn, v.frame);
      } else if (rnr) {
        this.checker.onRnrNak(v, (RNR_TIMER_USEC[v.aethValue] ?? 0) * 1000);
        this.rxe.onRnrNak(psn, v.frame, v.timeNs);
      }
      if (rnr) this.rnrAnswered(psn, v.frame);
      else if (name === 'nakSeqErr') this.nakSeqAnswered(psn);
      if (rnr || name === 'nakSeqErr') {
        // A NAK or RNR NAK past a READ or atomic still waiting for its response acknowledges what came
        // before it but cannot complete the READ or atomic: the requester takes it as an implied NAK
        // and resends from the READ or atomic (rxe_comp.c: check_psn() runs before check_ack() and
        // returns COMPST_ERROR_RETRY for a READ/atomic WQE whose last PSN the response passed), and does
        // not act on the NAK itself. A capture that only missed the READ or atomic response shows the
        // requester acting on the NAK: the NAK stays a trigger too, marked, and its rules are not judged.
        const blocked = m.advance(before, v.timeNs);
        const implied = blocked !== null && psnDiff(psn, this.lastPsnOf(blocked)) > 0;
        this.expected = psn; // the responder's ePSN, as it says
        this.expectedSlack = 0;
        const ignored = !rnr && !implied && this.recovery.retrying(psn);
        if (implied) this.triggerImplied(v);
        this.recovery.trigger({
          kind: rnr ? Trigger.RNR : Trigger.NAK,
          psn,
          frame: v.frame,
          timeNs: v.timeNs,
          rnrTimerNs: rnr ? (RNR_TIMER_USEC[v.aethValue] ?? 0) * 1000 : null,
          ...(implied ? { passesUnanswered: true } : {}),
          ...(compBefore !== null && psnDiff(psn, compBefore) <= 0 ? { stale: true } : {}),
          ...(ignored ? { ignored: true } : {}),
        });
      } else {
        m.onFatalNak(v, name);
      }
      if (m.completedByLast > (rnr || name === 'nakSeqErr' ? 0 : 1)) bits = this.mark(bits, 'impliedAck');
    }
    const c = m.compHigh;
    if (c !== null && (compBefore === null || psnDiff(c, compBefore) > 0)) {
      this.compLog.push({ t: v.timeNs, c });
      if (this.compLog.length > 256) this.compLog.splice(0, 128);
      this.recovery.onProgress(c, v);
      this.checker.onAcknowledged(c);
      this.rxe.onAcknowledged(c);
    }
    this.sampleOutstanding(v.timeNs);
    return bits;
  }

  /**
   * The highest PSN `sent` (by default the highest request PSN the capture shows), or that an earlier
   * response showed the responder got although the capture missed its request (ackedUnseen),
   * whichever is later: a response up to there answers a sent PSN.
   */
  private sentOrShown(sent: number | null = this.coverHigh): number | null {
    return sent === null ? this.unseenHigh : psnMax(this.unseenHigh, sent);
  }

  /**
   * The highest PSN the requests captured may have taken at the responder: coverHigh, or the end of
   * the last new request when it is a READ sent before the path MTU was known (one PSN per 256 bytes
   * at most). The responder's ePSN passes a READ's whole span (IBTA §9.7.4.1.3), and it re-ACKs a
   * duplicate SEND or WRITE with the PSN before its ePSN (§9.7.5.1.2, C9-105; rxe_resp.c
   * duplicate_request()) and NAKs the ePSN: either may name the READ's last PSN or the one after.
   */
  private coverReach(): number | null {
    const r = this.spanUnknownRead;
    if (this.coverHigh === null || r === null) return this.coverHigh;
    return psnMax(this.coverHigh, psnAdd(r.psn, Math.ceil(r.length / MIN_PMTU) - 1));
  }

  /** The last PSN of a waiting READ or atomic (estimated from the MTU for a READ whose end is not seen). */
  private lastPsnOf(msg: Message): number {
    if (msg.lastPsn !== null) return msg.lastPsn;
    if (msg.op === MessageOp.READ && this.pmtu > 0) return psnAdd(msg.firstPsn, Math.max(1, Math.ceil(msg.size / this.pmtu)) - 1);
    return msg.firstPsn;
  }

  private triggerImplied(v: FrameView): void {
    const c = this.messages.compHigh;
    const psn = c === null ? v.psn : psnAdd(c, 1);
    if (this.recovery.pending.some((p) => p.psn === psn && p.kind === Trigger.IMPLIED_NAK)) return;
    this.recovery.trigger({ kind: Trigger.IMPLIED_NAK, psn, frame: v.frame, timeNs: v.timeNs, rnrTimerNs: null });
  }

  finish(): void {
    this.messages.finish();
    this.recovery.finish();
    this.rxe.finish();
  }
}
