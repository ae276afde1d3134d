/**
 * Coalesced acknowledgements per receive burst (an option of the device, off by default).
 *
 * IBTA vol. 1 §9.7.5.1.1 lets a responder coalesce the acknowledgements of several request
 * packets into one: an ACK of PSN n acknowledges every request up to n, and the requester completes
 * the earlier ones from it (§9.7.5.1.2, implied acknowledgements). rxe does not: it sends an ACK for
 * every packet with AckReq, which for small messages is one ACK per message. Hardware RNICs
 * coalesce. With this on, the responder holds the ACK an AckReq packet earns until the end of the
 * burst of frames the port is working through, and sends one ACK per QP: for the latest PSN held,
 * with the MSN and credits as they stand then.
 *
 * Order is kept: before anything else leaves for a QP holding an ACK (a NAK, an RNR NAK, READ
 * responses, an atomic ACK, a duplicate's re-ACK), the held ACK goes first, so a requester never
 * sees a response whose PSN is older than one it already had.
 *
 * Off by default because `roce replay` compares a stack's responses with a capture's one for one,
 * and rxe's captures have an ACK per AckReq; the simulations keep their frame-for-frame dynamics.
 */
import type { AckHold } from './qp-context';
import type { QueuePair } from './queue-pair';

export class AckCoalescer implements AckHold {
  /** A coalescing device holds every ACK until the end of the burst. */
  readonly holding = true;
  /** QPs holding an ACK, in the order they first held one this burst. */
  private readonly held: QueuePair[] = [];
  /** ACKs not sent because a later one of the same burst covered them (for counters and tests). */
  coalesced = 0;

  /** @param send sends the ACK of `qp` for `psn` now (the responder's ACK, with the MSN and credits as they stand). */
  constructor(private readonly send: (qp: QueuePair, psn: number) => void) {}

  /** The responder owes an ACK for `psn`: hold it (a later one of the burst replaces it; its credits and MSN are taken when it goes). */
  hold(qp: QueuePair, psn: number): void {
    const r = qp.resp;
    if (r.ackHeld) {
      this.coalesced++;
      qp.counters.ack_deferred++;
    } else {
      r.ackHeld = true;
      this.held.push(qp);
    }
    r.ackHeldPsn = psn;
  }

  /** Sends the ACK `qp` holds, if any (before anything else leaves for the QP, and at the end of a burst). */
  release(qp: QueuePair): void {
    const r = qp.resp;
    if (!r.ackHeld) return;
    r.ackHeld = false;
    this.send(qp, r.ackHeldPsn);
  }

  /** The burst is over: every held ACK goes. */
  releaseAll(): void {
    const list = this.held;
    if (list.length === 0) return;
    for (let i = 0; i < list.length; i++) this.release(list[i] as QueuePair);
    list.length = 0;
  }
}
