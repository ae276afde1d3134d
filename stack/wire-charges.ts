/**
 * The request frames waiting to be charged to their QPs' pacers and byte counters when they start
 * on the wire, for a driver that reports that (nic-driver/driver.ts TxBackpressure). The driver
 * reports the frames it took in the order it took them, as a FIFO: so every frame handed to it has
 * a number (its place in that order), and a charge waits for the report that passes its number.
 * Only frames of QPs with a reaction point are kept; the rest are counted, not stored.
 *
 * Charging at wire time is what the simulators the DCQCN literature uses do: Zhu's ns3-rdma counts
 * a flow's bytes and sets its next send time as a packet is dequeued for the wire
 * (qbb-net-device.cc DequeueAndTransmit), HPCC's ns-3 in rdma-hw.cc PktSent.
 */
import type { QpCongestion } from './congestion/qp-congestion';

export class WireCharges {
  /** Frames handed to the driver so far, and how many of them it reported started. */
  handed = 0;
  private startedCount = 0;
  /** Charges not yet due, oldest first from `head`: the QP's congestion control, the frame's length, its number. */
  private ccs: (QpCongestion | null)[] = [];
  private lens: number[] = [];
  private seqs: number[] = [];
  private head = 0;

  /** A request frame of `len` bytes of `cc`'s QP, number `seq` among the frames handed to the driver. */
  add(cc: QpCongestion, len: number, seq: number): void {
    this.ccs.push(cc);
    this.lens.push(len);
    this.seqs.push(seq);
    // A frame handed over and started before its charge was recorded (a flush inside the build).
    if (seq < this.startedCount) this.charge();
  }

  /** The driver took `n` frames (a burst or a commit). */
  took(n: number): void {
    this.handed += n;
  }

  /** The driver took only frames below number `end` of those handed: charges at or past it are dropped, and their pacers stop waiting for them. */
  notTakenFrom(end: number): void {
    while (this.ccs.length > this.head && (this.seqs[this.seqs.length - 1] as number) >= end) {
      (this.ccs.pop() as QpCongestion).notHanded();
      this.lens.pop();
      this.seqs.pop();
    }
  }

  /** The driver reports `n` more frames started on the wire: the charges they pass are made, in order. */
  started(n: number): void {
    this.startedCount += n;
    this.charge();
  }

  private charge(): void {
    const done = this.startedCount;
    while (this.head < this.ccs.length && (this.seqs[this.head] as number) < done) {
      const cc = this.ccs[this.head] as QpCongestion;
      const len = this.lens[this.head] as number;
      this.ccs[this.head] = null;
      this.head++;
      cc.onWire(len);
    }
    if (this.head === this.ccs.length) {
      this.ccs.length = 0;
      this.lens.length = 0;
      this.seqs.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.ccs.length) {
      this.ccs.splice(0, this.head);
      this.lens.splice(0, this.head);
      this.seqs.splice(0, this.head);
      this.head = 0;
    }
  }
}
