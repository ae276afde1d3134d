/**
 * Go-back-N rule checks for one RC requester flow, in the spirit of Lumina's
 * GBN checker (lumina-test/lumina `lumina/analyzer/checker/gbn_check.py`),
 * on what one capture shows. Rules and their IBTA basis are in
 * docs/analysis.md; each violation names the frames that show it.
 */
import type { FrameView } from './frame-view';
import type { PendingTrigger } from './episodes';
import { psnAdd, psnDiff } from '../base/psn';
import { type Episode, RuleId, type Side, Trigger, type Violation } from './types';

/**
 * Rules on how a requester reacts to what it received (a NAK, an RNR NAK, the ACKs before a
 * timeout): they can only be judged where the capture shows what the requester received.
 * `noSkipOnRetransmit` needs only what it sent; the responder rules only what the responder sent
 * and received.
 */
export const RECEIVE_DEPENDENT_RULES: readonly RuleId[] = [RuleId.RETRANSMIT_FROM_NAK_PSN, RuleId.RETRANSMIT_FROM_FIRST_UNACKED, RuleId.RNR_WAIT_RESPECTED];

/** Rules on what a responder sends: judged where the capture shows its frames as it sent them. */
export const RESPONDER_RULES: readonly RuleId[] = [RuleId.ONE_NAK_PER_GAP, RuleId.NAK_PSN_NOT_ACKED, RuleId.RESPONSE_FOR_SENT_PSN];

/**
 * Whether a resend from `psn` starts at the first unacknowledged PSN: the one after the completion
 * point `compHigh` (true when none is known), or after one of `recent` (a response captured just
 * before the resend may not have been processed by the requester yet).
 */
export function resumesAtFirstUnacked(psn: number, compHigh: number | null, recent: readonly number[]): boolean {
  return compHigh === null || psn === psnAdd(compHigh, 1) || recent.some((c) => psn === psnAdd(c, 1));
}

/** Retransmissions remembered for `oneNakPerGap` (a go-back-N burst rarely resends the NAK's PSN twice within a round trip). */
const RECENT_RETX = 32;

export class GbnChecker {
  /** The last PSN sequence error NAK and whether a response has acknowledged its PSN since. */
  private lastNak: { psn: number; frame: number; timeNs: number } | null = null;
  /** The latest retransmissions (PSN and time), a ring of RECENT_RETX. */
  private readonly retxPsn = new Int32Array(RECENT_RETX).fill(-1);
  private readonly retxNs = new Float64Array(RECENT_RETX);
  private retxAt = 0;
  /** The latest RNR NAK: its PSN, time and timer (ns). */
  private readonly lastRnr = { psn: -1, timeNs: 0, timerNs: 0 };
  /**
   * Rules on what the requester sends hold only where the capture sees every request it
   * sent (its own host, or a mirror before the lossy segment); the flow turns them off when
   * requests turn out to be lost before the capture point.
   */
  requesterRules = true;
  /**
   * False when the capture shows frames as sent and drops happen after it: a NAK or ACK in
   * the capture may never have reached the requester, so RECEIVE_DEPENDENT_RULES are not checked.
   */
  requesterInputKnown = true;
  /**
   * False when the capture shows the responder's frames only as the network delivered them (a
   * capture at the requester's host, `host:IP`): the responder rules are not checked.
   */
  responderRules = true;
  /**
   * Set by the flow: a violation that holds only if the responder did not get PSNs from..to waits
   * for the responses to say (the capture may have missed the requests that carried them).
   */
  defer: ((from: number, to: number, frame: number, report: () => void) => void) | null = null;

  private unlessReceived(from: number, to: number, frame: number, report: () => void): void {
    if (this.defer === null) report();
    else this.defer(from, to, frame, report);
  }

  constructor(
    private readonly conversation: number,
    private readonly requester: Side,
    private readonly sink: (v: Violation) => void,
  ) {}

  private report(rule: RuleId, frames: number[], psn: number, message: string): void {
    if (!this.responderRules && RESPONDER_RULES.includes(rule)) return;
    this.sink({ rule, conversation: this.conversation, requester: this.requester, frames, psn, message });
  }

  /** A retransmission of `psn` at `timeNs`. */
  onRetransmitAt(psn: number, timeNs: number): void {
    this.retxPsn[this.retxAt] = psn;
    this.retxNs[this.retxAt] = timeNs;
    this.retxAt = (this.retxAt + 1) % RECENT_RETX;
  }

  /** Whether `psn` was retransmitted at or after `sinceNs`, as far as the ring remembers. */
  private resentSince(psn: number, sinceNs: number): boolean {
    for (let i = 0; i < RECENT_RETX; i++) if (this.retxPsn[i] === psn && this.retxNs[i]! >= sinceNs) return true;
    return false;
  }

  /**
   * A PSN sequence error NAK at `v.psn`; `compHigh` is the completion point before it. `inFlightNs`:
   * how long before a response was captured a request may have been sent and still reached the
   * responder after the response left it.
   */
  onNakSeq(v: FrameView, compHigh: number | null, inFlightNs = 0): void {
    const last = this.lastNak;
    // After an RNR NAK for the PSN, once its timer has run out, the requester owed a resend of it: when
    // the capture shows none, it may have lost that resend and the RNR NAK that answered it, and this
    // NAK may report a new gap. Not judged then.
    const r = this.lastRnr;
    const owedResend = r.psn === v.psn && v.timeNs - r.timeNs >= r.timerNs;
    // A resend of the PSN the capture shows shortly before the first NAK may have reached the responder
    // after that NAK left it: it ends the gap the NAK reported (IBTA §9.7.5.2.2: a new NAK is allowed once
    // the expected PSN has arrived again; after an RNR NAK, rxe answers each new arrival of the PSN with
    // another RNR NAK and, for the packet after it, another sequence NAK).
    const resentInFlight = last !== null && this.resentSince(v.psn, last.timeNs - inFlightNs);
    if (last !== null && last.psn === v.psn && !owedResend && !resentInFlight) {
      this.report(
        RuleId.ONE_NAK_PER_GAP,
        [last.frame, v.frame],
        v.psn,
        `second PSN sequence error NAK for PSN ${v.psn} (frame ${last.frame} already reported this gap)`,
      );
    }
    if (compHigh !== null && psnDiff(v.psn, compHigh) <= 0) {
      this.report(RuleId.NAK_PSN_NOT_ACKED, [v.frame], v.psn, `NAK for PSN ${v.psn}, which the responder had already acknowledged (through PSN ${compHigh})`);
    }
    this.lastNak = { psn: v.psn, frame: v.frame, timeNs: v.timeNs };
  }

  /** An RNR NAK for a PSN shows the responder received it: the gap of an earlier NAK is closed. */
  onRnrNak(v: FrameView, timerNs: number): void {
    this.lastRnr.psn = v.psn;
    this.lastRnr.timeNs = v.timeNs;
    this.lastRnr.timerNs = timerNs;
    if (this.lastNak !== null && psnDiff(v.psn, this.lastNak.psn) >= 0) this.lastNak = null;
  }

  /**
   * A request at the PSN an earlier NAK named: the responder may have got it, and answered it with an
   * RNR NAK the capture lost, so a later NAK for that PSN may report a new gap (IBTA §9.7.5.2.2: one NAK
   * per gap, until the expected PSN arrives). The rule is not judged across it.
   */
  onRequestAt(psn: number): void {
    if (this.lastNak !== null && this.lastNak.psn === psn) this.lastNak = null;
  }

  /**
   * A go-back-N rewind that starts past the PSN the last NAK named: either the requester skipped it
   * (`retransmitFromNakPsn` says so once the responses confirm it) or the capture lost its resend,
   * which the responder may have answered with an RNR NAK the capture lost too. The next NAK for that
   * PSN may report a new gap, so `oneNakPerGap` is not judged across it.
   */
  onRewindPast(psn: number): void {
    if (this.lastNak !== null && psnDiff(psn, this.lastNak.psn) > 0) this.lastNak = null;
  }

  /** Any response acknowledging through `psn` closes the gap of an earlier NAK. */
  onAcknowledged(psn: number): void {
    if (this.lastNak !== null && psnDiff(psn, this.lastNak.psn) >= 0) this.lastNak = null;
  }

  /** An ACK or NAK for a PSN the requester never sent (`coverHigh` = highest sent). */
  onResponsePsn(v: FrameView, coverHigh: number | null, isNak: boolean): void {
    if (coverHigh === null) return;
    const limit = isNak ? psnAdd(coverHigh, 1) : coverHigh;
    if (psnDiff(v.psn, limit) > 0) {
      this.report(RuleId.RESPONSE_FOR_SENT_PSN, [v.frame], v.psn, `${v.opName} for PSN ${v.psn}, beyond the highest PSN sent (${coverHigh})`);
    }
  }

  /**
   * A retransmission burst began with frame `v`. `recentComp`: the completion points of the
   * last trigger TTL (a response captured just before the resend may not have been processed
   * by the requester yet: resending from the first unacknowledged PSN as of then is right).
   * `rxeRetry`: the rewind is rxe's retry from a stale completer PSN (rxe-behaviours.ts), reported in
   * the rxe class: where it starts is not judged here.
   */
  onEpisode(
    ep: Episode,
    v: FrameView,
    t: PendingTrigger | null,
    latestNak: PendingTrigger | null,
    compHigh: number | null,
    recentComp: readonly number[] = [],
    rxeRetry = false,
  ): void {
    if (!this.requesterRules || !this.requesterInputKnown) return;
    const fromFirstUnacked = (): boolean => resumesAtFirstUnacked(v.psn, compHigh, recentComp);
    if (rxeRetry) {
      // Judged by the rxe class; the RNR wait below still is.
    } else if (t === null && latestNak !== null && latestNak.passesUnanswered !== true) {
      const n = latestNak;
      const what = n.kind === Trigger.NAK ? 'NAK' : 'RNR NAK';
      const skipping = psnDiff(v.psn, n.psn) > 0;
      const how = skipping ? `skipping ${psnDiff(v.psn, n.psn)} PSN(s)` : 'resending acknowledged PSNs';
      const report = (): void =>
        this.report(
          RuleId.RETRANSMIT_FROM_NAK_PSN,
          [n.frame, v.frame],
          n.psn,
          `retransmission after the ${what} for PSN ${n.psn} starts at PSN ${v.psn} (${how})`,
        );
      if (skipping) this.unlessReceived(n.psn, psnAdd(v.psn, -1), v.frame, report);
      // A NAK past a READ whose responses did not all arrive does not acknowledge that READ: it is an
      // implied NAK for it (rxe_comp.c check_psn() -> COMPST_ERROR_RETRY; stack/completer.ts), so re-reading it is right.
      else if (!v.opName.endsWith('RDMA_READ_REQUEST')) report();
    } else if (t !== null && t.kind === Trigger.RNR && t.passesUnanswered !== true && t.psn !== v.psn && compHigh !== null && !fromFirstUnacked()) {
      const report = (): void =>
        this.report(
          RuleId.RETRANSMIT_FROM_FIRST_UNACKED,
          [t.frame, v.frame],
          v.psn,
          `after the RNR wait for PSN ${t.psn}, retransmission starts at PSN ${v.psn}, but responses during the wait acknowledged through PSN ${compHigh} (first unacknowledged: ${psnAdd(compHigh, 1)})`,
        );
      if (psnDiff(v.psn, psnAdd(compHigh, 1)) > 0) this.unlessReceived(psnAdd(compHigh, 1), psnAdd(v.psn, -1), v.frame, report);
      else report();
    } else if (t === null && compHigh !== null && !fromFirstUnacked() && psnDiff(v.psn, psnAdd(compHigh, 1)) > 0) {
      // After a timeout only a start past the first unacknowledged PSN breaks go-back-N (it skips
      // PSNs the responder still needs). Starting earlier resends acknowledged packets, which the
      // responder answers as duplicates: wasteful, not wrong, and what a requester does when its
      // timer fires before it has processed an ACK the capture already shows (rxe under qemu).
      this.unlessReceived(psnAdd(compHigh, 1), psnAdd(v.psn, -1), v.frame, () =>
        this.report(
          RuleId.RETRANSMIT_FROM_FIRST_UNACKED,
          [v.frame],
          v.psn,
          `retransmission after a timeout starts at PSN ${v.psn}, past the first unacknowledged PSN ${psnAdd(compHigh, 1)}`,
        ),
      );
    }
    if (t !== null && t.kind === Trigger.RNR && t.passesUnanswered !== true && t.rnrTimerNs !== null && v.timeNs - t.timeNs < t.rnrTimerNs) {
      this.report(
        RuleId.RNR_WAIT_RESPECTED,
        [t.frame, v.frame],
        t.psn,
        `resent ${((v.timeNs - t.timeNs) / 1000).toFixed(3)} µs after the RNR NAK, before its ${(t.rnrTimerNs / 1000).toFixed(2)} µs timer ran out`,
      );
    }
    void ep;
  }

  /** Within a go-back-N burst, the request after `prevFrame` jumped from `expected` to `v.psn`. */
  onSkip(prevFrame: number, v: FrameView, expected: number): void {
    if (!this.requesterRules) return;
    this.unlessReceived(expected, psnAdd(v.psn, -1), v.frame, () =>
      this.report(
        RuleId.NO_SKIP_ON_RETRANSMIT,
        [prevFrame, v.frame],
        expected,
        `go-back-N skipped PSN ${expected}${psnDiff(v.psn, expected) > 1 ? `..${psnAdd(v.psn, -1)}` : ''}: PSN ${v.psn} followed`,
      ),
    );
  }

  /** Response `a` acknowledged PSN `a.psn`, which the requester sent only later (first transmission `v`). */
  onResponseBeforeRequest(a: { frame: number; psn: number; opName: string }, v: FrameView): void {
    this.report(
      RuleId.RESPONSE_FOR_SENT_PSN,
      [a.frame, v.frame],
      a.psn,
      `${a.opName} acknowledged PSN ${a.psn} before the requester sent PSN ${v.psn} (frame ${v.frame})`,
    );
  }
}
