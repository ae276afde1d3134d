/**
 * A device's port: frames out and frames in over one NicDriver.
 *
 * Transmit: a role hands a transport packet and its path; the port builds the frame in place
 * (from the QP's frame template for that path) in one slab reused after every flush, or straight
 * in the driver's transmit memory when the driver has zero-copy transmit, and hands the burst to
 * the driver on flush, after sealing every frame's ICRC in one batched call.
 *
 * Receive: the driver hands runs of frames in one buffer; the port decodes them (transport headers
 * only), checks their ICRCs in one batched call, and dispatches each to its QP's responder
 * (requests) or completer (responses), as rxe_recv.c does: bad ICRC or headers and unknown QPs
 * are dropped and counted.
 *
 * Congestion control (stack/congestion/, for QPs that have it on): a CE-marked packet goes to the
 * QP's notification point, which may have the port send a CNP; a received CNP goes to the QP's
 * reaction point; every request frame built is reported to the QP's pacer and byte counter.
 *
 * A driver with transmit backpressure (nic-driver/driver.ts TxBackpressure: a full or paused
 * transmit queue, frames reported as they start on the wire) changes two things: the requesters
 * wait at the port's gate while the driver has no room (stack/tx-gate.ts), and request frames are
 * charged to their QP's pacer and byte counter when they start on the wire, not when built
 * (stack/wire-charges.ts). Without it, frames are charged as they are built.
 */
import { type NicDriver, type RunReceive, type TxSpace, hasRunReceive, hasTxBackpressure, hasZeroCopyTx } from '../nic-driver/driver';
import type { TransportSpec } from '../packets/build';
import { FrameTemplate } from '../packets/frame-template';
import { ICRC_LEN, decodeAt, type DecodedFrame, type RocePacket } from '../packets/decode';
import { LinkType } from '../packets/pcap';
import type { IcrcBatch } from '../packets/icrc';
import { OpFlag } from '../packets/opcodes';
import { WireError, WireErrorCode } from '../packets/errors';
import { Ecn, ecnAt } from '../packets/ecn';
import type { Counters } from './counters';
import type { Path } from './address';
import type { QueuePair } from './queue-pair';
import { QpState, QpType } from './qp-type-and-state';
import { responderReceive } from './responder';
import { completerReceive } from './completer';
import type { QpCongestion } from './congestion/qp-congestion';
import type { NotificationPoint } from './congestion/np';
import { TxGate } from './tx-gate';
import { WireCharges } from './wire-charges';

/** Frames a port queues before it hands them to the driver (a flush also ends every burst of work). */
const TX_BURST = 256;
/** Frames a port takes from the driver at a time. */
const RX_BURST = 64;

export interface PortConfig {
  driver: NicDriver;
  /** Seals the ICRCs of a transmit burst and computes those of a receive run. */
  icrc: IcrcBatch;
  /** Counters for frames that reach no QP (the device's own). */
  counters: Counters;
  /** The device's QPs by number, for receive dispatch. */
  qps: ReadonlyMap<number, QueuePair>;
  /** Asks for a QP's requester to run (the device's kick): the gate kicks waiting QPs when room opens. */
  kick?: (qp: QueuePair) => void;
}

export class Port {
  private readonly driver: NicDriver;
  private readonly icrc: IcrcBatch;
  private readonly counters: Counters;
  private readonly qps: ReadonlyMap<number, QueuePair>;
  private txQueue: Uint8Array[] = [];
  /**
   * Frames are built in place in one slab, reused after every flush (the driver copies on txBurst).
   * Allocated on first use: a driver with zero-copy transmit never needs it.
   */
  private txSlab = new Uint8Array(0);
  private txView = new DataView(this.txSlab.buffer);
  private txOff = 0;
  /**
   * Zero-copy transmit (NicDriver.txReserve: AF_XDP): frames are built straight in the driver's
   * transmit memory and committed by flush(); null when the driver copies (txBurst).
   */
  private readonly txZc: (NicDriver & { txSpace: TxSpace; txReserve(len: number): number; txCommit(): number }) | null;
  /** Frames reserved in the driver and not committed yet. */
  private txZcFrames = 0;
  /** (IP header, ICRC field) offset pairs of the queued frames, in the buffer they were built in. */
  private txIcrcDesc = new Uint32Array(2 * TX_BURST);
  private txIcrcCount = 0;
  private icrcOut = new Uint32Array(256);
  /** Receive-side ICRC descriptors (IP header, ICRC field offset pairs) and decoded packets of the burst in hand. */
  private rxIcrcDesc = new Uint32Array(256);
  private readonly rxPkts: (DecodedFrame | null)[] = new Array<DecodedFrame | null>(RX_BURST).fill(null);
  /** True while a run is being dispatched (a handler that receives again re-enters onRun). */
  private rxInHand = false;
  /** The driver when it has descriptor receive (driver.ts RunReceive), else null. */
  private readonly rxRunDriver: (NicDriver & RunReceive) | null;
  /** The run in hand: its frames' (offset, length) pairs, and where each frame starts in its buffer. */
  private readonly rxDesc = new Uint32Array(2 * RX_BURST);
  private readonly rxStarts = new Uint32Array(RX_BURST);
  /**
   * When set, a receive burst ends by calling this instead of flushing: what the frames produced
   * (ACKs, READ responses) stays queued for a flush the device makes soon (Device.pollCoalescing).
   */
  rxFlushHook: (() => void) | null = null;
  /** Runs after each run of received frames is dispatched (the device's ACK coalescer releases its ACKs), or null. */
  onRunEnd: (() => void) | null = null;
  /** The buffer of the last run, with a view over it (see bytesOf). */
  private rxBuf: ArrayBufferLike | null = null;
  private rxView: DataView | null = null;
  private rxBytes: Uint8Array | null = null;
  /** With a driver that has transmit backpressure (and a kick given): the charges waiting for the wire, and the requesters' gate; else null. */
  private readonly wire: WireCharges | null = null;
  readonly txGate: TxGate | null = null;

  constructor(cfg: PortConfig) {
    this.driver = cfg.driver;
    this.icrc = cfg.icrc;
    this.counters = cfg.counters;
    this.qps = cfg.qps;
    this.txZc = hasZeroCopyTx(cfg.driver) ? cfg.driver : null;
    this.rxRunDriver = hasRunReceive(cfg.driver) ? cfg.driver : null;
    cfg.driver.setRxHandler(() => this.onRx());
    const d = cfg.driver;
    if (hasTxBackpressure(d) && cfg.kick !== undefined) {
      const wire = new WireCharges();
      const gate = new TxGate(d, () => this.unflushedFrames, cfg.kick);
      this.wire = wire;
      this.txGate = gate;
      d.setTxEvents({ started: (n) => wire.started(n), opened: () => gate.opened() });
    }
  }

  /** Frames built and not yet handed to the driver. */
  get unflushedFrames(): number {
    return this.txZc !== null ? this.txZcFrames : this.txQueue.length;
  }

  /** What computes the ICRCs ('typescript' or 'native'). */
  get icrcName(): string {
    return this.icrc.name;
  }

  // ------------------------------------------------------------------ transmit

  /** Builds the frame of a transport packet of `qp` on `path` and queues it for the next flush. */
  transmit(qp: QueuePair, t: TransportSpec, path: Path): void {
    // Nearly every packet of a QP goes on its one path: remember the last template before the map.
    let tpl = qp.lastTxPath === path ? qp.lastTxTemplate : qp.txTemplates.get(path);
    if (tpl === undefined) {
      tpl = templateFor(path, qp.udpSport, qp.cc !== null);
      qp.txTemplates.set(path, tpl);
    }
    qp.lastTxPath = path;
    qp.lastTxTemplate = tpl;
    qp.counters.sent_pkts++;
    const cc = qp.cc;
    if (cc === null) {
      this.emit(tpl, t);
      return;
    }
    const wire = this.wire;
    if (wire === null) {
      const len = this.emit(tpl, t);
      if (len >= 0) cc.sent(t, len);
      return;
    }
    this.emitCharged(cc, wire, tpl, t);
  }

  /** Builds the frame of `t` and, for a request, records its charge for when it starts on the wire. */
  private emitCharged(cc: QpCongestion, wire: WireCharges, tpl: FrameTemplate, t: TransportSpec): void {
    // Its number among the frames handed to the driver: a flush inside emit hands over those before it.
    const seq = wire.handed + this.unflushedFrames;
    const len = this.emit(tpl, t);
    if (len >= 0 && cc.waitsForWire(t)) wire.add(cc, len, seq);
  }

  /**
   * Builds the frame of `t` behind the headers of `tpl` and queues it: in the driver's transmit
   * memory with zero-copy transmit, else in the slab. Returns its length, or -1 when the transmit
   * ring is full (counted as send_err).
   */
  private emit(tpl: FrameTemplate, t: TransportSpec): number {
    const len = tpl.frameLength(t);
    const zc = this.txZc;
    if (zc !== null) {
      // Built where the driver sends it from: no copy on the way out.
      let off = zc.txReserve(len);
      if (off < 0) {
        this.flush();
        off = zc.txReserve(len);
        if (off < 0) {
          this.counters.send_err++; // the transmit ring is full, as when txBurst takes fewer frames
          return -1;
        }
      }
      const space = zc.txSpace;
      const n = tpl.emitInto(t, space.buf, space.view, off, false);
      this.queueIcrc(off + tpl.ipOffset, off + n - ICRC_LEN);
      if (++this.txZcFrames >= TX_BURST) this.flush();
      return len;
    }
    if (this.txOff + len > this.txSlab.length) {
      this.flush();
      if (len > this.txSlab.length) this.growSlab(len);
    }
    const n = tpl.emitInto(t, this.txSlab, this.txView, this.txOff, false);
    this.queueIcrc(this.txOff + tpl.ipOffset, this.txOff + n - ICRC_LEN);
    this.txQueue.push(this.txSlab.subarray(this.txOff, this.txOff + n));
    this.txOff += n;
    if (this.txQueue.length >= TX_BURST) this.flush();
    return len;
  }

  private queueIcrc(ipOff: number, icrcOff: number): void {
    const k = 2 * this.txIcrcCount++;
    if (k + 2 > this.txIcrcDesc.length) {
      const bigger = new Uint32Array(this.txIcrcDesc.length * 2);
      bigger.set(this.txIcrcDesc);
      this.txIcrcDesc = bigger;
    }
    this.txIcrcDesc[k] = ipOff;
    this.txIcrcDesc[k + 1] = icrcOff;
  }

  private growSlab(min: number): void {
    this.txSlab = new Uint8Array(Math.max(min, this.txSlab.length * 2, 1 << 20));
    this.txView = new DataView(this.txSlab.buffer);
  }

  /**
   * Hands queued frames to the driver in one burst, their ICRCs sealed in one batched call first:
   * with zero-copy transmit a commit of the frames built in its memory, else txBurst (the driver
   * copies them, so the slab is free again).
   */
  flush(): void {
    const zc = this.txZc;
    const count = zc !== null ? this.txZcFrames : this.txQueue.length;
    if (count === 0) return;
    if (this.txIcrcCount > 0) {
      this.icrc.seal(zc !== null ? zc.txSpace.buf : this.txSlab, this.txIcrcDesc, this.txIcrcCount);
      this.txIcrcCount = 0;
    }
    const wire = this.wire;
    if (zc !== null) {
      this.txZcFrames = 0;
      // Every reserved frame is taken: what the link cannot carry (over the MTU) the driver counts in
      // txDropped, as txBurst does (and a driver with the on-wire report reports it in its turn).
      if (wire !== null) wire.took(count);
      zc.txCommit();
      return;
    }
    const q = this.txQueue;
    this.txQueue = [];
    this.txOff = 0;
    if (wire !== null) wire.took(q.length);
    const taken = this.driver.txBurst(q);
    if (taken < q.length) {
      this.counters.send_err += q.length - taken;
      if (wire !== null) {
        wire.handed -= q.length - taken;
        wire.notTakenFrom(wire.handed);
      }
    }
  }

  // ------------------------------------------------------------------ receive

  /**
   * Bursts from the driver, decoded and dispatched, then the frames the roles produced flushed. A
   * driver with the descriptor extension (driver.ts RunReceive) hands runs of (offset, length)
   * pairs; frames handed as views become runs too, one per stretch of frames that share a buffer
   * (drivers hand out views of one ring or slab), so both take the same path.
   */
  private onRx(): void {
    const runs = this.rxRunDriver;
    const desc = this.rxDesc;
    for (;;) {
      // What the last burst produced leaves before the next is read: while frames keep coming, its ACKs
      // must not wait until the ring is empty (rxe transmits each response as it makes it), unless
      // they are held for the device's coalescing flush (rxFlushHook).
      if (this.rxFlushHook === null) this.flush();
      if (runs !== null) {
        const n = runs.rxRun(RX_BURST, desc);
        if (n > 0) {
          this.onRun(runs.rxRunBuffer, n);
          continue;
        }
      }
      const frames = this.driver.rxBurst(RX_BURST);
      if (frames.length === 0) break;
      let i = 0;
      while (i < frames.length) {
        const buf = (frames[i] as Uint8Array).buffer;
        let k = 0;
        for (; i < frames.length && k < RX_BURST; i++, k++) {
          const f = frames[i] as Uint8Array;
          if (f.buffer !== buf) break;
          desc[2 * k] = f.byteOffset;
          desc[2 * k + 1] = f.byteLength;
        }
        this.onRun(this.bytesOf(buf), k);
      }
    }
    if (this.rxFlushHook !== null) this.rxFlushHook();
    else this.flush();
  }

  /** The whole of `buf` as bytes, with a DataView over it kept for decoding (one per buffer, not per frame). */
  private bytesOf(buf: ArrayBufferLike): Uint8Array {
    if (buf !== this.rxBuf) {
      this.rxBuf = buf;
      this.rxView = new DataView(buf);
      this.rxBytes = new Uint8Array(buf);
    }
    return this.rxBytes as Uint8Array;
  }

  /**
   * A run of received frames described in `rxDesc` as (offset, length) pairs in `bytes`: decoded
   * through one view of the buffer, ICRCs checked in one batched call, each dispatched with the
   * buffer and its start, so no view is made per frame.
   */
  private onRun(bytes: Uint8Array, n: number): void {
    const whole = this.bytesOf(bytes.buffer);
    const view = this.rxView as DataView;
    const desc = this.rxDesc;
    const reentered = this.rxInHand; // a handler re-entered: fresh arrays, the outer burst's stay intact
    const pkts = reentered ? new Array<DecodedFrame | null>(n).fill(null) : this.rxPkts;
    const starts = reentered ? new Uint32Array(n) : this.rxStarts;
    this.rxInHand = true;
    try {
      for (let i = 0; i < n; i++) {
        const start = bytes.byteOffset + (desc[2 * i] as number);
        starts[i] = start;
        pkts[i] = decodeAt(view, whole, start, start + (desc[2 * i + 1] as number), LinkType.Ethernet, LEAN_NO_ICRC);
      }
      this.checkIcrcs(whole, pkts, starts, n);
      for (let i = 0; i < n; i++) this.dispatch(pkts[i] as DecodedFrame, whole, starts[i] as number);
    } finally {
      // Hold no packet past its burst. The array keeps its length: setting it to 0 and back to n
      // frees and reallocates its store, 5 % of an in-memory ping-pong's time (--cpu-prof).
      for (let i = 0; i < n; i++) pkts[i] = null;
      this.rxInHand = reentered;
    }
    this.onRunEnd?.();
  }

  /** Checks the ICRCs of the first `n` of `pkts` (packet i starting at `starts[i]` of `whole`) with one batched call. */
  private checkIcrcs(whole: Uint8Array, pkts: readonly (DecodedFrame | null)[], starts: Uint32Array, n: number): void {
    if (this.rxIcrcDesc.length < 2 * n) this.rxIcrcDesc = new Uint32Array(4 * n);
    if (this.icrcOut.length < n) this.icrcOut = new Uint32Array(2 * n);
    const desc = this.rxIcrcDesc;
    let k = 0;
    for (let i = 0; i < n; i++) {
      const p = pkts[i] as DecodedFrame;
      if (!needsIcrc(p)) continue;
      desc[2 * k] = (starts[i] as number) + p.l3Off;
      desc[2 * k + 1] = (starts[i] as number) + p.icrcOff;
      k++;
    }
    if (k === 0) return;
    this.icrc.compute(whole, desc, k, this.icrcOut);
    k = 0;
    for (let i = 0; i < n; i++) {
      const p = pkts[i] as DecodedFrame;
      if (needsIcrc(p)) icrcChecked(p, this.icrcOut[k++] as number);
    }
  }

  /** Hands a decoded packet to its QP's responder or completer. `frame` holds the packet from index `base` on (see responderReceive). */
  private dispatch(p: DecodedFrame, frame: Uint8Array, base: number): void {
    if (!p.roce || p.version !== 2) return;
    // A packet whose only fault is its payload length (and whose ICRC is good) goes on to its QP: the
    // responder answers it with NAK invalid request, as rxe's check_length does (IBTA C9-29..31).
    const lengthOnly = p.error !== null && p.payloadRuleBroken && p.icrcOk === true;
    if (p.error !== null && !lengthOnly) {
      // rxe drops frames with a bad ICRC or bad headers silently (rxe_recv.c), counting them. A frame whose
      // ICRC fails counts as an ICRC error whatever else is wrong with it: the damage is what the ICRC caught.
      if (p.icrcOk === false || p.error.code === WireErrorCode.BadIcrc) this.counters.rcvd_icrc_err++;
      else this.counters.rcvd_malformed++;
      return;
    }
    const bth = p.bth;
    const info = p.info;
    if (bth === null || info === undefined) return;
    // rxe hdr_check drops a packet whose BTH transport version is not 0 (IBTA vol. 1 §9.2, TVer).
    if (bth.tver !== 0) {
      this.counters.rcvd_malformed++;
      return;
    }
    if ((info.flags & OpFlag.CNP) !== 0) {
      this.cnpReceived(bth.destQp);
      return;
    }
    const qp = this.qps.get(bth.destQp);
    if (qp === undefined || qp.state === QpState.RESET) {
      this.counters.rcvd_unknown_qp++;
      return;
    }
    // A connected QP takes packets only from its peer's address to its own (rxe_recv.c check_addr():
    // RC and UC compare the IP source and destination with the QP's address vector), so a frame that
    // carries the right QPN and PSN from any other host is dropped, not executed (ReDMArk's injection).
    if ((qp.type === QpType.RC || qp.type === QpType.UC) && qp.path !== null && !fromPeer(frame, base + p.l3Off, qp.path)) {
      this.counters.rcvd_wrong_address++;
      return;
    }
    qp.counters.rcvd_pkts++;
    // ECN CE on a packet of a QP with congestion control: the notification point's business.
    if (qp.cc !== null && ecnAt(frame, base + p.l3Off) === Ecn.CE) this.congestionExperienced(qp);
    if (qp.onCommEst !== null) {
      const commEst = qp.onCommEst;
      qp.onCommEst = null;
      commEst();
    }
    if ((info.flags & OpFlag.REQ) !== 0) responderReceive(qp, p, frame, base);
    else if ((info.flags & OpFlag.RESP) !== 0) completerReceive(qp, p, frame, base);
  }

  // ------------------------------------------------------------------ congestion control

  /**
   * A CE-marked packet for `qp` (congestion control on): counted, and answered with a CNP to the
   * remote QP when the notification point says one is due (RC and UC only; stack/congestion/np.ts).
   */
  private congestionExperienced(qp: QueuePair): void {
    qp.counters.np_ecn_marked_roce_packets++;
    const np = qp.cc?.np ?? null;
    if (np === null || !np.due()) return;
    this.sendCnp(qp, np);
  }

  /**
   * A CNP from `qp` to its remote QP, built by `np` (its headers and fields, np.ts), queued now and
   * counted as `np_cnp_sent`. False when the QP has no path yet or the transmit ring is full.
   */
  sendCnp(qp: QueuePair, np: NotificationPoint): boolean {
    const path = qp.path;
    if (path === null) return false;
    if (this.emit(np.template(path), np.packet(qp.attr.destQpNum)) < 0) return false;
    qp.counters.np_cnp_sent++;
    return true;
  }

  /**
   * A CNP for our QP `qpn`: its reaction point cuts the rate. Ignored (and counted) without one, for
   * no such QP, and for a QP that does not send (not in RTS or SQD).
   */
  private cnpReceived(qpn: number): void {
    const qp = this.qps.get(qpn);
    const sending = qp !== undefined && (qp.state === QpState.RTS || qp.state === QpState.SQD);
    const rp = sending ? (qp.cc?.rp ?? null) : null;
    if (rp === null) {
      (qp?.counters ?? this.counters).rp_cnp_ignored++;
      return;
    }
    (qp as QueuePair).counters.rp_cnp_handled++;
    rp.onCnp();
  }
}

/**
 * The Ethernet, IP and UDP headers of a path, built once (the UDP source port is the QP's). With
 * congestion control on, the QP's packets are ECN-capable: ECT(0) whatever the path's ECN bits.
 */
function templateFor(path: Path, udpSport: number, ect: boolean): FrameTemplate {
  const tc = ect ? (path.trafficClass & ~3) | Ecn.ECT0 : path.trafficClass;
  const ip =
    path.ipVersion === 4
      ? { version: 4 as const, src: bytesToV4(path.srcIp), dst: bytesToV4(path.dstIp), dscp: tc >>> 2, ecn: tc & 3, ttl: path.hopLimit, dontFragment: true }
      : { version: 6 as const, src: path.srcIp, dst: path.dstIp, trafficClass: tc, flowLabel: path.flowLabel, hopLimit: path.hopLimit };
  return new FrameTemplate({ eth: { src: path.srcMac, dst: path.dstMac, vlan: path.vlan }, ip, udp: { srcPort: udpSport } });
}

/** A decoded RoCE v2 packet whose ICRC is there to check. */
function needsIcrc(p: DecodedFrame): p is RocePacket {
  return p.roce && p.version === 2 && p.icrcOff >= 0 && p.icrc !== null;
}

function icrcChecked(p: RocePacket, expected: number): void {
  p.icrcExpected = expected;
  p.icrcOk = expected === p.icrc;
  if (!p.icrcOk && p.error === null) p.error = new WireError(WireErrorCode.BadIcrc, p.icrcOff, 'bad ICRC (checked in a receive burst)');
}

/** The stack reads only the transport headers (decode.ts `lean`); the ICRCs are checked per run (checkIcrcs). */
const LEAN_NO_ICRC = Object.freeze({ verifyIcrc: false, lean: true });

function bytesToV4(b: Uint8Array): number {
  return (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
}

/**
 * Whether the IP packet at `l3` of `frame` comes from `path`'s peer to `path`'s own address, compared
 * as GIDs (what the GRH carries, IBTA annex A17.4.5.1): an IPv4 address is the GID ::ffff:a.b.c.d, so
 * an IPv6 packet between IPv4-mapped addresses matches an IPv4 path (a RoCE v1 GRH becomes one).
 */
function fromPeer(frame: Uint8Array, l3: number, path: Path): boolean {
  const v4 = (frame[l3] ?? 0) >>> 4 === 4;
  if (v4) return path.ipVersion === 4 && sameBytes(frame, l3 + 12, path.dstIp) && sameBytes(frame, l3 + 16, path.srcIp);
  if (path.ipVersion === 6) return sameBytes(frame, l3 + 8, path.dstIp) && sameBytes(frame, l3 + 24, path.srcIp);
  return mappedV4(frame, l3 + 8) && sameBytes(frame, l3 + 20, path.dstIp) && mappedV4(frame, l3 + 24) && sameBytes(frame, l3 + 36, path.srcIp);
}

function sameBytes(frame: Uint8Array, at: number, want: Uint8Array): boolean {
  for (let i = 0; i < want.length; i++) if (frame[at + i] !== want[i]) return false;
  return true;
}

/** Whether the 16 bytes at `at` are an IPv4-mapped address (::ffff:0:0/96). */
function mappedV4(frame: Uint8Array, at: number): boolean {
  for (let i = 0; i < 10; i++) if (frame[at + i] !== 0) return false;
  return frame[at + 10] === 0xff && frame[at + 11] === 0xff;
}
