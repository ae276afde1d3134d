/**
 * Two `NicDriver` endpoints joined by a simulated cable in one process, for
 * running both ends of a RoCE connection on a `VirtualClock`.
 *
 * Each direction models a sender's port and a path:
 *   tx: the frame is copied, recorded by a 'sent' tap, and serialized at
 *       `bandwidthBps` behind the frames before it (Ethernet preamble, FCS and
 *       inter-frame gap included, short frames padded to 60 bytes);
 *   path: the direction's `FaultInjector` drops, duplicates, holds back,
 *       corrupts or marks it, and adds propagation delay and jitter;
 *   rx: it arrives at `clock.schedule` time, in FIFO order unless a reorder
 *       fault or a targeted delay says otherwise. Frames arriving at the same
 *       instant are queued together and the rx handler runs once for them.
 * The same seed and the same traffic give the same frames at the same times.
 */
import type { Clock, TimerId } from '../base/clock';
import { Rng } from '../base/rng';
import { type DriverStats, type NicDriver, type RunReceive, type TxSpace, emptyStats, maxFrameLenAt } from './driver';
import { type Direction, type Emission, type FaultConfig, FaultInjector } from './faults';
import { type FrameTap, recordsAt } from './pcap-tap';
import { LinkConfigError } from './link-config-error';
import { wireBytes } from '../packets/wire-size';

/** The wire's per-frame overhead and minimum frame (packets/wire-size.ts, which the stack's pacer shares). */
export { MIN_FRAME_BYTES, WIRE_OVERHEAD_BYTES } from '../packets/wire-size';

/** The wire of an in-memory link: clock, seed, MTU, MACs, bandwidth, latency and the faults of each direction. */
export interface MemoryLinkOptions {
  clock: Clock;
  /** Seed of every random fault (default 0). */
  seed?: number;
  /** IP MTU of both ends (default 1500). */
  mtu?: number;
  macA?: number;
  macB?: number;
  /** Line rate for serialization delay (default 100e9; 0 = frames take no time on the wire). */
  bandwidthBps?: number;
  faults?: { aToB?: FaultConfig; bToA?: FaultConfig };
  tap?: FrameTap;
  /** Receive queue capacity per end; arrivals beyond it count as rxDropped (default 65536). */
  rxRing?: number;
}

/** The two ends of an in-memory link and the fault injector of each direction. */
export interface MemoryLink {
  a: MemoryDriver;
  b: MemoryDriver;
  faults: { aToB: FaultInjector; bToA: FaultInjector };
  /** Closes both ends; frames in flight are discarded. */
  close(): void;
}

/** Size of the slabs frame copies are carved from. */
const SLAB_BYTES = 1 << 20;

/** Where a `MemoryDriver` hands its transmitted frames (one direction of the link). */
export interface FramePort {
  send(frame: Uint8Array): void;
  /** True when frames may travel as a run of (offset, length) pairs (nothing on the way looks at them one by one). */
  takesRuns(): boolean;
  /** Sends a run of frames of one buffer, in order (only when `takesRuns()`). */
  sendRun(run: SlabRun): void;
}

/** Frames in one buffer as (offset, length) pairs, `next` the first pair not yet received. */
export interface SlabRun {
  buf: Uint8Array;
  pairs: number[];
  next: number;
}

/** What arrives at a link end: a frame of its own, or a run of frames in the sender's slab. */
type Arrival = Uint8Array | SlabRun;

function isRun(a: Arrival): a is SlabRun {
  return !(a instanceof Uint8Array);
}

/** One end of the link. Frames it receives are its own copies, valid for as long as the caller keeps them. */
export class MemoryDriver implements NicDriver, RunReceive {
  readonly stats: DriverStats = emptyStats();
  private port: FramePort | null = null;
  /** Received frames and runs, oldest first from `head`; `pending` counts the frames in them. */
  private rxq: Arrival[] = [];
  private head = 0;
  private pending = 0;
  /** The buffer of the last `rxRun` (driver.ts RunReceive). */
  rxRunBuffer: Uint8Array = new Uint8Array(0);
  private handler: (() => void) | null = null;
  private closedFlag = false;
  private slab = new Uint8Array(SLAB_BYTES);
  private slabOff = 0;
  /** The slab lent for zero-copy transmit (txReserve), with a view over it. */
  private space: TxSpace = { buf: this.slab, view: new DataView(this.slab.buffer) };
  /** Frames reserved and not committed: (offset, length) pairs in the current slab. */
  private resv: number[] = [];

  constructor(
    readonly name: string,
    readonly mac: number,
    readonly mtu: number,
    private readonly rxRing: number,
  ) {}

  /** Connects the transmit side (done by `createMemoryLink`). */
  attach(port: FramePort): void {
    this.port = port;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Frames waiting in the receive queue. */
  get rxPending(): number {
    return this.pending;
  }

  txBurst(frames: readonly Uint8Array[]): number {
    if (this.closedFlag || this.port === null) return 0;
    if (this.resv.length > 0) this.txCommit(); // frames reserved earlier leave first
    for (const f of frames) this.put(this.copyOf(f));
    return frames.length;
  }

  /** Puts one frame the link owns on the wire, or drops it when the MTU does not allow it. */
  private put(f: Uint8Array): void {
    if (this.admit(f, 0, f.length)) (this.port as FramePort).send(f);
  }

  /**
   * Counts the `len`-byte frame at `off` of `buf` as sent, or as dropped (txDropped) when it is
   * longer than the MTU allows: taken but never put on the wire, as a NIC drops an oversize frame.
   */
  protected admit(buf: Uint8Array, off: number, len: number): boolean {
    if (len > maxFrameLenAt(this.mtu, buf, off)) {
      this.stats.txDropped++;
      return false;
    }
    this.stats.txFrames++;
    this.stats.txBytes += len;
    return true;
  }

  /**
   * Zero-copy transmit (driver.ts): frames are built straight in the slab received copies are
   * carved from, so nothing is copied on the way out. The slab changes only between commits
   * (a full slab answers -1 while frames are reserved in it), so reserved memory never moves.
   */
  get txSpace(): TxSpace {
    return this.space;
  }

  txReserve(len: number): number {
    if (this.closedFlag || this.port === null || !(len > 0)) return -1;
    if (this.slabOff + len > this.slab.length) {
      if (this.resv.length > 0) return -1;
      this.newSlab(len);
    }
    const off = this.slabOff;
    this.resv.push(off, len);
    this.slabOff = (off + len + 7) & ~7;
    return off;
  }

  txCommit(): number {
    const r = this.resv;
    if (r.length === 0) return 0;
    this.resv = [];
    if (this.closedFlag || this.port === null) return 0;
    const port = this.port as FramePort;
    const slab = this.slab;
    if (!port.takesRuns()) {
      // One by one, each frame judged and sent in its turn (a port that reports drops sees them in order).
      let sent = 0;
      for (let i = 0; i < r.length; i += 2) {
        const off = r[i] as number;
        const len = r[i + 1] as number;
        if (!this.admit(slab, off, len)) continue;
        port.send(slab.subarray(off, off + len));
        sent++;
      }
      return sent;
    }
    const pairs: number[] = [];
    for (let i = 0; i < r.length; i += 2) {
      const off = r[i] as number;
      const len = r[i + 1] as number;
      if (this.admit(slab, off, len)) pairs.push(off, len);
    }
    if (pairs.length === 0) return 0;
    // With nothing on the way that looks at frames one by one, they travel as (offset, length) pairs.
    port.sendRun({ buf: slab, pairs, next: 0 });
    return pairs.length >> 1;
  }

  private newSlab(min: number): void {
    this.slab = new Uint8Array(Math.max(SLAB_BYTES, min));
    this.slabOff = 0;
    this.space = { buf: this.slab, view: new DataView(this.slab.buffer) };
  }

  /**
   * A copy the link owns, carved from a pooled slab (as Buffer's own pool does
   * for small buffers, but for jumbo frames too): no allocation per frame. A
   * slab is dropped once it is full and freed when its last frame is.
   */
  private copyOf(f: Uint8Array): Uint8Array {
    const len = f.length;
    if (len > SLAB_BYTES / 4) return Uint8Array.prototype.slice.call(f);
    if (this.slabOff + len > this.slab.length) this.newSlab(len);
    const copy = this.slab.subarray(this.slabOff, this.slabOff + len);
    copy.set(f);
    this.slabOff = (this.slabOff + len + 7) & ~7;
    return copy;
  }

  rxBurst(max: number): Uint8Array[] {
    const n = Math.max(0, Math.min(Math.floor(max), this.pending));
    if (n === 0) return [];
    if (this.head === 0 && n === this.rxq.length && this.pending === this.rxq.length && !this.rxq.some(isRun)) {
      // Everything queued, and all of it frames of their own (a run of one frame also counts one): hand the queue itself over.
      const all = this.rxq as Uint8Array[];
      this.rxq = [];
      this.pending = 0;
      return all;
    }
    const out: Uint8Array[] = [];
    while (out.length < n) {
      const a = this.rxq[this.head] as Arrival;
      if (isRun(a)) {
        while (out.length < n && a.next < a.pairs.length) {
          const off = a.pairs[a.next] as number;
          out.push(a.buf.subarray(off, off + (a.pairs[a.next + 1] as number)));
          a.next += 2;
        }
        if (a.next >= a.pairs.length) this.head++;
      } else {
        out.push(a);
        this.head++;
      }
    }
    this.pending -= n;
    this.compact();
    return out;
  }

  /** Descriptor receive (driver.ts RunReceive): the frames of the run at the head of the queue. */
  rxRun(max: number, desc: Uint32Array): number {
    const a = this.rxq[this.head];
    if (a === undefined || !isRun(a)) return 0;
    const n = Math.min(Math.floor(max), (a.pairs.length - a.next) >> 1, desc.length >> 1);
    if (n <= 0) return 0;
    for (let i = 0; i < 2 * n; i++) desc[i] = a.pairs[a.next + i] as number;
    a.next += 2 * n;
    if (a.next >= a.pairs.length) this.head++;
    this.pending -= n;
    this.rxRunBuffer = a.buf;
    this.compact();
    return n;
  }

  /** Drops what the head has passed. */
  private compact(): void {
    if (this.head === this.rxq.length) {
      this.rxq = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.rxq.length) {
      this.rxq = this.rxq.slice(this.head);
      this.head = 0;
    }
  }

  setRxHandler(fn: (() => void) | null): void {
    this.handler = fn;
  }

  close(): void {
    this.closedFlag = true;
    this.resv = [];
    this.rxq = [];
    this.head = 0;
    this.pending = 0;
    this.handler = null;
  }

  /**
   * Queues frames that arrived together and runs the rx handler once (called by the link). With
   * `given` the caller gives the array up (the link's batch): with nothing waiting it becomes the queue.
   */
  receive(frames: readonly Uint8Array[], given = false): void {
    if (this.closedFlag) return;
    if (given && this.rxq.length === 0 && frames.length <= this.rxRing) {
      this.rxq = frames as Uint8Array[];
      this.head = 0;
      this.pending = frames.length;
      this.stats.rxFrames += frames.length;
      for (const f of frames) this.stats.rxBytes += f.length;
      if (frames.length > 0) this.handler?.();
      return;
    }
    let added = 0;
    for (const f of frames) if (this.enqueue(f)) added++;
    if (added > 0) this.handler?.();
  }

  /** What arrived at one instant, frames and runs (called by the link); the rx handler runs once. */
  receiveArrivals(items: readonly Arrival[]): void {
    if (this.closedFlag) return;
    let added = 0;
    for (const a of items) {
      if (!isRun(a)) {
        if (this.enqueue(a)) added++;
        continue;
      }
      // A run takes what room the ring has; the rest is lost as on a full ring.
      const room = this.rxRing - this.pending;
      let n = (a.pairs.length - a.next) >> 1;
      if (n > room) {
        this.stats.rxDropped += n - Math.max(0, room);
        n = Math.max(0, room);
        a.pairs.length = a.next + 2 * n;
      }
      if (n === 0) continue;
      for (let i = a.next + 1; i < a.pairs.length; i += 2) this.stats.rxBytes += a.pairs[i] as number;
      this.stats.rxFrames += n;
      this.pending += n;
      this.rxq.push(a);
      added += n;
    }
    if (added > 0) this.handler?.();
  }

  private enqueue(f: Uint8Array): boolean {
    if (this.pending >= this.rxRing) {
      this.stats.rxDropped++;
      return false;
    }
    this.rxq.push(f);
    this.pending++;
    this.stats.rxFrames++;
    this.stats.rxBytes += f.length;
    return true;
  }
}

/** One direction: the sender's serializer, the fault injector and the arrival schedule. */
class LinkDirection implements FramePort {
  /** When the sender's port finishes serializing what it has been given (fractional ns). */
  private wireFreeAt = 0;
  /** Latest arrival time given to a FIFO frame; later FIFO frames never arrive before it. */
  private lastFifoAt = 0;
  /** Arrival instant → frames arriving then (one clock event per instant). */
  private readonly batches = new Map<number, Arrival[]>();
  private readonly events = new Set<TimerId>();
  private flushTimer: TimerId | null = null;
  private closed = false;

  constructor(
    private readonly clock: Clock,
    readonly direction: Direction,
    readonly injector: FaultInjector,
    private readonly nsPerByte: number,
    private readonly to: MemoryDriver,
    private readonly tap: FrameTap | null,
  ) {}

  send(frame: Uint8Array): void {
    if (this.closed) return;
    const now = this.clock.now();
    if (this.tap !== null && recordsAt(this.tap.where ?? 'sent', this.direction) === 'sent') this.tap.record(frame, now, this.direction);
    const start = Math.max(now, this.wireFreeAt);
    this.wireFreeAt = start + wireBytes(frame.length) * this.nsPerByte;
    const delay = this.injector.passThroughDelay();
    if (delay >= 0) {
      this.placeOne(frame, this.wireFreeAt + delay, true); // no fault configured: no emission list
      return;
    }
    this.place(this.injector.process(frame, now), this.wireFreeAt);
    this.armFlush();
  }

  takesRuns(): boolean {
    return !this.closed && this.tap === null && this.nsPerByte === 0 && this.injector.quiet;
  }

  sendRun(run: SlabRun): void {
    if (this.closed) return;
    const t = this.burstArrival(this.injector.passThroughDelay(run.pairs.length >> 1));
    const batch = this.batches.get(t);
    if (batch !== undefined) batch.push(run);
    else this.schedule(t, [run]);
  }

  /** The arrival instant of a burst sent now that takes no time on the wire and gets `delay`. */
  private burstArrival(delay: number): number {
    this.wireFreeAt = Math.max(this.clock.now(), this.wireFreeAt);
    const t = Math.max(Math.round(this.wireFreeAt + delay), this.lastFifoAt);
    this.lastFifoAt = t;
    return t;
  }

  close(): void {
    this.closed = true;
    for (const t of this.events) this.clock.cancel(t);
    this.events.clear();
    this.batches.clear();
    if (this.flushTimer !== null) this.clock.cancel(this.flushTimer);
    this.flushTimer = null;
  }

  private place(es: readonly Emission[], base: number): void {
    for (const e of es) this.placeOne(e.frame, base + e.extraNs, e.fifo);
  }

  /** Schedules one frame's arrival at `at` (ns), joining the frames arriving at the same instant. */
  private placeOne(frame: Uint8Array, at: number, fifo: boolean): void {
    let t = Math.round(at);
    if (fifo) {
      t = Math.max(t, this.lastFifoAt);
      this.lastFifoAt = t;
    }
    const batch = this.batches.get(t);
    if (batch !== undefined) {
      batch.push(frame);
      return;
    }
    this.schedule(t, [frame]);
  }

  /** A new arrival instant `t` with its first frames. */
  private schedule(t: number, frames: Arrival[]): void {
    this.batches.set(t, frames);
    const id = this.clock.schedule(t, () => {
      this.events.delete(id);
      this.arrive(t);
    });
    this.events.add(id);
  }

  private arrive(t: number): void {
    const frames = this.batches.get(t);
    this.batches.delete(t);
    if (frames === undefined || this.closed || this.to.closed) return;
    // Runs travel only when there is no tap (takesRuns), so a tap sees frames of their own.
    if (this.tap !== null && recordsAt(this.tap.where ?? 'sent', this.direction) === 'delivered') {
      for (const f of frames) if (!isRun(f)) this.tap.record(f, this.clock.now(), this.direction);
    }
    if (frames.every((f) => !isRun(f))) this.to.receive(frames as Uint8Array[], true);
    else this.to.receiveArrivals(frames);
  }

  /** Keeps one timer for the reorder hold timeout of the oldest held frame. */
  private armFlush(): void {
    if (this.flushTimer !== null || this.closed) return;
    const at = this.injector.nextDeadline();
    if (at === null) return;
    this.flushTimer = this.clock.schedule(at, () => {
      this.flushTimer = null;
      const now = this.clock.now();
      this.place(this.injector.releaseExpired(now), now);
      this.armFlush();
    });
  }
}

/** Two drivers joined by a simulated wire on `opts.clock`: serialization at the bandwidth, latency, and the faults of each direction. */
export function createMemoryLink(opts: MemoryLinkOptions): MemoryLink {
  const mtu = opts.mtu ?? 1500;
  const bw = opts.bandwidthBps ?? 100e9;
  if (!(bw >= 0 && Number.isFinite(bw))) throw new LinkConfigError(`bandwidthBps must be >= 0, not ${bw}`);
  const rxRing = opts.rxRing ?? 65536;
  const nsPerByte = bw === 0 ? 0 : 8e9 / bw;
  // One fork per direction: traffic in one direction never shifts the other's fault schedule.
  const root = new Rng(opts.seed ?? 0);
  const aToB = new FaultInjector('a->b', root.fork(), opts.faults?.aToB ?? {});
  const bToA = new FaultInjector('b->a', root.fork(), opts.faults?.bToA ?? {});
  const a = new MemoryDriver('mem-a', opts.macA ?? 0x02_00_00_00_00_0a, mtu, rxRing);
  const b = new MemoryDriver('mem-b', opts.macB ?? 0x02_00_00_00_00_0b, mtu, rxRing);
  const tap = opts.tap ?? null;
  const ab = new LinkDirection(opts.clock, 'a->b', aToB, nsPerByte, b, tap);
  const ba = new LinkDirection(opts.clock, 'b->a', bToA, nsPerByte, a, tap);
  a.attach(ab);
  b.attach(ba);
  return {
    a,
    b,
    faults: { aToB, bToA },
    close(): void {
      ab.close();
      ba.close();
      a.close();
      b.close();
    },
  };
}
