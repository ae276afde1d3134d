/**
 * One device over several receive queues of an interface: a driver per queue (AF_XDP binds a
 * socket to one queue), served as one `NicDriver`. A real NIC spreads UDP flows over its queues by
 * RSS; a frame that lands on a queue without a socket is lost, so a stack listening on queue 0
 * alone stalls as soon as the hash sends a flow elsewhere.
 *
 * Receive: each burst asks every queue once, in turn, starting after the queue that was asked
 * first last time, so no queue starves; a frame stays valid until the next burst (it lies in its
 * queue's memory, which that queue reuses only at its own next burst).
 *
 * Transmit: every frame of a flow (a UDP source port: RoCE v2 derives it from the QP numbers, as
 * rxe does) leaves on the same queue, so one QP's packets keep their order; flows get queues in
 * turn as they first appear, so k flows use min(k, queues) queues whatever their port numbers
 * (a flow table of at most 16 384 entries: RoCE's source ports are 0xC000..0xFFFF). On a veth a frame sent on transmit queue N arrives on the
 * peer's receive queue N, which is how the tests reach every queue. The zero-copy transmit
 * extension is not offered (the queue is known only once the frame is built): frames are copied.
 */
import { type DriverStats, type NicDriver, emptyStats } from './driver';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { udpSourcePort } from './udp-ports';

export interface QueueDriver extends NicDriver {
  /** The receive queue this driver is bound to. */
  readonly queue: number;
}

/** Frames and bytes of one queue, for the per-queue counters (mlx5's rx<N>_packets, tx<N>_packets). */
export interface QueueStats extends DriverStats {
  queue: number;
}

/** Flows remembered (every UDP source port RoCE v2 uses fits); past it a port's queue is the port modulo the queue count. */
const MAX_FLOWS = 16384;

export class MultiQueueDriver implements NicDriver {
  readonly name: string;
  readonly mac: number;
  readonly mtu: number;
  private next = 0;
  private closed = false;
  private readonly total: DriverStats = emptyStats();
  /** Frames grouped per queue for one txBurst (reused). */
  private readonly groups: Uint8Array[][];
  /** UDP source port → index of its transmit queue; ports are handed queues in turn. */
  private readonly flowQueue = new Map<number, number>();
  private nextFlowQueue = 0;

  /** `queues`: one driver per receive queue, all on the same interface (their order is the transmit queues' order). */
  constructor(private readonly queues: readonly QueueDriver[]) {
    const first = queues[0];
    if (first === undefined) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a multi-queue driver needs at least one queue');
    this.name = `${first.name.replace(/\/\d+$/, '')}/${queues.map((q) => q.queue).join(',')}`;
    this.mac = first.mac;
    this.mtu = first.mtu;
    this.groups = queues.map(() => []);
  }

  /** The queues served, in order. */
  get queueNumbers(): number[] {
    return this.queues.map((q) => q.queue);
  }

  get stats(): DriverStats {
    const t = this.total;
    t.txFrames = t.txBytes = t.rxFrames = t.rxBytes = t.txDropped = t.rxDropped = 0;
    for (const q of this.queues) {
      const s = q.stats;
      t.txFrames += s.txFrames;
      t.txBytes += s.txBytes;
      t.rxFrames += s.rxFrames;
      t.rxBytes += s.rxBytes;
      t.txDropped += s.txDropped;
      t.rxDropped += s.rxDropped;
    }
    return t;
  }

  /** Each queue's counters. */
  queueStats(): QueueStats[] {
    return this.queues.map((q) => ({ queue: q.queue, ...q.stats }));
  }

  txBurst(frames: readonly Uint8Array[]): number {
    const n = this.queues.length;
    if (n === 1) return this.queues[0]!.txBurst(frames);
    const groups = this.groups;
    for (const f of frames) groups[this.transmitQueueIndex(f)]!.push(f);
    let taken = 0;
    for (let i = 0; i < n; i++) {
      const g = groups[i]!;
      if (g.length === 0) continue;
      taken += this.queues[i]!.txBurst(g);
      g.length = 0;
    }
    return taken;
  }

  /** The index (into the queue list) a frame leaves on: its flow's queue; the first queue for anything not UDP. */
  transmitQueueIndex(f: Uint8Array): number {
    const port = udpSourcePort(f);
    if (port < 0) return 0;
    let q = this.flowQueue.get(port);
    if (q === undefined) {
      if (this.flowQueue.size >= MAX_FLOWS) return port % this.queues.length;
      q = this.nextFlowQueue;
      this.nextFlowQueue = (q + 1) % this.queues.length;
      this.flowQueue.set(port, q);
    }
    return q;
  }

  rxBurst(max: number): Uint8Array[] {
    const n = this.queues.length;
    if (n === 1) return this.queues[0]!.rxBurst(max);
    const out: Uint8Array[] = [];
    const start = this.next;
    this.next = (start + 1) % n;
    for (let k = 0; k < n && out.length < max; k++) {
      for (const f of this.queues[(start + k) % n]!.rxBurst(max - out.length)) out.push(f);
    }
    return out;
  }

  setRxHandler(fn: (() => void) | null): void {
    for (const q of this.queues) q.setRxHandler(fn);
  }

  pollRx(): boolean {
    let ran = false;
    for (const q of this.queues) if (q.pollRx?.() === true) ran = true;
    return ran;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const q of this.queues) q.close();
  }
}
