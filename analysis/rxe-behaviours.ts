/**
 * Behaviour of Linux rdma_rxe that IBTA leaves to the implementation: reported by `roce analyze`
 * in a class of its own (`rxe`), beside the go-back-N rule violations and never as one. Each kind
 * names the rxe source that does it; docs/conformance.md ("Rulings") says why it is not a violation.
 * roce-ts's engine copies some of it (its responder's sequence NAK after an RNR NAK), so the class
 * names whose choice the behaviour is, not which host sent the frames.
 */
import { psnDiff } from '../base/psn';
import type { Side } from './types';

export const RxeBehaviourId = {
  /** The requester sends requests past an RNR NAK'd PSN before it resends that PSN. */
  SENDS_DURING_RNR_WAIT: 'sendsDuringRnrWait',
  /** The responder follows an RNR NAK with a PSN sequence error NAK for the same PSN. */
  SEQ_NAK_AFTER_RNR_NAK: 'seqNakAfterRnrNak',
  /**
   * After an RNR wait the requester goes back to where its previous go-back-N started, resending
   * PSNs that responses captured since had acknowledged: it took in, after that go-back-N, RNR NAKs
   * for the PSN that answered copies sent before it.
   */
  RETRY_FROM_STALE_COMPLETER_PSN: 'retryFromStaleCompleterPsn',
} as const;
export type RxeBehaviourId = (typeof RxeBehaviourId)[keyof typeof RxeBehaviourId];

export const RXE_BEHAVIOUR_IDS: readonly RxeBehaviourId[] = Object.values(RxeBehaviourId);

/** The class name of these findings in the report, the JSON and `--fail-on`. */
export const RXE_CLASS = 'rxe';

export interface RxeBehaviourInfo {
  /** Which end of the flow does it. */
  by: 'requester' | 'responder';
  /** What IBTA says: `silent` (it leaves the choice to the implementation) or `forbidden`. */
  ibta: 'silent' | 'forbidden';
  /** The rxe source that does it (Linux drivers/infiniband/sw/rxe/). */
  source: string;
}

export const RXE_BEHAVIOURS: Readonly<Record<RxeBehaviourId, RxeBehaviourInfo>> = {
  // rxe_requester() gates only req_retry() on wait_for_rnr_timer: req_next_wqe() goes on posting the
  // send queue, and the retry from the NAK'd PSN waits for rnr_nak_timer(). IBTA §9.7.5.2.8 asks for
  // the resend from the NAK'd PSN after the timer; it says nothing of packets past it meanwhile (the
  // responder drops them as out of sequence, §9.7.5.2.2).
  [RxeBehaviourId.SENDS_DURING_RNR_WAIT]: {
    by: 'requester',
    ibta: 'silent',
    source: 'rxe_req.c rxe_requester() (need_retry && !wait_for_rnr_timer), rnr_nak_timer()',
  },
  // check_psn() sets sent_psn_nak only when it sends a sequence NAK; an RNR NAK leaves it clear, so
  // the packet after the RNR NAK'd one is a new out-of-sequence event (IBTA §9.7.5.2.2: one sequence
  // NAK per gap; whether an RNR NAK stands for it IBTA does not say).
  [RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK]: { by: 'responder', ibta: 'silent', source: 'rxe_resp.c check_psn() (sent_psn_nak), send_ack() for RESPST_ERR_RNR' },
  // rxe_completer() returns at once while req.need_retry is set, so responses wait in resp_pkts
  // until req_retry() has run. An RNR NAK for comp.psn queued behind the one that started the retry
  // then passes check_psn() as new (its PSN is still comp.psn) and starts another RNR wait (check_ack()
  // sets wait_for_rnr_timer); its PSN sequence NAK sets need_retry again, so the ACKs of the resent
  // messages stay queued, and req_retry() (qp->req.psn = qp->comp.psn) goes back to the old PSN.
  // IBTA §9.7.5.2.8: after the timer the requester resends from the PSN of the RNR NAK it acts on;
  // an RNR NAK answering a copy from before its own go-back-N is not one to act on.
  [RxeBehaviourId.RETRY_FROM_STALE_COMPLETER_PSN]: {
    by: 'requester',
    ibta: 'forbidden',
    source:
      'rxe_comp.c rxe_completer() (returns while req.need_retry), check_psn(), check_ack() (AETH_RNR_NAK); rxe_req.c req_retry() (qp->req.psn = qp->comp.psn)',
  },
};

export interface RxeBehaviour {
  behaviour: RxeBehaviourId;
  class: typeof RXE_CLASS;
  by: RxeBehaviourInfo['by'];
  ibta: RxeBehaviourInfo['ibta'];
  source: string;
  conversation: number;
  /** The requester's side of the flow it was seen in. */
  requester: Side;
  /** The frames that show it, in capture order. */
  frames: number[];
  psn: number;
  message: string;
}

interface RnrWait {
  psn: number;
  frame: number;
  timeNs: number;
  /** Requests past `psn` sent after the requester had had time to receive the RNR NAK: first and last frame, count. */
  firstFrame: number;
  lastFrame: number;
  count: number;
  firstNs: number;
}

/** Finds the rxe behaviours of one RC requester flow from its requests and responses. */
export class RxeBehaviourTracker {
  private wait: RnrWait | null = null;
  /** The last RNR NAK, until a response acknowledges its PSN or a sequence NAK for it follows. */
  private rnr: { psn: number; frame: number } | null = null;
  /** RNR NAK frames by PSN, since the last go-back-N rewind to a PSN other than the one before it. */
  private rnrFrames = new Map<number, number[]>();
  /** The go-back-N rewinds in a row to one PSN: their first resends' frames. */
  private rewinds: { psn: number; frames: number[] } | null = null;

  constructor(
    private readonly conversation: number,
    private readonly requester: Side,
    private readonly sink: (b: RxeBehaviour) => void,
  ) {}

  private report(behaviour: RxeBehaviourId, frames: number[], psn: number, message: string): void {
    const i = RXE_BEHAVIOURS[behaviour];
    this.sink({
      behaviour,
      class: RXE_CLASS,
      by: i.by,
      ibta: i.ibta,
      source: i.source,
      conversation: this.conversation,
      requester: this.requester,
      frames,
      psn,
      message,
    });
  }

  /** An RNR NAK for `psn`: a new wait begins (the requester must resend `psn` after the timer). */
  onRnrNak(psn: number, frame: number, timeNs: number): void {
    this.endWait(null);
    this.wait = { psn, frame, timeNs, firstFrame: 0, lastFrame: 0, count: 0, firstNs: 0 };
    this.rnr = { psn, frame };
    const frames = this.rnrFrames.get(psn);
    if (frames !== undefined) frames.push(frame);
    else if (this.rnrFrames.size < 64) this.rnrFrames.set(psn, [frame]);
  }

  /**
   * A go-back-N rewind: its first resend is at `psn`, frame `frame`; `acknowledged`, the PSN the
   * captured responses acknowledge through. True when it is rxe's retry from a stale completer PSN
   * (reported here): the requester's reaction rules do not judge it.
   */
  onRewind(psn: number, frame: number, acknowledged: number | null): boolean {
    const r = this.rewinds;
    if (r === null || r.psn !== psn) {
      const mine = this.rnrFrames.get(psn);
      this.rnrFrames = new Map(mine === undefined ? [] : [[psn, mine]]);
      this.rewinds = { psn, frames: [frame] };
      return false;
    }
    // One RNR NAK for the PSN per rewind to it is the requester acting on each; one more, with the
    // PSN acknowledged since, is rxe's completer taking in a stale one (RETRY_FROM_STALE_COMPLETER_PSN).
    const rnr = this.rnrFrames.get(psn) ?? [];
    const explained = acknowledged !== null && psnDiff(acknowledged, psn) >= 0 && rnr.length > r.frames.length;
    if (explained) {
      const last = r.frames[r.frames.length - 1] ?? frame;
      this.report(
        RxeBehaviourId.RETRY_FROM_STALE_COMPLETER_PSN,
        [...rnr, ...r.frames, frame].sort((x, y) => x - y),
        psn,
        `the requester went back to PSN ${psn} again (frame ${frame}), where its go-back-N at frame ${last} started, though responses since acknowledged through PSN ${acknowledged}: ` +
          `it had ${rnr.length} RNR NAKs for PSN ${psn} (frames ${rnr.join(', ')}) and took one that answered an older copy as a new wait`,
      );
    }
    r.frames.push(frame);
    return explained;
  }

  /**
   * A PSN sequence error NAK for `psn`. After an RNR NAK for the same PSN (nothing acknowledged it
   * since) it answers a packet that followed the RNR NAK'd one: the responder's queue may hold that
   * packet long enough for the NAK to come after the requester's resend.
   */
  onSeqNak(psn: number, frame: number): void {
    const r = this.rnr;
    if (r === null || r.psn !== psn) return;
    this.rnr = null;
    this.report(
      RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK,
      [r.frame, frame],
      psn,
      `PSN sequence error NAK for PSN ${psn} after the RNR NAK for the same PSN (frame ${r.frame}): the responder took a packet after it as a new gap`,
    );
  }

  /** A response acknowledged through `psn`: a wait for an RNR NAK'd PSN it covers is over without a resend. */
  onAcknowledged(psn: number): void {
    if (this.rnr !== null && psnDiff(psn, this.rnr.psn) >= 0) this.rnr = null;
    if (this.wait !== null && psnDiff(psn, this.wait.psn) >= 0) this.wait = null;
  }

  /**
   * A request at `psn` sent at `timeNs`; `reactNs`: how long after a response's capture the requester
   * may still have sent requests without having received it (a round trip).
   */
  onRequest(psn: number, frame: number, timeNs: number, reactNs: number): void {
    const w = this.wait;
    if (w === null) return;
    if (psnDiff(psn, w.psn) <= 0) {
      this.endWait(frame);
      return;
    }
    if (timeNs - w.timeNs <= reactNs) return;
    if (w.count === 0) {
      w.firstFrame = frame;
      w.firstNs = timeNs;
    }
    w.lastFrame = frame;
    w.count++;
  }

  /** The wait is over: the requester resent its PSN at `resendFrame` (null: it ended otherwise). */
  private endWait(resendFrame: number | null): void {
    const w = this.wait;
    this.wait = null;
    if (w === null || w.count === 0 || resendFrame === null) return;
    const frames = w.count === 1 ? [w.frame, w.firstFrame, resendFrame] : [w.frame, w.firstFrame, w.lastFrame, resendFrame];
    this.report(
      RxeBehaviourId.SENDS_DURING_RNR_WAIT,
      frames,
      w.psn,
      `after the RNR NAK for PSN ${w.psn} the requester sent ${w.count} request(s) past it (from ${((w.firstNs - w.timeNs) / 1e6).toFixed(3)} ms after the NAK, frames ${w.firstFrame}${w.count > 1 ? `-${w.lastFrame}` : ''}) before resending PSN ${w.psn} (frame ${resendFrame})`,
    );
  }

  /** The end of the capture: a wait with no resend in it is not reported (the capture does not show how it ended). */
  finish(): void {
    this.wait = null;
    this.rnr = null;
    this.rnrFrames.clear();
    this.rewinds = null;
  }
}
