/**
 * A RoCE v2 device over one NicDriver: the GID table, the memory-region key
 * table, QP numbers, frame building on transmit and classification and
 * dispatch on receive (rxe_recv.c: check the ICRC and headers, then hand
 * requests to the responder and responses to the completer).
 *
 * All work is driven by three entry points - frames arriving, work posted,
 * timers - and each ends by flushing the frames it produced to the driver in
 * one burst.
 */
import { type NicDriver, type RunReceive, type TxSpace, hasRunReceive, hasZeroCopyTx } from '../nic-driver/driver';
import type { Clock } from '../base/clock';
import { Rng } from '../base/rng';
import { QpState, QpType, type Mtu, mtuFromBytes } from './types';
import { VerbsError, VerbsErrorCode, invalid } from './errors';
import { MrTable, ProtectionDomain, type MemoryRegion } from './memory-region';
import { CompletionQueue } from './completion-queue';
import { SharedReceiveQueue } from './shared-receive-queue';
import { QueuePair, type QpInitAttr } from './queue-pair';
import type { AhAttr } from './qp-attributes';
import { AddressHandle, type Path, isIpv4MappedGid, rxeUdpSourcePort } from './address';
import { type Counters, addCounters, newCounters } from './counters';
import type { Sge } from './types';
import type { TraceEvent, TraceListener } from './trace';
import { gatherFrom, resolveSges, segsLength } from './dma';
import { MrFault } from './memory-region';
import { responderReceive } from './responder';
import { completerReceive } from './completer';
import type { TransportSpec } from '../packets/build';
import { FrameTemplate } from '../packets/frame-template';
import { ICRC_LEN, decodeAt, type DecodedFrame, type RocePacket } from '../packets/decode';
import { LinkType } from '../packets/pcap';
import { icrcDescBurst, icrcSealBurst, nativeAvailable, nativeLoadError } from '../nic-driver/native-binding';
import { OpFlag } from '../packets/opcodes';
import { ipv6FromString, ipv6ToString } from '../packets/bytes';
import { WireError, WireErrorCode } from '../packets/errors';

export interface DeviceConfig {
  driver: NicDriver;
  clock: Clock;
  /** IPv4 addresses of the interface (each becomes an IPv4-mapped RoCE v2 GID). */
  ipv4?: string[];
  /** IPv6 addresses of the interface (each becomes a GID). */
  ipv6?: string[];
  /** Static neighbour table: IP address text -> MAC. */
  neighbors?: Record<string, number>;
  name?: string;
  /** Seed for start PSNs and other choices (default 1). */
  seed?: number;
  /** Outstanding PSNs per QP (rxe: RXE_MAX_UNACKED_PSNS = 128). */
  maxUnackedPsns?: number;
  /** Packets between AckReq bits inside a long message (rxe: RXE_MAX_PKT_PER_ACK = 64). */
  maxPktsPerAck?: number;
  /** Packets a requester sends before yielding to other work. */
  burst?: number;
  /**
   * VLAN tag for every frame, or none. The priority (PCP, which PFC pauses by) is `pcp` when given,
   * else the class selector of each path's traffic class (DSCP >> 3, i.e. traffic class >> 5), the
   * usual DSCP-to-priority mapping of RoCE deployments.
   */
  vlan?: { vid: number; pcp?: number } | null;
  /**
   * Where ICRCs are computed: 'native' batches a whole burst into one call to
   * the native shim (15-40x faster), 'js' computes them one by one in
   * TypeScript; 'auto' (default) uses native when the addon is built.
   */
  icrc?: 'auto' | 'js' | 'native';
}

export interface DeviceTuning {
  maxUnackedPsns: number;
  maxPktsPerAck: number;
  burst: number;
}

/** Frames a device queues before it hands them to the driver (a flush also ends every burst of work). */
const TX_BURST = 256;
/** Frames a device takes from the driver at a time. */
const RX_BURST = 64;

/** Link-layer and IP overhead of a RoCE v2 packet over IPv4 or IPv6: Ethernet 14 (+4 VLAN), IP, UDP 8, BTH 12, ICRC 4 ... the IB MTU is what fits. */
const ROCE_OVERHEAD_V6 = 40 + 8 + 12 + 28 + 4;

export class Device {
  readonly name: string;
  readonly driver: NicDriver;
  readonly clock: Clock;
  readonly mrs = new MrTable();
  readonly rng: Rng;
  readonly config: DeviceTuning;
  readonly gids: Uint8Array[] = [];
  readonly neighbors = new Map<string, number>();
  /** Device-wide counters for frames that reach no QP. */
  readonly counters: Counters = newCounters();
  private readonly qps = new Map<number, QueuePair>();
  private nextQpn = 0x11; // rxe's first user QP number
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
  /** With batched ICRC: (IP header, ICRC field) offset pairs of the queued frames, in the buffer they were built in. */
  private txIcrcDesc = new Uint32Array(2 * TX_BURST);
  private txIcrcCount = 0;
  private icrcOut = new Uint32Array(256);
  /** Receive-side ICRC descriptors (IP header, ICRC field offset pairs) and decoded packets of the burst in hand. */
  private rxIcrcDesc = new Uint32Array(256);
  private readonly rxPkts: DecodedFrame[] = [];
  /** The driver when it has descriptor receive (driver.ts RunReceive), else null. */
  private readonly rxRunDriver: (NicDriver & RunReceive) | null;
  /** The run in hand: its frames' (offset, length) pairs, and where each frame starts in its buffer. */
  private readonly rxDesc = new Uint32Array(2 * RX_BURST);
  private readonly rxStarts = new Uint32Array(RX_BURST);
  /** The buffer of the last run, with a view over it (see bytesOf). */
  private rxBuf: ArrayBufferLike | null = null;
  private rxView: DataView | null = null;
  private rxBytes: Uint8Array | null = null;
  /** True when ICRCs go through the native shim in bursts. */
  readonly batchedIcrc: boolean;
  private kicked = new Set<QueuePair>();
  private kickScheduled = false;
  private readonly vlan: DeviceConfig['vlan'];
  /** Listener for protocol events (NAKs, timeouts, retransmissions); null for none. */
  tracer: TraceListener | null = null;

  constructor(cfg: DeviceConfig) {
    this.name = cfg.name ?? 'roce0';
    this.driver = cfg.driver;
    this.clock = cfg.clock;
    this.rng = new Rng(cfg.seed ?? 1);
    this.vlan = cfg.vlan ?? null;
    this.config = { maxUnackedPsns: cfg.maxUnackedPsns ?? 128, maxPktsPerAck: cfg.maxPktsPerAck ?? 64, burst: cfg.burst ?? 64 };
    // GID table as rxe builds it for RoCE v2: the link-local GID from the MAC first, then one per address.
    this.gids.push(linkLocalGid(cfg.driver.mac));
    for (const a of cfg.ipv4 ?? []) this.gids.push(ipv6FromString(`::ffff:${a}`));
    for (const a of cfg.ipv6 ?? []) this.gids.push(ipv6FromString(a));
    for (const [ip, mac] of Object.entries(cfg.neighbors ?? {})) this.neighbors.set(normalizeIp(ip), mac);
    const mode = cfg.icrc ?? 'auto';
    if (mode === 'native' && !nativeAvailable()) throw invalid(`icrc: 'native' needs the native addon: ${nativeLoadError()}`);
    this.batchedIcrc = mode === 'native' || (mode === 'auto' && nativeAvailable());
    this.txZc = hasZeroCopyTx(cfg.driver) ? cfg.driver : null;
    this.rxRunDriver = hasRunReceive(cfg.driver) ? cfg.driver : null;
    cfg.driver.setRxHandler(() => this.onRx());
  }

  /** The largest path MTU the link carries (rxe: netdev MTU minus headers, rounded down to an IB MTU). */
  maxMtu(): Mtu {
    const ib = this.driver.mtu - ROCE_OVERHEAD_V6;
    for (const b of [4096, 2048, 1024, 512, 256]) if (b <= ib) return mtuFromBytes(b) as Mtu;
    return 1;
  }

  /** GID table entries as text, index order (like show_gids). */
  gidTable(): { index: number; gid: string; type: 'RoCE v2'; ipv4: boolean }[] {
    return this.gids.map((g, index) => ({ index, gid: ipv6ToString(g), type: 'RoCE v2' as const, ipv4: isIpv4MappedGid(g) }));
  }

  allocPd(): ProtectionDomain {
    return new ProtectionDomain();
  }

  regMr(pd: ProtectionDomain, buffer: Uint8Array, access: number, iova?: bigint, key?: number): MemoryRegion {
    return this.mrs.register(pd, buffer, access, iova, key);
  }

  deregMr(mr: MemoryRegion): void {
    this.mrs.deregister(mr);
  }

  createCq(depth = 4096): CompletionQueue {
    return new CompletionQueue(depth);
  }

  createSrq(pd: ProtectionDomain, attr: { maxWr: number; maxSge?: number }): SharedReceiveQueue {
    return new SharedReceiveQueue(pd, attr.maxWr, attr.maxSge ?? 32);
  }

  /** ibv_create_qp. `qpn` asks for a given QP number (replay rebuilds the QPs a capture shows). */
  createQp(pd: ProtectionDomain, init: QpInitAttr, qpnWanted?: number): QueuePair {
    let qpn = this.nextQpn;
    if (qpnWanted !== undefined) {
      if (!Number.isInteger(qpnWanted) || qpnWanted < 2 || qpnWanted > 0xffffff) throw invalid(`createQp: QP number ${qpnWanted} is out of range 2..0xffffff`);
      if (this.qps.has(qpnWanted)) throw new VerbsError(VerbsErrorCode.Busy, `createQp: QP 0x${qpnWanted.toString(16)} exists`);
      qpn = qpnWanted;
    } else {
      while (this.qps.has(qpn)) qpn = (qpn + 1) & 0xffffff || 0x11;
      this.nextQpn = (qpn + 1) & 0xffffff || 0x11;
    }
    const qp = new QueuePair(this, pd, qpn, init);
    this.qps.set(qpn, qp);
    return qp;
  }

  destroyQp(qp: QueuePair): void {
    qp.cancelTimers();
    this.qps.delete(qp.qpNum);
  }

  createAh(_pd: ProtectionDomain, attr: AhAttr): AddressHandle {
    return new AddressHandle(attr, this.resolvePath(attr));
  }

  /** A random 24-bit start PSN, as rc_pingpong draws one (from the device's seeded generator). */
  randomPsn(): number {
    return this.rng.u32() & 0xffffff;
  }

  qp(qpn: number): QueuePair | undefined {
    return this.qps.get(qpn);
  }

  /** Counters of the device and of every QP, summed. */
  totalCounters(): Counters {
    const c = addCounters(newCounters(), this.counters);
    for (const qp of this.qps.values()) addCounters(c, qp.counters);
    return c;
  }

  /** Turns an address vector into a path: source GID, destination MAC (neighbour table), IP version. */
  resolvePath(ah: AhAttr): Path {
    const dgid = typeof ah.dgid === 'string' ? ipv6FromString(ah.dgid) : ah.dgid;
    if (dgid.length !== 16) throw invalid('ahAttr.dgid must be 16 bytes');
    const sgidIndex = ah.sgidIndex ?? (isIpv4MappedGid(dgid) ? this.gids.findIndex(isIpv4MappedGid) : 0);
    const sgid = this.gids[sgidIndex];
    if (sgid === undefined) throw invalid(`ahAttr.sgidIndex ${sgidIndex} is not in the GID table (${this.gids.length} entries)`);
    const v4 = isIpv4MappedGid(dgid);
    if (v4 !== isIpv4MappedGid(sgid)) throw invalid(`ahAttr: source GID ${ipv6ToString(sgid)} and destination GID ${ipv6ToString(dgid)} are not both IPv4-mapped or both IPv6`);
    const dstText = v4 ? `${dgid[12]}.${dgid[13]}.${dgid[14]}.${dgid[15]}` : ipv6ToString(dgid);
    const dmac = ah.dmac ?? this.neighbors.get(normalizeIp(dstText));
    if (dmac === undefined) throw new VerbsError(VerbsErrorCode.NotFound, `no neighbour entry for ${dstText}: give ahAttr.dmac or add it to the device's neighbour table`);
    const tc = ah.trafficClass ?? 0;
    return {
      srcMac: this.driver.mac,
      dstMac: dmac,
      ipVersion: v4 ? 4 : 6,
      srcIp: v4 ? sgid.subarray(12) : sgid,
      dstIp: v4 ? dgid.subarray(12) : dgid,
      trafficClass: tc,
      flowLabel: ah.flowLabel ?? 0,
      hopLimit: ah.hopLimit ?? 64,
      // The PFC priority rides in the VLAN PCP; take it from the traffic class's DSCP class when not configured.
      vlan: this.vlan ? { vid: this.vlan.vid, pcp: this.vlan.pcp ?? tc >>> 5, dei: 0, tpid: 0x8100 } : null,
    };
  }

  udpSourcePort(qp: QueuePair, flowLabel: number): number {
    return rxeUdpSourcePort(qp.qpNum, qp.attr.destQpNum || qp.qpNum, flowLabel);
  }

  /** Copies an SGE list into one buffer (inline data); null when an SGE is not valid local memory. */
  gather(qp: QueuePair, sgList: readonly Sge[], write: boolean): Uint8Array | null {
    const r = resolveSges(this.mrs, qp.pd, sgList, write);
    if (r.fault !== MrFault.OK) return null;
    return gatherFrom(r.segs, 0, segsLength(r.segs));
  }

  /** Builds the frame of a transport packet on `path` and queues it for the next flush. */
  transmit(qp: QueuePair, t: TransportSpec, path: Path): void {
    // Nearly every packet of a QP goes on its one path: remember the last template before the map.
    let tpl = qp.lastTxPath === path ? qp.lastTxTemplate : qp.txTemplates.get(path);
    if (tpl === undefined) {
      const ip =
        path.ipVersion === 4
          ? { version: 4 as const, src: bytesToV4(path.srcIp), dst: bytesToV4(path.dstIp), dscp: path.trafficClass >>> 2, ecn: path.trafficClass & 3, ttl: path.hopLimit, dontFragment: true }
          : { version: 6 as const, src: path.srcIp, dst: path.dstIp, trafficClass: path.trafficClass, flowLabel: path.flowLabel, hopLimit: path.hopLimit };
      tpl = new FrameTemplate({ eth: { src: path.srcMac, dst: path.dstMac, vlan: path.vlan }, ip, udp: { srcPort: qp.udpSport } });
      qp.txTemplates.set(path, tpl);
    }
    qp.lastTxPath = path;
    qp.lastTxTemplate = tpl;
    const len = tpl.frameLength(t);
    qp.counters.sent_pkts++;
    const zc = this.txZc;
    if (zc !== null) {
      // Built where the driver sends it from: no copy on the way out.
      let off = zc.txReserve(len);
      if (off < 0) {
        this.flush();
        off = zc.txReserve(len);
        if (off < 0) {
          this.counters.send_err++; // the transmit ring is full, as when txBurst takes fewer frames
          return;
        }
      }
      const space = zc.txSpace;
      const n = tpl.emitInto(t, space.buf, space.view, off, !this.batchedIcrc);
      if (this.batchedIcrc) this.queueIcrc(off + tpl.ipOffset, off + n - ICRC_LEN);
      if (++this.txZcFrames >= TX_BURST) this.flush();
      return;
    }
    if (this.txOff + len > this.txSlab.length) {
      this.flush();
      if (len > this.txSlab.length) this.growSlab(len);
    }
    const n = tpl.emitInto(t, this.txSlab, this.txView, this.txOff, !this.batchedIcrc);
    if (this.batchedIcrc) this.queueIcrc(this.txOff + tpl.ipOffset, this.txOff + n - ICRC_LEN);
    this.txQueue.push(this.txSlab.subarray(this.txOff, this.txOff + n));
    this.txOff += n;
    if (this.txQueue.length >= TX_BURST) this.flush();
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
   * Hands queued frames to the driver in one burst: with zero-copy transmit a commit of the frames
   * built in its memory, else txBurst (the driver copies them, so the slab is free again). With the
   * batched ICRC, one native call seals every frame of the burst first.
   */
  flush(): void {
    const zc = this.txZc;
    const count = zc !== null ? this.txZcFrames : this.txQueue.length;
    if (count === 0) return;
    if (this.txIcrcCount > 0) {
      icrcSealBurst(zc !== null ? zc.txSpace.buf : this.txSlab, this.txIcrcDesc, this.txIcrcCount);
      this.txIcrcCount = 0;
    }
    if (zc !== null) {
      this.txZcFrames = 0;
      zc.txCommit(); // what the link cannot carry (over the MTU) the driver counts in txDropped, as txBurst does
      return;
    }
    const q = this.txQueue;
    this.txQueue = [];
    this.txOff = 0;
    const taken = this.driver.txBurst(q);
    if (taken < q.length) this.counters.send_err += q.length - taken;
  }

  /** Reports a protocol event to the listener, if any. `make` runs only when someone listens. */
  trace(make: () => TraceEvent): void {
    if (this.tracer !== null) this.tracer(make());
  }

  /** Asks for the requester of `qp` to run soon (coalesced). */
  kick(qp: QueuePair): void {
    this.kicked.add(qp);
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    this.clock.soon(() => this.runKicked());
  }

  private runKicked(): void {
    this.kickScheduled = false;
    const list = [...this.kicked];
    this.kicked.clear();
    for (const qp of list) qp.runRequester();
    this.flush();
  }

  /**
   * Receive path: bursts from the driver, classified and dispatched. A driver with the descriptor
   * extension (driver.ts RunReceive) hands runs of (offset, length) pairs; frames handed as views
   * become runs too, one per stretch of frames that share a buffer (drivers hand out views of one
   * ring or slab), so both take the same path.
   */
  private onRx(): void {
    const runs = this.rxRunDriver;
    const desc = this.rxDesc;
    for (;;) {
      // What the last burst produced leaves before the next is read: while frames keep coming, its ACKs
      // must not wait until the ring is empty (rxe transmits each response as it makes it).
      this.flush();
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
    this.flush();
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
   * through one view of the buffer, ICRCs checked in one native call (or one by one in TypeScript
   * without the addon), each dispatched with the buffer and its start, so no view is made per frame.
   */
  private onRun(bytes: Uint8Array, n: number): void {
    const whole = this.bytesOf(bytes.buffer);
    const view = this.rxView as DataView;
    const desc = this.rxDesc;
    const reentered = this.rxPkts.length !== 0; // a handler re-entered: fresh arrays, the outer burst's stay intact
    const pkts = reentered ? [] : this.rxPkts;
    const starts = reentered ? new Uint32Array(n) : this.rxStarts;
    pkts.length = n;
    try {
      for (let i = 0; i < n; i++) {
        const start = bytes.byteOffset + (desc[2 * i] as number);
        starts[i] = start;
        pkts[i] = decodeAt(view, whole, start, start + (desc[2 * i + 1] as number), LinkType.Ethernet, this.batchedIcrc ? LEAN_NO_ICRC : LEAN);
      }
      if (this.batchedIcrc) this.verifyIn(whole, pkts, starts);
      for (let i = 0; i < n; i++) this.dispatch(pkts[i] as DecodedFrame, whole, starts[i] as number);
    } finally {
      pkts.length = 0; // hold no packet past its burst
    }
  }

  /** Checks the ICRCs of `pkts` (packet i starting at `starts[i]` of `whole`) with one native call. */
  private verifyIn(whole: Uint8Array, pkts: readonly DecodedFrame[], starts: Uint32Array): void {
    const n = pkts.length;
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
    icrcDescBurst(whole, desc, k, this.icrcOut);
    k = 0;
    for (let i = 0; i < n; i++) {
      const p = pkts[i] as DecodedFrame;
      if (needsIcrc(p)) this.icrcChecked(p, this.icrcOut[k++] as number);
    }
  }

  private icrcChecked(p: RocePacket, expected: number): void {
    p.icrcExpected = expected;
    p.icrcOk = expected === p.icrc;
    if (!p.icrcOk && p.error === null) p.error = new WireError(WireErrorCode.BadIcrc, p.icrcOff, 'bad ICRC (checked in a native burst)');
  }

  /** `frame` holds the packet from index `base` on (see responderReceive). */
  private dispatch(p: DecodedFrame, frame: Uint8Array, base = 0): void {
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
    if ((info.flags & OpFlag.CNP) !== 0) return; // congestion control is not implemented; CNPs are ignored like rxe does
    const qp = this.qps.get(bth.destQp);
    if (qp === undefined || qp.state === QpState.RESET) {
      this.counters.rcvd_unknown_qp++;
      return;
    }
    qp.counters.rcvd_pkts++;
    if ((info.flags & OpFlag.REQ) !== 0) responderReceive(qp, p, frame, base);
    else if ((info.flags & OpFlag.RESP) !== 0) completerReceive(qp, p, frame, base);
  }

  /** True when a QP of this device has a send WQE not yet completed. */
  busy(): boolean {
    for (const qp of this.qps.values()) {
      if (qp.type === QpType.RC && qp.comp.index < qp.sq.length) return true;
    }
    return false;
  }
}

/** A decoded RoCE v2 packet whose ICRC is there to check. */
function needsIcrc(p: DecodedFrame): p is RocePacket {
  return p.roce && p.version === 2 && p.icrcOff >= 0 && p.icrc !== null;
}

/** The stack reads only the transport headers (decode.ts `lean`); with the batched ICRC, checked in verifyBurst. */
const LEAN_NO_ICRC = Object.freeze({ verifyIcrc: false, lean: true });
const LEAN = Object.freeze({ lean: true });

function bytesToV4(b: Uint8Array): number {
  return (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
}

function normalizeIp(text: string): string {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(text)) return text;
  const b = ipv6FromString(text);
  if (isIpv4MappedGid(b)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  return ipv6ToString(b);
}

/** fe80::/64 with the modified EUI-64 of the MAC (RFC 4291 appendix A), the first GID of a RoCE port. */
export function linkLocalGid(mac: number): Uint8Array {
  const g = new Uint8Array(16);
  g[0] = 0xfe;
  g[1] = 0x80;
  const m = [0, 1, 2, 3, 4, 5].map((i) => Math.floor(mac / 2 ** (8 * (5 - i))) & 0xff);
  g[8] = (m[0] ?? 0) ^ 0x02;
  g[9] = m[1] ?? 0;
  g[10] = m[2] ?? 0;
  g[11] = 0xff;
  g[12] = 0xfe;
  g[13] = m[3] ?? 0;
  g[14] = m[4] ?? 0;
  g[15] = m[5] ?? 0;
  return g;
}

