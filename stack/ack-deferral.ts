/**
 * ACKs held for a moment, each one kept: what the device's busy-poll receive does
 * (Device.pollCoalescing) when it does not coalesce ACKs.
 *
 * In a ping-pong each side receives the peer's message and the ACK of its own, and must have both
 * before it answers. The responder's ACK used to be built as the message arrived and leave in front
 * of the answer, in the same transmit kick; the peer then got the ACK first and waited for the
 * answer behind it. Held here instead, it is built after the answer, and the peer works on the
 * answer (the larger part: the responder, the receive completion) while the ACK is on its way
 * (docs/performance.md, "The ACK after the answer").
 *
 * The frames are the ones sending at once gives: one ACK per AckReq packet, as rxe sends
 * (`rxe_resp.c` `send_ack()`), with the credits and the MSN of the moment it was earned. Order is
 * kept per QP: before any other response leaves for a QP holding ACKs (a NAK, an RNR NAK, READ
 * responses, an atomic ACK), its held ACKs go first (the responder's `ackHeld` check), so the
 * requester never sees a response older than one it already had (IBTA §9.7.5.1.2).
 */
import type { AckHold } from './qp-context';
import type { QueuePair } from './queue-pair';

export class AckDeferral implements AckHold {
  /** True while the device holds ACKs (its busy-poll receive); false: the responder sends each at once. */
  holding = false;
  private qps: (QueuePair | null)[] = [];
  private psns: number[] = [];
  private syndromes: number[] = [];
  private msns: number[] = [];
  private count = 0;

  /** @param send sends the ACK of `qp` for `psn` with this syndrome and MSN, now. */
  constructor(private readonly send: (qp: QueuePair, syndrome: number, psn: number, msn: number) => void) {}

  /** The responder owes `qp` an ACK for `psn` with `syndrome` (credits) and its MSN as it stands. */
  hold(qp: QueuePair, psn: number, syndrome: number): void {
    const i = this.count++;
    this.qps[i] = qp;
    this.psns[i] = psn;
    this.syndromes[i] = syndrome;
    this.msns[i] = qp.resp.msn;
    qp.resp.ackHeld = true;
  }

  /** Sends the ACKs `qp` holds, oldest first (before anything else leaves for it). */
  release(qp: QueuePair): void {
    if (!qp.resp.ackHeld) return;
    qp.resp.ackHeld = false;
    this.take(qp);
  }

  /** Sends every held ACK, in the order they were earned. */
  releaseAll(): void {
    const n = this.count;
    if (n === 0) return;
    this.count = 0;
    for (let i = 0; i < n; i++) (this.qps[i] as QueuePair).resp.ackHeld = false;
    for (let i = 0; i < n; i++) {
      const qp = this.qps[i] as QueuePair;
      this.qps[i] = null;
      this.send(qp, this.syndromes[i] as number, this.psns[i] as number, this.msns[i] as number);
    }
  }

  /** Takes `qp`'s ACKs out of the list and sends them, in order, keeping the others' order. */
  private take(qp: QueuePair): void {
    let kept = 0;
    const n = this.count;
    for (let i = 0; i < n; i++) {
      const q = this.qps[i] as QueuePair;
      if (q === qp) {
        this.send(qp, this.syndromes[i] as number, this.psns[i] as number, this.msns[i] as number);
        continue;
      }
      this.qps[kept] = q;
      this.psns[kept] = this.psns[i] as number;
      this.syndromes[kept] = this.syndromes[i] as number;
      this.msns[kept] = this.msns[i] as number;
      kept++;
    }
    for (let i = kept; i < n; i++) this.qps[i] = null;
    this.count = kept;
  }
}
