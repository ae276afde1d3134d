/**
 * The driver wrapper that makes this stack the DUT's instrumented peer: every RoCE frame it sends
 * and receives is recorded with the device clock's time, and the scenario's events are applied
 * to those frames by two fault injectors (nic-driver/faults.ts rules keyed by QP, opcode, PSN and
 * round): `tx` on our frames (skip, duplicate, ECN, withheld or delayed ACK, dropped READ
 * response) before they are recorded, `rx` on the DUT's frames (drop) after they are recorded, so
 * a record says what was on the wire and what became of it. A frame a `delay` rule holds is
 * handed to the link, and recorded, when its delay has run out on the device clock.
 *
 * Where the timestamps are taken: at the driver's transmit call (before the frame's serialization
 * and the link) and receive call (when the stack polls the ring). On the in-memory link's virtual
 * clock those are the link's own instants, exact. On a live driver with kernel receive timestamps
 * (AF_PACKET: the packet socket's stamp as the frame reached its ring, nic-driver/driver.ts
 * RxTimestamps) a received frame takes that stamp, given `fromMonotonicNs` to put it on the device
 * clock; otherwise its time is late by the polling delay, which the figures state.
 */
import type { Clock } from '../../base/clock';
import { Rng } from '../../base/rng';
import { decodeFrame } from '../../packets/decode';
import { type NicDriver, hasRxTimestamps } from '../../nic-driver/driver';
import { type FaultConfig, FaultInjector } from '../../nic-driver/faults';
import { PassThroughDriver } from '../../nic-driver/pass-through-driver';

/** One RoCE frame seen at this stack's driver. */
export interface FrameRecord {
  /** Device clock, ns. */
  timeNs: number;
  /** tx: sent by this stack; rx: sent by the DUT. */
  dir: 'tx' | 'rx';
  opcode: number;
  /** The frame's bytes (Ethernet header to ICRC, no FCS). */
  len: number;
  destQp: number;
  psn: number;
  ackReq: boolean;
  /** The AETH syndrome, or -1 without an AETH. */
  syndrome: number;
  /** The RETH (RDMA WRITE and READ requests): where and how much, or null. */
  reth: { va: bigint; length: number } | null;
  /** An atomic request's AtomicETH: the address, the add (or swap) value and the compare value; absent on other frames. */
  atomic?: { va: bigint; swapAdd: bigint; compare: bigint };
  /** An ATOMIC ACKNOWLEDGE's original remote data (the word before the atomic); absent on other frames. */
  origData?: bigint;
  /** What the scenario's events did: `dropped` frames never reached the wire (tx) or the stack (rx). */
  fate: 'delivered' | 'dropped';
  /** How long an event held the frame before it left (a `delay-ack`), ns; absent when none did. */
  heldNs?: number;
}

/** The record of `frame` at `timeNs`, or null for a frame that is not RoCE. */
export function frameRecord(frame: Uint8Array, timeNs: number, dir: 'tx' | 'rx', fate: FrameRecord['fate']): FrameRecord | null {
  const d = decodeFrame(frame, undefined, { verifyIcrc: false });
  if (!d.roce || d.bth === null) return null;
  return {
    timeNs,
    dir,
    opcode: d.bth.opcode,
    len: frame.length,
    destQp: d.bth.destQp,
    psn: d.bth.psn,
    ackReq: d.bth.ackReq,
    syndrome: d.aeth?.syndrome ?? -1,
    reth: d.reth === null ? null : { va: d.reth.va, length: d.reth.dmaLength },
    ...(d.atomicEth === null ? {} : { atomic: { va: d.atomicEth.va, swapAdd: d.atomicEth.swapAdd, compare: d.atomicEth.compare } }),
    ...(d.atomicAckEth === null ? {} : { origData: d.atomicAckEth.origData }),
    fate,
  };
}

export class ProbeDriver extends PassThroughDriver {
  readonly records: FrameRecord[] = [];
  /** Frames a `delay` rule holds that have not left yet. */
  holding = 0;
  private rxInj: FaultInjector | null = null;
  private txInj: FaultInjector | null = null;
  /** Called after each frame this stack sent is recorded (the runner reacts to its own answers: RNR NAKs). */
  onSent: ((r: FrameRecord) => void) | null = null;
  /** Called after each frame of the DUT is recorded, before the stack takes it (the runner answers a dropped request itself: `seq-nak`). */
  onReceived: ((r: FrameRecord) => void) | null = null;
  /**
   * Called with every frame at the driver, as it was there (`roce probe --pcap`): ours after the
   * events (a frame they kept off the wire comes with `dropped`), the DUT's before them (one they
   * dropped had arrived: it was on the wire).
   */
  onWire: ((frame: Uint8Array, timeNs: number, dir: 'tx' | 'rx', fate: FrameRecord['fate'], heldNs?: number) => void) | null = null;

  /** Received frames recorded at the kernel's receive stamp, and at the poll (no stamp). */
  rxStamped = 0;
  rxPolled = 0;
  /** The longest transmit call to the inner driver, ns: how late a sent frame may leave after its recorded time. */
  txCallMaxNs = 0;

  /**
   * `fromMonotonicNs` puts a kernel receive stamp (CLOCK_MONOTONIC ns) on `clock` (RealClock's);
   * without it, or from a driver without stamps, a received frame takes the time it was polled.
   */
  constructor(
    inner: NicDriver,
    private readonly clock: Clock,
    private readonly fromMonotonicNs: ((ns: number) => number) | null = null,
  ) {
    super(inner);
  }

  private txInner(frames: Uint8Array[]): void {
    const t0 = this.clock.now();
    this.inner.txBurst(frames);
    this.txCallMaxNs = Math.max(this.txCallMaxNs, this.clock.now() - t0);
  }

  /**
   * Sets the events' rules once the QPs are connected (their numbers and PSNs known): they drop,
   * duplicate, mark, and delay our frames (a delayed frame leaves when the clock reaches it).
   */
  arm(tx: FaultConfig, rx: FaultConfig, seed: number): void {
    this.txInj = new FaultInjector('a->b', new Rng(seed), tx);
    this.rxInj = new FaultInjector('b->a', new Rng(seed ^ 0x5bd1e995), rx);
  }

  override txBurst(frames: readonly Uint8Array[]): number {
    const now = this.clock.now();
    const inj = this.txInj;
    const out: Uint8Array[] = [];
    for (const f of frames) {
      const copy = f.slice();
      const emitted = inj === null ? [{ frame: copy, extraNs: 0, fifo: true }] : inj.process(copy, now);
      if (emitted.length === 0) {
        this.keep(frameRecord(copy, now, 'tx', 'dropped'));
        this.onWire?.(copy, now, 'tx', 'dropped');
      }
      for (const e of emitted) {
        // Out of FIFO order: a `delay` rule's frame (ours have no other delay), sent when it runs out.
        if (!e.fifo && e.extraNs > 0) {
          this.holding++;
          this.clock.schedule(now + e.extraNs, () => {
            this.holding--;
            this.txInner([this.sent(e.frame, this.clock.now(), e.extraNs)]);
          });
        } else out.push(this.sent(e.frame, now));
      }
    }
    if (out.length > 0) this.txInner(out);
    return frames.length;
  }

  private sent(frame: Uint8Array, now: number, heldNs = 0): Uint8Array {
    const r = frameRecord(frame, now, 'tx', 'delivered');
    if (r !== null && heldNs > 0) r.heldNs = heldNs;
    this.onWire?.(frame, now, 'tx', 'delivered', heldNs);
    this.keep(r);
    if (r !== null) this.onSent?.(r);
    return frame;
  }

  override rxBurst(max: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    // A burst dropped whole must not look like an empty ring to a caller that drains until it gets nothing.
    for (;;) {
      const frames = this.inner.rxBurst(max);
      if (frames.length === 0) return out;
      const now = this.clock.now();
      // The stamps last until the inner driver's next rxBurst: read them in this pass.
      const stamps = this.fromMonotonicNs !== null && hasRxTimestamps(this.inner) ? this.inner : null;
      for (let i = 0; i < frames.length; i++) {
        const copy = (frames[i] as Uint8Array).slice();
        const k = stamps === null ? Number.NaN : stamps.rxTimeNs(i);
        // A stamp is never later than the poll; one on another clock (a NIC's hardware clock) is NaN.
        const at = Number.isFinite(k) && this.fromMonotonicNs !== null ? Math.min(now, this.fromMonotonicNs(k)) : now;
        if (at === now && !Number.isFinite(k)) this.rxPolled++;
        else this.rxStamped++;
        const delivered = this.rxInj === null ? [copy] : this.rxInj.process(copy, at).map((e) => e.frame);
        const fate = delivered.length === 0 ? 'dropped' : 'delivered';
        const r = frameRecord(copy, at, 'rx', fate);
        this.keep(r);
        this.onWire?.(copy, at, 'rx', fate);
        if (r !== null) this.onReceived?.(r);
        out.push(...delivered);
      }
      if (out.length > 0) return out;
    }
  }

  /** Records stay in time order: a received frame's kernel stamp may be earlier than frames we sent before we polled it. */
  private keep(r: FrameRecord | null): void {
    if (r === null) return;
    const recs = this.records;
    let i = recs.length;
    while (i > 0 && (recs[i - 1] as FrameRecord).timeNs > r.timeNs) i--;
    if (i === recs.length) recs.push(r);
    else recs.splice(i, 0, r);
  }
}
