/**
 * Loss-recovery episodes of one requester flow. A go-back-N retransmission
 * burst starts when a request goes back to a PSN already sent and is not the
 * next PSN of the burst in progress. What triggered it is read from the
 * capture: the latest NAK (PSN sequence error) or RNR NAK not yet answered,
 * a READ response that skipped PSNs (implied NAK), or, when the capture
 * shows none of these, the requester's local ACK timeout.
 *
 * An episode ends (recovers) when the requester's completion point reaches
 * the highest PSN it had sent when the episode began.
 */
import type { FrameView } from './frame-view';
import { psnAdd, psnDiff } from '../base/psn';
import { type Episode, type Side, Trigger } from './types';

export interface PendingTrigger {
  kind: Trigger;
  psn: number;
  frame: number;
  timeNs: number;
  rnrTimerNs: number | null;
  /**
   * A NAK or RNR NAK whose PSN passed a READ or atomic the capture shows no response to: the requester
   * took it as an implied NAK if it had no response either (rxe), or as itself if the capture only
   * missed that response. Its rules are not judged, and a plain NAK for the same PSN wins over it.
   */
  passesUnanswered?: boolean;
  /** A NAK for a PSN already acknowledged when it arrived: stale, the requester does not act on it (rxe_comp.c drops a response older than its retry point). */
  stale?: boolean;
  /**
   * A sequence NAK for the PSN the requester had already gone back to, with no progress since: it
   * left the responder before the retry reached it, and the requester starts no second retry for it
   * (rxe_comp.c: none while comp.started_retry; stack/completer.ts). It names a resend only when
   * nothing else does.
   */
  ignored?: boolean;
}

/** Which of two triggers for one PSN a resend answers: an RNR NAK (its wait), then the latest NAK or implied NAK, then one that passed an unanswered READ or atomic or that the requester ignored. */
function rank(t: PendingTrigger): number {
  if (t.passesUnanswered === true || t.ignored === true) return 0;
  return t.kind === Trigger.RNR ? 2 : 1;
}

/**
 * An RNR NAK that passed a READ or atomic still waiting, with no resend until long after its timer
 * ran out: the requester took it as an implied NAK and did not act on it (no RNR wait; IBTA
 * §9.7.5.1.2, rxe_comp.c check_psn() returns COMPST_ERROR_RETRY before check_ack() reads the
 * syndrome). Acting on it, it would have resent when its timer ran out; a later resend is its
 * timeout's.
 */
function staleRnr(t: PendingTrigger, nowNs: number, ttlNs: number): boolean {
  return t.kind === Trigger.RNR && t.passesUnanswered === true && nowNs - t.timeNs > (t.rnrTimerNs ?? 0) + ttlNs;
}

/** What the flow knows about a PSN's last transmission and the request after it. */
export interface TxInfo {
  /** The last transmission of the PSN, or null when the capture never showed it. */
  frame: number | null;
  timeNs: number | null;
  /** The first request after it with a later PSN (0 when none yet). */
  followerFrame: number;
  followerNs: number;
}

interface Burst {
  ep: Episode;
  nextPsn: number;
  /** When its last packet was sent, and the gap before that one (0 for the first). */
  lastNs: number;
  gapNs: number;
  /** The episode recovered while its burst went on: it is handed on when the burst ends, with every packet of it counted. */
  recovered: boolean;
}

/** Open episodes waiting to recover, at most this many (older ones are left unrecovered). */
const MAX_OPEN = 64;

/** Triggers remembered while waiting for the retransmission they cause. */
const MAX_PENDING = 16;

export class RecoveryTracker {
  /** NAKs, RNR NAKs and implied NAKs not yet followed by a retransmission, oldest first. */
  readonly pending: PendingTrigger[] = [];
  private burst: Burst | null = null;
  /** The next PSN of a burst whose first packet the capture lost (`unseenResend`), or null. */
  private unseenNext: number | null = null;
  private readonly open: { ep: Episode; startNs: number }[] = [];
  /** Where the last episode since the completion point last moved went back to, or null. */
  private retryPsn: number | null = null;
  /** The triggers seen since the completion point last moved (progress ends a retry: rxe_comp.c reset_retry_counters()). */
  private readonly sinceProgress = new Set<PendingTrigger>();
  private nextId: () => number;

  constructor(
    private readonly conversation: number,
    private readonly requester: Side,
    private readonly qpn: number,
    nextId: () => number,
    private readonly sink: (e: Episode) => void,
  ) {
    this.nextId = nextId;
  }

  get inBurst(): boolean {
    return this.burst !== null;
  }

  /** The PSN the burst in progress (or one whose start the capture lost) would resend next, or null. */
  get burstNext(): number | null {
    return this.burst?.nextPsn ?? this.unseenNext;
  }

  /**
   * True when the requester has gone back to `psn` since its completion point last moved: a trigger
   * for it waits, or an episode resent from it. A sequence NAK for it then is `ignored`.
   */
  retrying(psn: number): boolean {
    if (this.retryPsn === psn) return true;
    for (const t of this.sinceProgress) if (t.psn === psn && t.stale !== true) return true;
    return false;
  }

  /** A NAK, RNR NAK or implied NAK seen from the responder. */
  trigger(t: PendingTrigger): void {
    this.pending.push(t);
    if (this.pending.length > MAX_PENDING) this.pending.shift();
    if (this.sinceProgress.size < MAX_PENDING) this.sinceProgress.add(t);
  }

  /**
   * The trigger a retransmission from `psn` answers: an RNR NAK for that PSN
   * first (rxe follows an RNR NAK with a sequence NAK for the same PSN, which
   * the requester ignores while it waits), else the latest NAK or implied NAK
   * for it. Null: nothing in the capture asked for it, so a timeout did.
   */
  matchTrigger(psn: number, nowNs = 0, ttlNs = Infinity, reactNs = 0): PendingTrigger | null {
    let best: PendingTrigger | null = null;
    // The best of those the requester had had a round trip (`reactNs`) to act on, RNR NAKs whose wait had run out.
    let earlier: PendingTrigger | null = null;
    for (const t of this.pending) {
      if (t.psn !== psn) continue;
      // A requester acts on a NAK at once; one left unanswered for long was ignored (a later resend is a timeout's).
      if (t.kind !== Trigger.RNR && nowNs - t.timeNs > ttlNs) continue;
      if (staleRnr(t, nowNs, ttlNs)) continue;
      if (best === null || rank(t) >= rank(best)) best = t;
      const due = nowNs - t.timeNs >= reactNs && (t.kind !== Trigger.RNR || nowNs - t.timeNs >= (t.rnrTimerNs ?? 0));
      if (due && (earlier === null || rank(t) >= rank(earlier))) earlier = t;
    }
    // A slow responder (rxe under qemu) answers copies it had queued with more RNR NAKs for the PSN. A
    // resend captured within a round trip of such an RNR NAK may have left before it arrived: it
    // answers the trigger before it (a sequence NAK, or an RNR NAK whose wait had run out).
    if (
      best !== null &&
      best.kind === Trigger.RNR &&
      earlier !== null &&
      earlier !== best &&
      nowNs - best.timeNs < reactNs &&
      nowNs - best.timeNs < (best.rnrTimerNs ?? 0)
    )
      return earlier;
    if (best !== null) return best;
    // After an RNR wait the requester resumes from its first unacknowledged PSN, which
    // responses arriving during the wait may have moved past the RNR NAK's PSN.
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const t = this.pending[i]!;
      if (t.kind === Trigger.RNR && psnDiff(psn, t.psn) > 0 && !staleRnr(t, nowNs, ttlNs)) return t;
    }
    return null;
  }

  /** The latest NAK or RNR NAK still waiting (for the rule checks), or null. */
  latestNak(nowNs = 0, ttlNs = Infinity): PendingTrigger | null {
    for (let i = this.pending.length - 1; i >= 0; i--) {
      const t = this.pending[i]!;
      if (t.kind === Trigger.RNR || (t.kind === Trigger.NAK && nowNs - t.timeNs <= ttlNs)) return t;
    }
    return null;
  }

  /**
   * A retransmitted request covering `n` PSNs. Returns the new episode and its
   * trigger when it starts one (the caller checks the rules), else null.
   */
  onRetransmission(
    v: FrameView,
    n: number,
    highestSent: number,
    tx: TxInfo | undefined,
    ttlNs = Infinity,
    slack = 0,
    reactNs = 0,
    compHigh: number | null = null,
  ): { ep: Episode; trigger: PendingTrigger | null } | null {
    const b = this.burst;
    // `slack`: the burst's last request was a READ whose span is not known yet; the burst goes on up to that many PSNs further.
    // A burst goes on at its own pace; a pause many times longer than its gaps and than a round trip
    // is the requester's timer running out, which starts a new episode even at the burst's next PSN.
    // Not while an RNR NAK for an earlier PSN waits: a requester whose timer ran out would go back to
    // its first unacknowledged PSN, at or before that one; going on at the burst's next PSN is the
    // requester sending its queue during the RNR wait (rxe_req.c rxe_requester(): the wait holds back
    // only the retry), and the rewind to the RNR NAK'd PSN that follows is the episode.
    const rnrWait = b !== null && v.psn === b.nextPsn && this.pending.some((t) => t.kind === Trigger.RNR && psnDiff(v.psn, t.psn) > 0);
    // Nor while PSNs before the burst's next one are still unacknowledged (`compHigh`: the last
    // acknowledged): a timer that ran out resends from the first of them (the rule
    // retransmitFromFirstUnacked; rxe_req.c req_retry() restarts at the completer's PSN), so going
    // on at the burst's next PSN is the burst itself, stalled (a full send ring, a starved
    // process), not a timeout.
    const stalled = b !== null && v.psn === b.nextPsn && compHigh !== null && psnDiff(v.psn, psnAdd(compHigh, 1)) > 0;
    const paused = b !== null && !rnrWait && !stalled && v.timeNs - b.lastNs > Math.max(ttlNs, 4 * b.gapNs);
    if (b !== null && !paused && psnDiff(v.psn, b.nextPsn) >= 0 && psnDiff(v.psn, b.nextPsn) <= slack) {
      b.gapNs = v.timeNs - b.lastNs;
      b.lastNs = v.timeNs;
      b.ep.resentPackets++;
      b.ep.resentLastPsn = psnAdd(v.psn, n - 1);
      b.nextPsn = psnAdd(v.psn, n);
      // A rewind to the PSN about to be resent anyway leaves no mark: its trigger is used up.
      this.consume(v.psn);
      return null;
    }
    if (b === null && v.psn === this.unseenNext) {
      // The next packet of a burst the capture did not see begin: no episode of its own.
      this.unseenNext = psnAdd(v.psn, n);
      this.consume(v.psn);
      return null;
    }
    this.unseenNext = null;
    const t = this.matchTrigger(v.psn, v.timeNs, ttlNs, reactNs);
    this.consume(v.psn, t);
    this.retryPsn = v.psn;
    const kind = t?.kind ?? Trigger.TIMEOUT;
    const gapFrame = tx !== undefined && tx.followerFrame > 0 ? tx.followerFrame : null;
    const ep: Episode = {
      id: this.nextId(),
      conversation: this.conversation,
      requester: this.requester,
      qpn: this.qpn,
      trigger: kind,
      gapPsn: v.psn,
      lostFrame: tx?.frame ?? null,
      gapFrame: kind === Trigger.TIMEOUT ? null : gapFrame,
      triggerFrame: t?.frame ?? null,
      nakGenerationNs: kind === Trigger.NAK && t !== null && tx !== undefined && tx.followerFrame > 0 ? t.timeNs - tx.followerNs : null,
      firstRetransmitFrame: v.frame,
      retransmitDelayNs: t !== null ? v.timeNs - t.timeNs : tx !== undefined && tx.timeNs !== null ? v.timeNs - tx.timeNs : null,
      rnrTimerNs: t?.rnrTimerNs ?? null,
      highestSentPsn: highestSent,
      resentPackets: 1,
      resentFirstPsn: v.psn,
      resentLastPsn: psnAdd(v.psn, n - 1),
      recoveredFrame: null,
      recoveryNs: null,
      supersededBy: null,
    };
    const startNs =
      kind === Trigger.TIMEOUT ? (tx?.timeNs ?? v.timeNs) : gapFrame !== null && tx !== undefined ? tx.followerNs : (tx?.timeNs ?? t?.timeNs ?? v.timeNs);
    for (const o of this.open) if (o.ep.supersededBy === null) o.ep.supersededBy = ep.id;
    this.flushOpen();
    this.endBurst();
    this.burst = { ep, nextPsn: psnAdd(v.psn, n), lastNs: v.timeNs, gapNs: 0, recovered: false };
    this.open.push({ ep, startNs });
    if (this.open.length > MAX_OPEN) {
      const old = this.open.shift();
      if (old !== undefined) this.sink(old.ep);
    }
    return { ep, trigger: t };
  }

  /** Forgets the triggers a retransmission from `psn` answered, and every trigger older than them. */
  private consume(psn: number, t: PendingTrigger | null = null): void {
    let last = t === null ? -1 : this.pending.indexOf(t);
    this.pending.forEach((p, i) => {
      if (p.psn === psn && i > last) last = i;
    });
    if (last >= 0) this.pending.splice(0, last + 1);
  }

  /**
   * The responses show a resend of `psn` (covering `n` PSNs) that the capture lost: it answered the
   * triggers for `psn` and began a burst, whose next packets are not new episodes.
   */
  unseenResend(psn: number, n: number): void {
    this.consume(psn);
    this.retryPsn = psn;
    this.endBurst();
    this.unseenNext = psnAdd(psn, n);
  }

  /** The responses show that the capture lost the next packet of the burst in progress (one PSN: a go-back-N resend after an RNR NAK's PSN). */
  burstPacketLost(): void {
    if (this.burst !== null) this.burst.nextPsn = psnAdd(this.burst.nextPsn, 1);
  }

  /** The burst's last request, a READ at `psn` counted as one PSN, turns out to end before `next`. */
  spanKnown(psn: number, next: number): void {
    const b = this.burst;
    if (b !== null && b.nextPsn === psnAdd(psn, 1) && psnDiff(next, b.nextPsn) > 0) b.nextPsn = next;
    else if (b === null && this.unseenNext === psnAdd(psn, 1) && psnDiff(next, this.unseenNext) > 0) this.unseenNext = next;
  }

  /** The burst in progress jumps ahead to `psn` (a skip, reported by the checker). */
  skipTo(psn: number): void {
    if (this.burst !== null) this.burst.nextPsn = psn;
    else if (this.unseenNext !== null) this.unseenNext = psn;
  }

  /** A request for a PSN never sent before: the burst in progress, if any, is over. */
  onNewRequest(): void {
    this.unseenNext = null;
    this.endBurst();
  }

  /**
   * The burst in progress is over. Its episode, if it recovered during the burst, is final now:
   * a go-back-N burst often goes on after the ACK that recovers it (the requester resends what the
   * responder already had), and those resends belong to the episode.
   */
  private endBurst(): void {
    const b = this.burst;
    this.burst = null;
    if (b !== null && b.recovered) this.sink(b.ep);
  }

  /** The requester's completion point moved to `compHigh` at frame `v`. */
  onProgress(compHigh: number, v: FrameView): void {
    this.retryPsn = null;
    // A NAK's own implied acknowledgement moves the completion point after the NAK started the retry.
    for (const t of this.sinceProgress) if (t.frame !== v.frame) this.sinceProgress.delete(t);
    for (let i = 0; i < this.open.length; ) {
      const o = this.open[i]!;
      if (psnDiff(compHigh, o.ep.highestSentPsn) >= 0) {
        o.ep.recoveredFrame = v.frame;
        o.ep.recoveryNs = v.timeNs - o.startNs;
        this.open.splice(i, 1);
        if (this.burst?.ep === o.ep) this.burst.recovered = true;
        else this.sink(o.ep);
      } else i++;
    }
    // NAKs for PSNs now acknowledged were answered without a visible resend. An RNR NAK stays:
    // the requester resends when its wait ends, from wherever the acknowledgements got to. So does
    // an implied NAK, whose READ or atomic response came after all (the network reordered it): the
    // requester has already decided to go back, and goes back from its first unacknowledged PSN
    // (rxe_comp.c: COMPST_ERROR_RETRY sets up a retry from the oldest WQE still pending). A NAK
    // past the implied NAK's PSN is another rewind before anything was resent: it stays too, and
    // the resend from the first unacknowledged PSN answers both, named after the NAK, the latest.
    // A NAK for the implied NAK's own PSN is `ignored`, and names the resend only if nothing else does.
    let goingBack = false;
    for (let i = 0; i < this.pending.length; ) {
      const t = this.pending[i]!;
      if (t.kind === Trigger.IMPLIED_NAK) goingBack = true;
      if (t.kind === Trigger.RNR || psnDiff(compHigh, t.psn) < 0) {
        i++;
      } else if (t.kind === Trigger.IMPLIED_NAK || (goingBack && t.kind === Trigger.NAK && t.passesUnanswered !== true && t.stale !== true)) {
        t.psn = psnAdd(compHigh, 1);
        i++;
      } else {
        this.pending.splice(i, 1);
      }
    }
  }

  /** Superseded episodes are final: hand them on. */
  private flushOpen(): void {
    for (let i = 0; i < this.open.length; ) {
      const o = this.open[i]!;
      if (o.ep.supersededBy !== null) {
        this.open.splice(i, 1);
        this.sink(o.ep);
      } else i++;
    }
  }

  finish(): void {
    for (const o of this.open) this.sink(o.ep);
    this.open.length = 0;
    this.endBurst();
  }
}
