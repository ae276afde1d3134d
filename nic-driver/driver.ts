/**
 * The frame I/O interface every transport in nic-driver/ implements: the
 * in-memory link, AF_XDP, AF_PACKET and pcap replay. The stack sees only this.
 * Frames are whole Ethernet frames without FCS. I/O is batched: one call per
 * burst, never one per packet.
 */

/** A driver's frame and byte counts each way, and its drops. */
export interface DriverStats {
  txFrames: number;
  txBytes: number;
  rxFrames: number;
  rxBytes: number;
  /** Frames the driver could not queue for transmission (ring full). */
  txDropped: number;
  /** Frames lost on receive (ring overflow). */
  rxDropped: number;
}

/** Frame I/O as the engine sees it: whole Ethernet frames without FCS, sent and received in bursts. */
export interface NicDriver {
  readonly name: string;
  /** The interface's MAC address as a 48-bit integer. */
  readonly mac: number;
  /** IP MTU of the link (1500, 9000, ...). */
  readonly mtu: number;
  readonly stats: DriverStats;
  /**
   * Queues `frames` for transmission. The driver copies what it needs before
   * returning, so the caller may reuse the buffers. Returns how many were taken.
   */
  txBurst(frames: readonly Uint8Array[]): number;
  /**
   * Takes up to `max` received frames. A returned frame stays valid until the
   * next `rxBurst` call on this driver.
   */
  rxBurst(max: number): Uint8Array[];
  /** `fn` runs when frames become available (once per burst of arrivals, not per frame). */
  setRxHandler(fn: (() => void) | null): void;
  /**
   * Optional: runs the receive handler now, synchronously, when frames are waiting, and says
   * whether it ran. A caller that spins on it (busy-poll) sees a frame as soon as it lands, without
   * a turn of the event loop (and the allocations a turn costs) per look; a transport timer that
   * comes due takes what already arrived before it acts (the host drivers have it; the memory link,
   * which delivers each arrival as it happens, has not).
   */
  pollRx?(): boolean;
  close(): void;
  /**
   * Optional zero-copy transmit (AF_XDP and the memory link have it; AF_PACKET does not): the driver
   * lends the caller room in its own transmit memory, the caller builds each frame there, and
   * `txCommit` hands the frames to the hardware with nothing copied in JS. All three members are
   * present or none is. Use:
   *
   *     const off = d.txReserve(len);          // -1: no room now (txCommit, then try once more)
   *     build the frame in d.txSpace.buf[off, off + len)   (txSpace.view covers the same memory)
   *     ... more frames ...
   *     d.txCommit();                          // queues every reserved frame, in order
   *
   * Reserved memory stays the caller's until `txCommit`; the driver never moves it, so a frame may
   * be finished (its ICRC sealed, say) at any time before the commit. A `txBurst` commits what is
   * reserved first, so frames leave in the order they were reserved or passed.
   */
  readonly txSpace?: TxSpace;
  /**
   * Reserves room for one frame of exactly `len` bytes in `txSpace.buf` and returns its byte offset,
   * or -1 when the driver has no room now: after a `txCommit` (which also collects completions) a
   * second -1 means the transmit ring is full, as when `txBurst` takes fewer frames than given.
   * A length the link cannot carry is not refused here: `txCommit` drops that frame (`txDropped`).
   */
  txReserve?(len: number): number;
  /**
   * Queues every frame reserved since the last commit, in reservation order, and returns how many
   * were sent (the rest - frames longer than the MTU allows - are counted in `txDropped`).
   */
  txCommit?(): number;
}

/**
 * Optional receive extension (the memory link and AF_XDP have it): frames described by offset and length in
 * one buffer instead of a `Uint8Array` view each (a view costs about 50 ns, a good part of a small
 * packet's handling). `rxRun(max, desc)` takes up to `max` received frames that lie in one buffer,
 * writes their (offset, length) pairs into `desc` and returns how many, 0 when the frames waiting
 * (if any) are not in that form, which `rxBurst` then returns as views; `rxRunBuffer` is the
 * buffer of the last run, valid until the next `rxRun` or `rxBurst`.
 */
export interface RunReceive {
  rxRun(max: number, desc: Uint32Array): number;
  readonly rxRunBuffer: Uint8Array;
}

/** True when `d` has the descriptor receive extension (and no `rxBurst` replaced on the instance). */
export function hasRunReceive(d: NicDriver): d is NicDriver & RunReceive {
  const x = d as NicDriver & Partial<RunReceive>;
  return typeof x.rxRun === 'function' && !Object.hasOwn(d, 'rxBurst');
}

/**
 * Which clock stamped a received frame (`RxTimestamps.rxTimeSource`), from the TP_STATUS_TS_* bits
 * of its AF_PACKET ring header:
 *   - `packet-socket`: no bit. The packet socket read CLOCK_REALTIME as it copied the frame into
 *     the ring, in the kernel's receive path (softirq), before any user-space wake-up.
 *   - `software`: TP_STATUS_TS_SOFTWARE. The frame's own software stamp (CLOCK_REALTIME), taken
 *     earlier, where the kernel took the frame from the device; present while some socket of the
 *     host asked for receive timestamps (SO_TIMESTAMP*), which makes the kernel stamp every frame.
 *   - `sys-hardware`: TP_STATUS_TS_SYS_HARDWARE: a NIC's stamp moved onto CLOCK_REALTIME;
 *     deprecated, and today's kernels never set it (linux/if_packet.h).
 *   - `raw-hardware`: TP_STATUS_TS_RAW_HARDWARE. The NIC's stamp, on the NIC's own clock (its PHC),
 *     when the driver was opened with hardware stamps asked for and the NIC made one.
 */
export type RxTimeSource = 'packet-socket' | 'software' | 'sys-hardware' | 'raw-hardware';

/**
 * Optional receive timestamps (the AF_PACKET driver has them; the memory link, AF_XDP and pcap
 * replay have not, and a caller then takes a frame's time when it takes the frame): the time the
 * kernel stamped each frame of the last `rxBurst` as it arrived, not when user space polled the
 * ring, so a frame that waited in the ring for a busy event loop keeps its arrival time.
 *
 *   - `rxTimeNs(i)`: frame `i` (0-based, in the order the last `rxBurst` returned them) on the
 *     host's monotonic clock (CLOCK_MONOTONIC: `process.hrtime`'s), ns, as a number: exact while
 *     the host has been up less than 2^53 ns (104 days), within a few ns after that. `RealClock`'s
 *     `fromMonotonicNs` turns it into the stack's own clock (base/clock.ts). NaN when the frame has
 *     no stamp on that clock: `i` outside the last burst, stamps turned off, or a NIC's raw
 *     hardware stamp (on the NIC's clock, which this does not convert).
 *   - `rxTimeSource(i)`: which clock stamped it (`RxTimeSource`); null when NaN is for want of a stamp.
 *
 * Valid until the next `rxBurst`, as the frames are. Both members are present or neither is.
 */
export interface RxTimestamps {
  rxTimeNs(i: number): number;
  rxTimeSource(i: number): RxTimeSource | null;
}

/**
 * True when `d` has receive timestamps. A driver whose `rxBurst` was replaced on the instance (a tap
 * that may drop or add frames) counts as not having them: its frames' indices are no longer the
 * driver's.
 */
export function hasRxTimestamps(d: NicDriver): d is NicDriver & RxTimestamps {
  const x = d as NicDriver & Partial<RxTimestamps>;
  return typeof x.rxTimeNs === 'function' && typeof x.rxTimeSource === 'function' && !Object.hasOwn(d, 'rxBurst');
}

/**
 * Optional transmit backpressure and on-wire report (the star switch's host uplinks have it,
 * nic-driver/star-switch.ts; the memory link and the host drivers have not, and the engine then
 * sends and charges as it builds). A NIC's transmit queue is a small ring, and a link paused by
 * PFC (IEEE 802.1Qbb) stops taking frames from it; with this extension the engine sees both:
 *
 *   - `txRoom()` says how many more frames the transmit queue takes now before it is full: 0
 *     while the link is paused. The engine's requesters send no new request packets while it is
 *     0 (responses, ACKs and CNPs still go to `txBurst`/`txCommit`, which take every frame as
 *     before: the ring bounds what the requesters add, not what the responder owes).
 *   - `setTxEvents(h)`: `h.started(n)` runs when the next `n` frames the driver took (in the order
 *     taken, by `txBurst` or `txCommit`) start on the wire; a frame it drops instead (longer than
 *     the MTU allows) is reported in its turn too. `h.opened()` runs when room may have opened (a
 *     frame left the queue, or the link resumed); the handler asks `txRoom()`. Either may run
 *     inside a `txBurst` or `txCommit` call (a frame given to an idle link starts at once).
 *
 * Both members are present or neither is. This is how HPCC's ns-3 NIC model works: a paused port
 * picks no QP (qbb-net-device.cc DequeueAndTransmit, `GetNextQindex(m_paused)`), and a QP's next
 * send time is set when its packet is dequeued for the wire (rdma-hw.cc `PktSent`).
 */
export interface TxBackpressure {
  txRoom(): number;
  setTxEvents(h: TxEvents | null): void;
}

/** What a driver with `TxBackpressure` reports. */
export interface TxEvents {
  /** The next `n` frames taken (in order) started on the wire (or were dropped, in their turn). */
  started(n: number): void;
  /** Room may have opened in the transmit queue. */
  opened(): void;
}

/**
 * True when `d` has the transmit backpressure extension. As for zero-copy transmit, a driver whose
 * `txBurst` was replaced on the instance (a tap) counts as not having it: the tap may drop or add
 * frames, and the frames reported would no longer be the frames the engine handed over.
 */
export function hasTxBackpressure(d: NicDriver): d is NicDriver & TxBackpressure {
  const x = d as NicDriver & Partial<TxBackpressure>;
  return typeof x.txRoom === 'function' && typeof x.setTxEvents === 'function' && !Object.hasOwn(d, 'txBurst');
}

/** Transmit memory a zero-copy driver lends (see `NicDriver.txReserve`). */
export interface TxSpace {
  readonly buf: Uint8Array;
  /** A DataView over the same bytes as `buf` (offsets are the same). */
  readonly view: DataView;
}

/**
 * True when `d` has the zero-copy transmit extension. A driver object whose `txBurst` was replaced
 * on the instance (a tap interposed to watch or alter what is sent, as tests do) counts as not
 * having it, so every frame still goes through that `txBurst`.
 */
export function hasZeroCopyTx(d: NicDriver): d is NicDriver & Required<Pick<NicDriver, 'txSpace' | 'txReserve' | 'txCommit'>> {
  return d.txSpace !== undefined && typeof d.txReserve === 'function' && typeof d.txCommit === 'function' && !Object.hasOwn(d, 'txBurst');
}

export function emptyStats(): DriverStats {
  return { txFrames: 0, txBytes: 0, rxFrames: 0, rxBytes: 0, txDropped: 0, rxDropped: 0 };
}

const ETH_HEADER = 14;
const VLAN_TAG = 4;

/** Largest frame an IP MTU allows: MTU + Ethernet header (+ 802.1Q / 802.1ad tag when the frame has one). */
export function maxFrameLen(mtu: number, f: Uint8Array): number {
  return maxFrameLenAt(mtu, f, 0);
}

/** maxFrameLen for a frame that starts at `off` of `buf`. */
export function maxFrameLenAt(mtu: number, buf: Uint8Array, off: number): number {
  const type = off + ETH_HEADER <= buf.length ? (buf[off + 12]! << 8) | buf[off + 13]! : 0;
  return mtu + ETH_HEADER + (type === 0x8100 || type === 0x88a8 ? VLAN_TAG : 0);
}
