/**
 * A RoCE v2 device: the verbs objects (protection domains, memory regions, completion queues,
 * QPs, SRQs), the GID and neighbour tables, and the scheduling of the requesters, over one port
 * (stack/port.ts) that builds, seals, decodes and dispatches the frames of one NicDriver.
 *
 * All work is driven by three entry points - frames arriving (the port), work posted (the QP
 * kicks its requester), timers - and each ends by flushing the frames it produced to the driver
 * in one burst. The device is the QPs' context (stack/qp-context.ts): what their roles need of it.
 */
import { Opcode } from '../packets/opcodes';
import { GSI_QPN } from '../packets/mad';
import { TxScratch } from './tx-scratch';
import type { NicDriver } from '../nic-driver/driver';
import type { Clock } from '../base/clock';
import { Rng } from '../base/rng';
import type { RandomSource } from '../base/random-source';
import { AllocationOrder } from './allocation-order';
import { KeyAllocator } from './key-allocator';
import { QpnAllocator } from './qpn-allocator';
import { QpType } from './qp-type-and-state';
import type { MwType } from './mw-type';
import { type Mtu, mtuFromBytes } from './mtu';
import { VerbsError, VerbsErrorCode, invalid } from './errors';
import { FAST_REG_PAGE, MrTable, MrType, ProtectionDomain, type MemoryRegion } from './memory-region';
import type { MemoryWindow } from './memory-window';
import { CompletionQueue } from './completion-queue';
import { SharedReceiveQueue } from './shared-receive-queue';
import { QueuePair, type QpInitAttr } from './queue-pair';
import type { AhAttr } from './qp-attributes';
import { AddressHandle, type Path, isIpv4MappedGid } from './address';
import { type Counters, addCounters, newCounters } from './counters';
import { type DeviceLimits, RXE_DEVICE_LIMITS } from './device-limits';
import type { TraceEvent, TraceListener } from './trace';
import type { AckHold, QpHost, QpTuning } from './qp-context';
import { Port } from './port';
import type { TxGate } from './tx-gate';
import type { TransportSpec } from '../packets/build';
import { type IcrcBatch, jsIcrcBatch } from '../packets/icrc';
import { ipv6FromString, ipv6ToString } from '../packets/bytes';
import { type CongestionConfig, type CongestionSettings, NP_DEFAULTS, resolveCongestion } from './congestion/parameters';
import { NotificationPoint } from './congestion/np';
import { InflightBound } from './inflight-bound';
import { AckCoalescer } from './ack-coalescer';
import { AckDeferral } from './ack-deferral';
import { sendAckNow, sendHeldAck } from './responder';

/** A device's driver, clock and addresses, and the engine's settings (limits, congestion control, ACK coalescing). */
export interface DeviceConfig {
  driver: NicDriver;
  clock: Clock;
  /** IPv4 addresses of the interface (each becomes an IPv4-mapped RoCE v2 GID). */
  ipv4?: string[];
  /** IPv6 addresses of the interface (each becomes a GID). */
  ipv6?: string[];
  /** Static neighbour table: IP address text -> MAC. */
  neighbors?: Record<string, number>;
  /** The neighbour table itself (default: an empty Map); a host device passes one that consults the kernel's on a miss. */
  neighborTable?: Map<string, number>;
  name?: string;
  /** Seed for start PSNs and other choices (default 1), when no `random` is given. */
  seed?: number;
  /**
   * Where R_Keys/L_Keys, default region addresses, QP numbers and `randomPsn()` are drawn from: a
   * device that faces a network is given base/crypto-random.ts's; without one they come from
   * generators seeded by `seed`, reproducible and so guessable by whoever knows the seed (the
   * simulation and tests). docs/security.md.
   */
  random?: RandomSource;
  /** Keys, addresses and QP numbers in a random order (default) or rxe's sequential one (stack/allocation-order.ts). */
  allocation?: AllocationOrder;
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
   * What seals and checks the ICRCs of a burst: the TypeScript `jsIcrcBatch` by default; a
   * composition root passes the native one when the addon loads (nic-driver/native-icrc.ts).
   */
  icrc?: IcrcBatch;
  /** Live objects allowed: max_qp, max_mr (default rxe's, stack/device-limits.ts). */
  limits?: Partial<DeviceLimits>;
  /**
   * Congestion control of the device's QPs (ECN → CNP → DCQCN, stack/congestion/): off unless
   * given. Each QP starts with these settings; `qp.setCongestion` changes them for one QP.
   */
  congestion?: CongestionConfig;
  /**
   * Request packets the device's RC QPs may have in flight together (stack/inflight-bound.ts), or
   * none (the default: each QP is bounded by its own window only, as in rxe). A host device sets one
   * so that many QPs posting at once do not overflow the peer's receive ring.
   */
  maxInflightPackets?: number;
  /**
   * Coalesce the responder's ACKs per receive burst: one ACK per QP for the latest PSN owed, as
   * IBTA §9.7.5.1.1 allows and hardware does (stack/ack-coalescer.ts). Default off: an ACK for every
   * AckReq packet, as rxe.
   */
  coalesceAcks?: boolean;
}

/** Link-layer and IP overhead of a RoCE v2 packet over IPv4 or IPv6: Ethernet 14 (+4 VLAN), IP, UDP 8, BTH 12, ICRC 4 ... the IB MTU is what fits. */
const ROCE_OVERHEAD_V6 = 40 + 8 + 12 + 28 + 4;

/** Outstanding PSNs per QP by default (rxe: RXE_MAX_UNACKED_PSNS). */
export const DEFAULT_MAX_UNACKED_PSNS = 128;
/** Packets between two AckReq bits by default (rxe: RXE_MAX_PKT_PER_ACK). */
export const DEFAULT_MAX_PKTS_PER_ACK = 64;

/** An RDMA device over a frame driver (`ibv_context`): allocates PDs, MRs, CQs, SRQs and QPs, and runs the transport of every QP. */
export class Device implements QpHost {
  readonly name: string;
  readonly driver: NicDriver;
  readonly clock: Clock;
  readonly mrs: MrTable;
  readonly limits: Readonly<DeviceLimits>;
  readonly rng: Rng;
  readonly tuning: QpTuning;
  readonly scratch = new TxScratch(Opcode.RC_ACKNOWLEDGE);
  readonly gids: Uint8Array[] = [];
  readonly neighbors: Map<string, number>;
  /** Device-wide counters for frames that reach no QP (or that a QP refuses before taking them: rcvd_wrong_address). */
  readonly counters: Counters = newCounters();
  private readonly qps = new Map<number, QueuePair>();
  /** The random source given (DeviceConfig.random), or null: the device's choices come from its seed. */
  readonly random: RandomSource | null;
  /** Where `randomPsn()` draws from. */
  private readonly psnSource: RandomSource;
  private readonly qpnAllocator: QpnAllocator;
  /** Frames out and in: building, ICRC, decoding, dispatch to the QPs' roles. */
  private readonly port: Port;
  private kicked = new Set<QueuePair>();
  /** The set runKicked works through, swapped with `kicked` so a kick made meanwhile lands in the other (no copy per run). */
  private kickedNow = new Set<QueuePair>();
  private kickScheduled = false;
  private readonly vlan: DeviceConfig['vlan'];
  /** Listener for protocol events (NAKs, timeouts, retransmissions); null for none. */
  tracer: TraceListener | null = null;
  /** The bound on packets in flight across the QPs, or null (none). */
  readonly inflight: InflightBound | null;
  /** The requesters' gate on a driver with transmit backpressure (stack/tx-gate.ts), or null. */
  readonly txGate: TxGate | null;
  /** The responder's ACK coalescer, or null (an ACK for every AckReq packet). */
  readonly acks: AckHold;
  /** The busy-poll receive's held ACKs (pollCoalescing), or null when the device coalesces them instead. */
  private readonly ackDeferral: AckDeferral | null;
  /** Congestion-control settings new QPs start with, or null (off). */
  private congestionSettings: CongestionSettings | null;
  /** Builds the CNPs `sendCnp` sends for QPs without a notification point of their own. */
  private cnpBuilder: NotificationPoint | null = null;

  constructor(cfg: DeviceConfig) {
    this.name = cfg.name ?? 'roce0';
    this.neighbors = cfg.neighborTable ?? new Map<string, number>();
    this.driver = cfg.driver;
    this.clock = cfg.clock;
    this.rng = new Rng(cfg.seed ?? 1);
    this.random = cfg.random ?? null;
    this.psnSource = cfg.random ?? this.rng;
    const order = cfg.allocation ?? AllocationOrder.RANDOM;
    // Without a source, names come from their own seeded stream: the PSNs a seed gives stay those it gave before names were random.
    const names = cfg.random ?? new Rng(((cfg.seed ?? 1) ^ 0x6e616d65) >>> 0);
    this.qpnAllocator = new QpnAllocator(order, names);
    this.vlan = cfg.vlan ?? null;
    this.limits = Object.freeze({ ...RXE_DEVICE_LIMITS, ...cfg.limits });
    this.mrs = new MrTable(this.limits.maxMr, this.limits.maxMw, new KeyAllocator(order, names));
    this.tuning = Object.freeze({
      maxUnackedPsns: cfg.maxUnackedPsns ?? DEFAULT_MAX_UNACKED_PSNS,
      maxPktsPerAck: cfg.maxPktsPerAck ?? DEFAULT_MAX_PKTS_PER_ACK,
      burst: cfg.burst ?? 64,
    });
    // GID table as rxe builds it for RoCE v2: the link-local GID from the MAC first, then one per address.
    this.gids.push(linkLocalGid(cfg.driver.mac));
    for (const a of cfg.ipv4 ?? []) this.gids.push(ipv6FromString(`::ffff:${a}`));
    for (const a of cfg.ipv6 ?? []) this.gids.push(ipv6FromString(a));
    for (const [ip, mac] of Object.entries(cfg.neighbors ?? {})) this.neighbors.set(normalizeIp(ip), mac);
    this.port = new Port({ driver: cfg.driver, icrc: cfg.icrc ?? jsIcrcBatch, counters: this.counters, qps: this.qps, kick: (qp) => this.kick(qp) });
    this.txGate = this.port.txGate;
    this.congestionSettings = cfg.congestion !== undefined ? resolveCongestion(cfg.congestion) : null;
    const bound = cfg.maxInflightPackets;
    if (bound !== undefined && (!Number.isInteger(bound) || bound < 1 || bound > 0x7fffffff)) {
      throw invalid(`maxInflightPackets must be an integer 1..2147483647, not ${bound}`);
    }
    this.inflight =
      bound === undefined
        ? null
        : new InflightBound(
            bound,
            this.clock,
            (qp) => this.kick(qp),
            () => this.qps.values(),
          );
    const coalescer = cfg.coalesceAcks === true ? new AckCoalescer(sendAckNow) : null;
    this.ackDeferral = coalescer === null ? new AckDeferral(sendHeldAck) : null;
    this.acks = coalescer ?? (this.ackDeferral as AckDeferral);
    // While the busy-poll receive holds responses, coalesced ACKs wait for its flush too.
    if (coalescer !== null) this.port.onRunEnd = () => this.polling || coalescer.releaseAll();
  }

  /** The congestion-control settings QPs created from now on start with (null: off). */
  get congestion(): CongestionSettings | null {
    return this.congestionSettings;
  }

  /** Changes the device's congestion-control settings (`cfg` over the present ones) for QPs created afterwards. */
  setCongestion(cfg: CongestionConfig): void {
    this.congestionSettings = resolveCongestion(cfg, this.congestionSettings ?? undefined);
  }

  /**
   * Sends a CNP from `qp` to its remote QP now, as a notification point sends one (RoCE v2 annex
   * A17.9.2: opcode 0x81, BECN set, the remote QPN), whether or not a CE-marked packet came:
   * `roce probe`'s `cnp` event, which tests the peer's reaction point. The CNP is built as the QP's
   * notification point builds it, or with the device's NP settings (the defaults when congestion
   * control is off). False when the QP has no path yet or the transmit ring is full.
   */
  sendCnp(qp: QueuePair): boolean {
    let np = qp.cc?.np ?? null;
    if (np === null) {
      if (this.cnpBuilder === null) this.cnpBuilder = new NotificationPoint(this.clock, this.congestionSettings?.params ?? NP_DEFAULTS);
      np = this.cnpBuilder;
    }
    const sent = this.port.sendCnp(qp, np);
    if (sent) this.port.flush();
    return sent;
  }

  /** What computes the ICRCs ('typescript' or 'native'). */
  get icrcName(): string {
    return this.port.icrcName;
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

  /**
   * ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, maxPages): a fast-registration region, not valid until a
   * REG_MR work request binds it (stack/memory-region.ts). `key` fixes its first key (replay).
   */
  allocMr(pd: ProtectionDomain, maxPages: number, key?: number): MemoryRegion {
    return this.mrs.allocFast(pd, maxPages, key);
  }

  /**
   * ib_map_mr_sg: the pages (here one buffer of at most maxPages pages) and the address at which the
   * next REG_MR of `mr` makes them answer. Refused while `mr` is valid (its key would suddenly name
   * other memory) and for a region that is not a fast-registration one.
   */
  mapMrSg(mr: MemoryRegion, buffer: Uint8Array, iova: bigint = 0n): void {
    if (mr.type !== MrType.MEM_REG) throw invalid('mapMrSg: the region is not a fast-registration region (allocMr)');
    if (mr.valid) throw new VerbsError(VerbsErrorCode.BadState, `mapMrSg: region 0x${mr.lkey.toString(16)} is valid; invalidate it first (LOCAL_INV)`);
    if (!(buffer instanceof Uint8Array)) throw invalid('mapMrSg: buffer must be a Uint8Array');
    const pages = Math.ceil(buffer.length / FAST_REG_PAGE);
    if (pages > mr.maxPages) throw invalid(`mapMrSg: ${buffer.length} bytes need ${pages} pages, the region has room for ${mr.maxPages}`);
    if (iova < 0n || iova + BigInt(buffer.length) > 1n << 64n) throw invalid('mapMrSg: iova range does not fit in 64 bits');
    mr.mapped = { buffer, iova };
  }

  /** ibv_dereg_mr. Refused (ROCE_ERR_EBUSY) while memory windows are bound to the region. */
  deregMr(mr: MemoryRegion): void {
    this.mrs.deregister(mr);
  }

  /**
   * ibv_alloc_mw(pd, type): a memory window (stack/memory-window.ts). Type 1 is bound by
   * `QueuePair.bindMw`, type 2 by a BIND_MW work request. `key` fixes its first R_Key (replay).
   */
  allocMw(pd: ProtectionDomain, type: MwType, key?: number): MemoryWindow {
    return this.mrs.allocWindow(pd, type, key);
  }

  /** ibv_dealloc_mw: the window's key stops answering; a bound window lets go of its region. */
  deallocMw(mw: MemoryWindow): void {
    this.mrs.deallocWindow(mw);
  }

  createCq(depth = 4096): CompletionQueue {
    return new CompletionQueue(depth);
  }

  createSrq(pd: ProtectionDomain, attr: { maxWr: number; maxSge?: number }): SharedReceiveQueue {
    return new SharedReceiveQueue(pd, attr.maxWr, attr.maxSge ?? 32);
  }

  /** ibv_create_qp. `qpn` asks for a given QP number (replay rebuilds the QPs a capture shows). */
  createQp(pd: ProtectionDomain, init: QpInitAttr, qpnWanted?: number): QueuePair {
    if (this.qps.size >= this.limits.maxQp)
      throw new VerbsError(VerbsErrorCode.Limit, `createQp: the device already has ${this.qps.size} QPs, its limit (max_qp); destroy one first`);
    let qpn: number;
    if (qpnWanted !== undefined) {
      // QP 1 is the General Services Interface, a UD QP (IBTA vol. 1 chapter 13, §13.4; rxe numbers its IB_QPT_GSI QP 1): stack/cm/gsi.ts asks for it.
      const min = init.qpType === QpType.UD ? GSI_QPN : 2;
      if (!Number.isInteger(qpnWanted) || qpnWanted < min || qpnWanted > 0xffffff)
        throw invalid(`createQp: QP number ${qpnWanted} is out of range ${min}..0xffffff`);
      if (this.qps.has(qpnWanted)) throw new VerbsError(VerbsErrorCode.Busy, `createQp: QP 0x${qpnWanted.toString(16)} exists`);
      qpn = qpnWanted;
    } else {
      const fresh = this.qpnAllocator.next((n) => this.qps.has(n), this.qps.size);
      if (fresh === null) throw new VerbsError(VerbsErrorCode.Limit, 'createQp: every QP number is in use');
      qpn = fresh;
    }
    const qp = new QueuePair(this, pd, qpn, init);
    if (this.congestionSettings !== null) qp.applyCongestion(this.congestionSettings);
    this.qps.set(qpn, qp);
    return qp;
  }

  destroyQp(qp: QueuePair): void {
    // ACKs the QP still holds go first: the requests they answer were taken, and sent at once (as
    // rxe sends them) they would be on their way already. A peer denied them would retry into a QP
    // that is gone until its retry count ran out.
    this.acks.release(qp);
    qp.cancelTimers();
    this.qps.delete(qp.qpNum);
    this.inflight?.forget(qp);
  }

  createAh(_pd: ProtectionDomain, attr: AhAttr): AddressHandle {
    return new AddressHandle(attr, this.resolvePath(attr));
  }

  /** A random 24-bit start PSN, as rc_pingpong draws one (from the device's random source, else its seeded generator). */
  randomPsn(): number {
    return this.psnSource.u32() & 0xffffff;
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
    if (v4 !== isIpv4MappedGid(sgid))
      throw invalid(`ahAttr: source GID ${ipv6ToString(sgid)} and destination GID ${ipv6ToString(dgid)} are not both IPv4-mapped or both IPv6`);
    const dstText = v4 ? `${dgid[12]}.${dgid[13]}.${dgid[14]}.${dgid[15]}` : ipv6ToString(dgid);
    const dmac = ah.dmac ?? this.neighbors.get(normalizeIp(dstText));
    if (dmac === undefined)
      throw new VerbsError(VerbsErrorCode.NotFound, `no neighbour entry for ${dstText}: give ahAttr.dmac or add it to the device's neighbour table`);
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

  /** Builds the frame of a packet of `qp` on `path` and queues it for the next flush (the port does). */
  transmit(qp: QueuePair, t: TransportSpec, path: Path): void {
    this.port.transmit(qp, t, path);
  }

  /** Hands the queued frames to the driver in one burst. */
  flush(): void {
    this.port.flush();
  }

  /** Runs the receive path on the frames the driver holds already (qp-context.ts `pollReceived`). */
  pollReceived(): void {
    this.driver.pollRx?.();
  }

  /** Reports a protocol event to the listener, if any. `make` runs only when someone listens. */
  trace(make: () => TraceEvent): void {
    if (this.tracer !== null) this.tracer(make());
  }

  /**
   * Runs `poll` (the driver's `pollRx`, which runs the receive handler now) with the responses of
   * what it receives held back: they leave with the next flush instead of at the end of the burst.
   * The busy-poll wait (apps/host/host-device.ts) polls this way; the application answers what it
   * received and its post kicks the requester, whose flush then carries the ACK and the answer in
   * one transmit kick, as a NIC rings one doorbell for both. Held responses are flushed soon in
   * any case (`clock.soon`), by the requester's flush when a kick is due, else on their own.
   */
  pollCoalescing(poll: () => boolean): boolean {
    this.port.rxFlushHook = this.holdResponses;
    this.polling = true;
    const d = this.ackDeferral;
    if (d !== null) d.holding = true;
    try {
      return poll();
    } finally {
      this.port.rxFlushHook = null;
      this.polling = false;
      if (d !== null) d.holding = false;
    }
  }

  /** True inside pollCoalescing. */
  private polling = false;
  private responsesHeld = false;
  private readonly holdResponses = (): void => {
    if (this.responsesHeld) return;
    this.responsesHeld = true;
    this.clock.soon(this.releaseResponses);
  };
  private readonly releaseResponses = (): void => {
    this.responsesHeld = false;
    if (this.kickScheduled) return; // runKicked, queued after this, sends them after its own
    this.acks.releaseAll();
    this.flush();
  };

  /** Asks for the requester of `qp` to run soon (coalesced). */
  kick(qp: QueuePair): void {
    this.kicked.add(qp);
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    this.clock.soon(this.runKickedSoon);
  }

  private readonly runKickedSoon = (): void => this.runKicked();

  private runKicked(): void {
    this.kickScheduled = false;
    // Re-entered from a requester's run (not expected): work through a copy, the outer run keeps its set.
    const reentered = this.kickedNow.size !== 0;
    const list = reentered ? new Set(this.kicked) : this.kicked;
    if (reentered) this.kicked.clear();
    else {
      this.kicked = this.kickedNow;
      this.kickedNow = list;
    }
    this.inflight?.beginTurn();
    try {
      for (const qp of list) qp.runRequester();
    } finally {
      list.clear();
    }
    this.inflight?.endTurn();
    // ACKs held by the busy-poll receive go after the requests: the peer works on the request
    // while the ACK is on its way (stack/ack-deferral.ts).
    this.acks.releaseAll();
    this.flush();
  }

  /** True when a QP of this device has a send WQE not yet completed. */
  busy(): boolean {
    for (const qp of this.qps.values()) {
      if (qp.type === QpType.RC && qp.comp.index < qp.sq.length) return true;
    }
    return false;
  }
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
