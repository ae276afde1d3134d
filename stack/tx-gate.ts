/**
 * The requesters' gate on a driver with transmit backpressure (nic-driver/driver.ts
 * TxBackpressure): while its transmit queue is full, or its link is paused by PFC, the device's
 * requesters send no new request packets, as a NIC whose port is paused picks no QP to send from
 * (HPCC's ns-3, qbb-net-device.cc DequeueAndTransmit: `GetNextQindex(m_paused)` skips every QP of
 * a paused priority). They wait here and are kicked when the driver reports room again.
 *
 * Responses, ACKs, NAKs and CNPs are not held: they go to the driver as before (the ring bounds
 * what the requesters add, not what the responder owes). Whether they then leave a paused link is
 * the driver's business: ns-3 keeps them on a queue of their own ahead of the QPs (RdmaEgressQueue
 * m_ackQ), which the star switch's uplink does not model (it holds them with the data while paused,
 * as HPCC's ns-3 does for its ACK queue on the paused priority, `paused[ack_q_idx]`).
 *
 * Fairness: QPs that found no room at all are kicked before those that were cut short by it, so a
 * QP that keeps taking the last slot does not starve the others.
 */
import type { TxBackpressure } from '../nic-driver/driver';
import type { QueuePair } from './queue-pair';

export class TxGate {
  /** QPs that found no room, and QPs that used what room there was; kicked in that order. */
  private starved = new Set<QueuePair>();
  private served = new Set<QueuePair>();

  constructor(
    private readonly driver: TxBackpressure,
    /** Frames built and not yet handed to the driver (they take room when the port flushes). */
    private readonly unflushed: () => number,
    private readonly kick: (qp: QueuePair) => void,
  ) {}

  /** Request frames the device may build now: the driver's room less what is built and not handed over. */
  room(): number {
    return this.driver.txRoom() - this.unflushed();
  }

  /** `qp` waits for room: `starved` when it found none, else it used what there was. */
  wait(qp: QueuePair, starved: boolean): void {
    if (starved) {
      this.served.delete(qp);
      this.starved.add(qp);
    } else if (!this.starved.has(qp)) {
      this.served.add(qp);
    }
  }

  /** The driver reports room may have opened: the waiting QPs are kicked, starved ones first. */
  opened(): void {
    if (this.starved.size === 0 && this.served.size === 0) return;
    if (this.room() <= 0) return;
    const order = [...this.starved, ...this.served];
    this.starved.clear();
    this.served.clear();
    for (const qp of order) this.kick(qp);
  }
}
