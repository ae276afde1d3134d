/**
 * A queue pair: its attributes and state (IBTA vol. 1 §10.3), the send and
 * receive queues, and one state block per role, as rxe keeps them
 * (`rxe_req_info`, `rxe_comp_info`, `rxe_resp_info`). The roles themselves
 * live in requester.ts, completer.ts and responder.ts; this file holds the
 * verbs entry points (modify, post) and the transitions to the error state.
 */
import { QpState, QpType, QP_STATE_NAMES } from './qp-type-and-state';
import { Access } from './access-flags';
import { MwType } from './mw-type';
import { FlushLevel, FlushType, SendFlags, WrOpcode } from './work-request-codes';
import { WcOpcode, WcStatus, type WorkCompletion } from './work-completion';
import { mtuBytes, type Mtu } from './mtu';
import type { Sge } from './sge';
import { type AhAttr, type QpAttrInput, checkTransition } from './qp-attributes';
import { VerbsError, VerbsErrorCode, invalid } from './errors';
import { MrFault, type ProtectionDomain, sgeTotal } from './memory-region';
import type { CompletionQueue } from './completion-queue';
import type { SharedReceiveQueue } from './shared-receive-queue';
import { type Counters, newCounters } from './counters';
import { type RecoveryCounts, type RecoveryTrigger, newRecoveryCounts } from '../base/recovery-trigger';
import { type RecvWqe, type RecvWr, type SendWqe, type SendWr, WqeKind, WqeState, copySge, makeRecvWqe, takesRdAtomic, MAX_MSG_SIZE } from './work-request';
import { type Path, rxeUdpSourcePort } from './address';
import type { MemoryWindow, MwBindInfo } from './memory-window';
import type { FrameTemplate } from '../packets/frame-template';
import type { Transport } from '../packets/opcodes';
import type { TimerId } from '../base/clock';
import type { QpContext, QpHost } from './qp-context';
import { gatherFrom, resolveSges, segsLength } from './dma';
import { requesterRun } from './requester';
import { transportOf } from './wire-opcodes';
import { QpCongestion } from './congestion/qp-congestion';
import { type CongestionConfig, type CongestionSettings, resolveCongestion } from './congestion/parameters';

/** Queue sizes of a QP (`struct ibv_qp_cap`). */
export interface QpCap {
  maxSendWr: number;
  maxRecvWr: number;
  maxSendSge: number;
  maxRecvSge: number;
  maxInlineData: number;
}

/** What a QP is created with (`struct ibv_qp_init_attr`): its type, CQs, optional SRQ and sizes. */
export interface QpInitAttr {
  qpType: QpType;
  sendCq: CompletionQueue;
  recvCq: CompletionQueue;
  srq?: SharedReceiveQueue;
  cap?: Partial<QpCap>;
  /** Every send WR completes with a CQE, signaled or not. */
  sqSigAll?: boolean;
}

export interface QpAttributes {
  qpState: QpState;
  pkeyIndex: number;
  portNum: number;
  qpAccessFlags: number;
  qkey: number;
  ahAttr: AhAttr | null;
  pathMtu: Mtu;
  destQpNum: number;
  rqPsn: number;
  sqPsn: number;
  maxDestRdAtomic: number;
  minRnrTimer: number;
  timeout: number;
  retryCnt: number;
  rnrRetry: number;
  maxRdAtomic: number;
}

/** A saved READ or atomic request, replayed for duplicates (rxe `resp_res`). */
export interface ResponderResource {
  /** FLUSH and ATOMIC WRITE are kept too, so that a duplicate is answered again and not executed twice (rxe duplicate_request()). */
  kind: 'read' | 'atomic' | 'flush' | 'atomicWrite';
  firstPsn: number;
  lastPsn: number;
  va: bigint;
  rkey: number;
  length: number;
  /** Atomic: the original value returned. */
  origData: bigint;
}

export class RequesterState {
  /** Next PSN to assign to a new WQE. */
  psn = 0;
  /** Index (in `sq`) of the WQE the requester works on. */
  next = 0;
  /** READ/atomic WQEs started and not completed. */
  rdAtomicOutstanding = 0;
  /** Packets since the last AckReq. */
  noackPkts = 0;
  /** The requester may not send before this time (RNR wait). */
  waitUntil = 0;
  /** Highest PSN sent so far (to tell retransmissions apart). */
  sentHigh = 0;
  sentAny = false;
  /**
   * A rewind not yet on the wire, by what started it: the loss-recovery episode it starts is counted
   * when its first resend goes out (`QueuePair.episodes`), so a rewind that another overtakes before
   * it sends anything counts once, as a capture shows it.
   */
  pendingEpisode: RecoveryTrigger | null = null;
  /** The PSN the go-back-N burst in progress sends next (-1 when the last packet sent was new). */
  burstNext = -1;
  /** Highest PSN a response may carry: the last request PSN sent, or the last response PSN of a READ sent. */
  respHigh = 0;
  kickTimer: TimerId | null = null;
  /**
   * End-to-end flow control (IBTA vol. 1 §9.7.7.2), kept as rdmavt does (s_ssn, s_lsn,
   * RVT_S_UNLIMITED_CREDIT, RVT_S_WAIT_SSN_CREDIT): `ssn` is the send sequence number of the last
   * message started (the first is 1, as the responder's MSN counts it), `lsn` the limit sequence
   * number (MSN + credits of the best ACK so far; 0 before any, so the first message goes alone).
   */
  ssn = 0;
  lsn = 0;
  /** The responder said it does no end-to-end flow control (credit code 31): no limit from then on. */
  unlimitedCredit = false;
  /** The requester is stopped at a message the credits do not cover (counted once per stop in rc_crwaits). */
  creditWait = false;
}

export class CompleterState {
  /** First PSN not yet acknowledged (the retry point). */
  psn = 0;
  /** Index (in `sq`) of the oldest WQE not completed. */
  index = 0;
  retryLeft = 0;
  rnrLeft = 0;
  timer: TimerId | null = null;
  /** When the local ACK timer expires (it may be armed for an earlier time and re-arm itself). */
  deadline = 0;
  /** A go-back-N retry is under way: gaps seen before the retry point answers are not retried again. */
  retrying = false;
}

export class ResponderState {
  /** Expected PSN (ePSN). */
  psn = 0;
  /** Message sequence number: count of completed request messages, mod 2^24. */
  msn = 0;
  /** Opcode of the last accepted packet, or -1 when the next must start a message. */
  opcode = -1;
  /** A PSN sequence error NAK was sent for the current gap: one NAK per gap, then silent drops (rxe_resp.c check_psn(), `resp.sent_psn_nak`). */
  sentPsnNak = false;
  /** Receive WQE of the SEND in progress. */
  wqe: RecvWqe | null = null;
  /** Bytes of the current SEND or WRITE placed so far. */
  offset = 0;
  /** WRITE in progress: where it goes. */
  writeBuf: Uint8Array | null = null;
  writeOff = 0;
  writeLen = 0;
  /** UC: drop packets until the next message starts. */
  dropMsg = false;
  resources: ResponderResource[] = [];
  /** An ACK owed and held for the end of the receive burst (stack/ack-coalescer.ts), and its PSN. */
  ackHeld = false;
  ackHeldPsn = 0;
}

const DEFAULT_CAP: QpCap = { maxSendWr: 1024, maxRecvWr: 1024, maxSendSge: 32, maxRecvSge: 32, maxInlineData: 256 };

/** Work-request opcodes each QP type carries (IBTA §10.7.2; rxe's qp type checks). */
const UD_OPCODES: readonly number[] = Object.freeze([WrOpcode.SEND, WrOpcode.SEND_WITH_IMM]);
/** Local work requests (REG_MR, LOCAL_INV, BIND_MW) are taken on RC and UC QPs (rxe_opcode.c rxe_wr_opcode_info[]: WR_LOCAL_OP_MASK). */
const UC_OPCODES: readonly number[] = Object.freeze([
  WrOpcode.SEND,
  WrOpcode.SEND_WITH_IMM,
  WrOpcode.RDMA_WRITE,
  WrOpcode.RDMA_WRITE_WITH_IMM,
  WrOpcode.LOCAL_INV,
  WrOpcode.REG_MR,
  WrOpcode.BIND_MW,
]);
const RC_OPCODES: readonly number[] = Object.freeze([
  WrOpcode.SEND,
  WrOpcode.SEND_WITH_IMM,
  WrOpcode.SEND_WITH_INV,
  WrOpcode.RDMA_WRITE,
  WrOpcode.RDMA_WRITE_WITH_IMM,
  WrOpcode.RDMA_READ,
  WrOpcode.ATOMIC_CMP_AND_SWP,
  WrOpcode.ATOMIC_FETCH_AND_ADD,
  WrOpcode.FLUSH,
  WrOpcode.ATOMIC_WRITE,
  WrOpcode.LOCAL_INV,
  WrOpcode.REG_MR,
  WrOpcode.BIND_MW,
]);

/** The error reason of a QP its user moved to ERR (ibv_modify_qp, rdma_disconnect): no transport failure. */
export const QP_ERR_BY_MODIFY = 'moved to ERR by modifyQp';

/** A queue pair (`ibv_qp`): post work requests, move it through its states with `modifyQp`. */
export class QueuePair {
  readonly type: QpType;
  /** The transport of this QP's packets (RC, UC or UD opcodes). */
  readonly transport: Transport;
  /** What the roles (requester, responder, completer) use of the device: see qp-context.ts. */
  readonly ctx: QpContext;
  readonly cap: QpCap;
  readonly sendCq: CompletionQueue;
  readonly recvCq: CompletionQueue;
  readonly srq: SharedReceiveQueue | null;
  readonly sqSigAll: boolean;
  readonly counters: Counters = newCounters();
  /** Go-back-N rewinds by what started them (base/recovery-trigger.ts): the loss-recovery episodes `roce analyze` counts. */
  readonly episodes: RecoveryCounts = newRecoveryCounts();
  attr: QpAttributes;
  /** Resolved path for a connected QP (set at RTR). */
  path: Path | null = null;
  /** UDP source port for this QP's packets. */
  udpSport = 0xc000;
  /** Frame templates per path (headers built once), cleared when the path or source port changes. */
  readonly txTemplates = new Map<Path, FrameTemplate>();
  lastTxPath: Path | null = null;
  lastTxTemplate: FrameTemplate | undefined = undefined;
  readonly sq: SendWqe[] = [];
  readonly rq: RecvWqe[] = [];
  readonly req = new RequesterState();
  readonly comp = new CompleterState();
  readonly resp = new ResponderState();
  /** Why the QP went to the error state, if it did. */
  errorReason = '';
  /**
   * Run once (then cleared) when the next packet for this QP arrives: the Communication Established
   * affiliated event (IBTA vol. 1 chapter 11; Linux IB_EVENT_COMM_EST), which the CM arms while it
   * waits for the RTU (stack/cm/rdma-cm.ts). Null otherwise: the receive path tests one field.
   */
  onCommEst: (() => void) | null = null;
  /** Congestion control (notification point, DCQCN reaction point, pacer), or null when it is off for this QP. */
  cc: QpCongestion | null = null;
  /**
   * What the device's in-flight bound has counted for this QP, whether the QP waits in its FIFO, and
   * the kick turn its grant of room is for (0: none); stack/inflight-bound.ts writes them.
   */
  inflightCharge = 0;
  inflightWaiting = false;
  inflightGrantTurn = 0;
  private ccSettings: CongestionSettings | null = null;

  constructor(
    private readonly host: QpHost,
    readonly pd: ProtectionDomain,
    readonly qpNum: number,
    init: QpInitAttr,
  ) {
    if (init.qpType !== QpType.RC && init.qpType !== QpType.UC && init.qpType !== QpType.UD) {
      throw new VerbsError(VerbsErrorCode.NotSupported, `createQp: QP type ${String(init.qpType)} is not supported (RC, UC and UD are)`);
    }
    this.type = init.qpType;
    this.transport = transportOf(init.qpType);
    this.ctx = host;
    this.cap = { ...DEFAULT_CAP, ...init.cap };
    for (const [k, v] of Object.entries(this.cap)) {
      if (!Number.isInteger(v) || v < 0 || v > 1 << 20) throw invalid(`createQp: cap.${k} must be an integer 0..${1 << 20}`);
    }
    this.sendCq = init.sendCq;
    this.recvCq = init.recvCq;
    this.srq = init.srq ?? null;
    this.sqSigAll = init.sqSigAll ?? false;
    this.attr = {
      qpState: QpState.RESET,
      pkeyIndex: 0,
      portNum: 1,
      qpAccessFlags: 0,
      qkey: 0,
      ahAttr: null,
      pathMtu: 3,
      destQpNum: 0,
      rqPsn: 0,
      sqPsn: 0,
      maxDestRdAtomic: 0,
      minRnrTimer: 0,
      timeout: 0,
      retryCnt: 0,
      rnrRetry: 0,
      maxRdAtomic: 0,
    };
  }

  get state(): QpState {
    return this.attr.qpState;
  }

  get mtu(): number {
    // UD has no path MTU attribute: a datagram (one packet) may be as large as the port's MTU,
    // as in rxe, whose get_mtu() returns port.mtu_cap for UD QPs and qp->mtu for RC and UC.
    if (this.type === QpType.UD) return mtuBytes(this.host.maxMtu());
    return mtuBytes(this.attr.pathMtu);
  }

  /** ibv_modify_qp. Throws VerbsError (EINVAL) on a transition or attribute the IBTA table does not allow. */
  modify(input: QpAttrInput): void {
    const cur = this.attr.qpState;
    const target = checkTransition(this.type, cur, input);
    if (input.pathMtu !== undefined && input.pathMtu > this.host.maxMtu()) {
      throw invalid(`modifyQp: pathMtu ${mtuBytes(input.pathMtu)} exceeds what the link carries (${mtuBytes(this.host.maxMtu())})`);
    }
    if (input.ahAttr !== undefined) {
      this.path = this.host.resolvePath(input.ahAttr); // throws on an unknown GID index or an unreachable peer
    }
    const { qpState: _s, curQpState: _c, ...rest } = input;
    Object.assign(this.attr, rest);
    this.attr.qpState = target;
    if (input.destQpNum !== undefined || input.ahAttr !== undefined) {
      this.udpSport = rxeUdpSourcePort(this.qpNum, this.attr.destQpNum || this.qpNum, this.attr.ahAttr?.flowLabel ?? 0);
      this.txTemplates.clear();
      this.lastTxPath = null;
    }
    if (target === QpState.RESET) {
      this.reset();
      return;
    }
    if (target === QpState.ERR) {
      if (cur !== QpState.ERR) this.enterError(QP_ERR_BY_MODIFY);
      return;
    }
    if (input.rqPsn !== undefined) this.resp.psn = input.rqPsn;
    if (input.sqPsn !== undefined) {
      this.req.psn = input.sqPsn;
      this.comp.psn = input.sqPsn;
    }
    if (cur === QpState.RTR && target === QpState.RTS) {
      this.comp.retryLeft = this.attr.retryCnt;
      this.comp.rnrLeft = this.attr.rnrRetry;
    }
    if (target === QpState.RTS) this.ctx.kick(this);
  }

  /** Back to RESET: queues emptied without completions, role state cleared (IBTA §10.3.1). */
  private reset(): void {
    this.cancelTimers();
    this.sq.length = 0;
    this.rq.length = 0;
    Object.assign(this.req, new RequesterState());
    Object.assign(this.comp, new CompleterState());
    Object.assign(this.resp, new ResponderState());
    this.path = null;
    this.txTemplates.clear();
    this.lastTxPath = null;
    this.errorReason = '';
    this.ctx.inflight?.note(this);
  }

  /** The QP's congestion-control settings (the device's unless `setCongestion` changed them), or null when off. */
  get congestion(): CongestionSettings | null {
    return this.ccSettings;
  }

  /**
   * Turns congestion control of this QP on or off, or changes its parameters: `cfg` over the QP's
   * present settings (the device's, given at creation). The reaction point starts afresh.
   */
  setCongestion(cfg: CongestionConfig): void {
    this.applyCongestion(resolveCongestion(cfg, this.ccSettings ?? undefined));
  }

  /** Installs checked settings (the device does at creation); null or both points off removes `cc`. */
  applyCongestion(s: CongestionSettings | null): void {
    this.cc?.stop();
    this.ccSettings = s;
    this.cc = s !== null && (s.np || s.rp) ? new QpCongestion(this.ctx.clock, s, this.type !== QpType.UD, () => this.ctx.kick(this)) : null;
    // Frames are ECN-capable (ECT(0)) while congestion control is on: the templates are rebuilt.
    this.txTemplates.clear();
    this.lastTxPath = null;
  }

  cancelTimers(): void {
    this.cc?.stop();
    const clock = this.ctx.clock;
    if (this.comp.timer !== null) clock.cancel(this.comp.timer);
    if (this.req.kickTimer !== null) clock.cancel(this.req.kickTimer);
    this.comp.timer = null;
    this.req.kickTimer = null;
  }

  /** ibv_post_send. Throws VerbsError for a request the QP can never carry; protocol failures come back as completions. */
  postSend(wrs: SendWr | readonly SendWr[]): void {
    this.post(wrs, false);
  }

  /** postSend, and bindMw's bind work request (`bindVerb`: the only way a type 1 window's bind is posted). */
  private post(wrs: SendWr | readonly SendWr[], bindVerb: boolean): void {
    const st = this.attr.qpState;
    if (st === QpState.RESET || st === QpState.INIT || st === QpState.RTR) {
      throw new VerbsError(VerbsErrorCode.BadState, `postSend: QP 0x${this.qpNum.toString(16)} is in ${QP_STATE_NAMES[st]}; sending needs RTS`);
    }
    const many = Array.isArray(wrs);
    const count = many ? (wrs as readonly SendWr[]).length : 1;
    const live = this.sq.length - this.comp.index;
    if (live + count > this.cap.maxSendWr) {
      throw new VerbsError(VerbsErrorCode.QueueFull, `postSend: send queue full (${live} of ${this.cap.maxSendWr} entries in use)`);
    }
    if (many) {
      const wqes = (wrs as readonly SendWr[]).map((wr) => this.makeSendWqe(wr, bindVerb)); // validate all before queueing any
      for (const w of wqes) this.sq.push(w);
    } else {
      this.sq.push(this.makeSendWqe(wrs as SendWr, bindVerb));
    }
    if (st === QpState.ERR) {
      this.flushSend();
      return;
    }
    this.ctx.kick(this);
  }

  /**
   * ibv_bind_mw: binds the type 1 window `mw` to `bind.bindInfo` with a bind work request on this QP,
   * which completes like any other (WcOpcode.BIND_MW; MW_BIND_ERR and the QP to ERR when the bind is
   * refused). Returns the window's new R_Key, the old one with the next key byte, to hand to the peer
   * once the bind has completed (libibverbs rxe_bind_mw(): next_rkey()). The provider's own checks
   * throw: a type 2 window (bound by a BIND_MW work request), a zero-based type 1 window (o10-36.2.2),
   * an address or length without a region, a region of another PD.
   */
  bindMw(mw: MemoryWindow, bind: { wrId?: bigint | number; sendFlags?: number; bindInfo: MwBindInfo }): number {
    if (mw.type !== MwType.TYPE_1) throw invalid('bindMw: a type 2 window is bound by a BIND_MW work request (postSend)');
    const b = bind.bindInfo;
    if (b.mr === null && (b.addr !== 0n || b.length !== 0)) throw invalid('bindMw: an address or length needs a region (bindInfo.mr)');
    if ((b.mwAccessFlags & Access.ZERO_BASED) !== 0) throw invalid('bindMw: a type 1 window cannot be zero-based (o10-36.2.2)');
    if (b.mr !== null && b.mr.pd !== mw.pd)
      throw new VerbsError(VerbsErrorCode.InvalidArgument, 'bindMw: the region and the window belong to different protection domains');
    const rkey = ((mw.postedRkey & ~0xff) | ((mw.postedRkey + 1) & 0xff)) >>> 0;
    this.post({ wrId: bind.wrId ?? 0, opcode: WrOpcode.BIND_MW, sendFlags: bind.sendFlags ?? 0, bindMw: { mw, rkey, bindInfo: { ...b } } }, true);
    mw.postedRkey = rkey;
    return rkey;
  }

  private makeSendWqe(wr: SendWr, bindVerb = false): SendWqe {
    const t = this.type;
    const op = wr.opcode;
    const allowed = t === QpType.UD ? UD_OPCODES : t === QpType.UC ? UC_OPCODES : RC_OPCODES;
    if (!allowed.includes(op)) throw invalid(`postSend: opcode ${String(op)} is not allowed on a ${t === QpType.UD ? 'UD' : t === QpType.UC ? 'UC' : 'RC'} QP`);
    const sgList = wr.sgList ?? [];
    if (sgList.length > this.cap.maxSendSge) throw invalid(`postSend: ${sgList.length} SGEs exceed maxSendSge ${this.cap.maxSendSge}`);
    for (const s of sgList) {
      if (!Number.isInteger(s.length) || s.length < 0 || s.length > MAX_MSG_SIZE) throw invalid(`postSend: SGE length ${s.length} is out of range`);
    }
    const flags = wr.sendFlags ?? 0;
    const length = sgeTotal(sgList);
    if (length > MAX_MSG_SIZE) throw invalid(`postSend: message of ${length} bytes exceeds the maximum ${MAX_MSG_SIZE}`);
    let kind: WqeKind = WqeKind.SEND;
    let remoteAddr = 0n;
    let rkey = 0;
    let compareAdd = 0n;
    let swap = 0n;
    let flushType = 0;
    let flushLevel = 0;
    let flushLength = 0;
    let atomicWriteData: Uint8Array | null = null;
    if (op === WrOpcode.RDMA_WRITE || op === WrOpcode.RDMA_WRITE_WITH_IMM || op === WrOpcode.RDMA_READ) {
      if (wr.rdma === undefined) throw invalid('postSend: RDMA WRITE and READ need `rdma: { remoteAddr, rkey }`');
      kind = op === WrOpcode.RDMA_READ ? WqeKind.READ : WqeKind.WRITE;
      remoteAddr = wr.rdma.remoteAddr;
      rkey = wr.rdma.rkey >>> 0;
    } else if (op === WrOpcode.ATOMIC_CMP_AND_SWP || op === WrOpcode.ATOMIC_FETCH_AND_ADD) {
      if (wr.atomic === undefined) throw invalid('postSend: atomics need `atomic: { remoteAddr, rkey, compareAdd, swap }`');
      if (length !== 8 || sgList.length !== 1) throw invalid('postSend: an atomic needs exactly one SGE of 8 bytes for the original value');
      kind = WqeKind.ATOMIC;
      remoteAddr = wr.atomic.remoteAddr;
      rkey = wr.atomic.rkey >>> 0;
      compareAdd = BigInt.asUintN(64, wr.atomic.compareAdd);
      swap = BigInt.asUintN(64, wr.atomic.swap ?? 0n);
    } else if (op === WrOpcode.FLUSH) {
      const fl = wr.flush;
      if (fl === undefined) throw invalid('postSend: FLUSH needs `flush: { remoteAddr, rkey, length, placementType, selectivity }`');
      // oA19-2: a FLUSH carries no payload; what it covers is the RETH's range or the whole region.
      if (sgList.length !== 0) throw invalid('postSend: a FLUSH carries no data: give no SGEs');
      if (!Number.isInteger(fl.length) || fl.length < 0 || fl.length > MAX_MSG_SIZE)
        throw invalid(`postSend: FLUSH length ${fl.length} is out of range 0..${MAX_MSG_SIZE}`);
      flushType = fl.placementType;
      flushLevel = fl.selectivity ?? FlushLevel.RANGE;
      if (flushType === 0 || (flushType & ~(FlushType.GLOBAL | FlushType.PERSISTENT)) !== 0)
        throw invalid(`postSend: FLUSH placement type ${flushType} must be FlushType.GLOBAL and/or FlushType.PERSISTENT`);
      if (flushLevel !== FlushLevel.RANGE && flushLevel !== FlushLevel.MR)
        throw invalid(`postSend: FLUSH selectivity ${flushLevel} must be FlushLevel.RANGE or FlushLevel.MR`);
      kind = WqeKind.FLUSH;
      remoteAddr = fl.remoteAddr;
      rkey = fl.rkey >>> 0;
      flushLength = fl.length;
    } else if (op === WrOpcode.ATOMIC_WRITE) {
      const aw = wr.atomicWrite;
      if (aw === undefined) throw invalid('postSend: ATOMIC_WRITE needs `atomicWrite: { remoteAddr, rkey, value }`');
      if (sgList.length !== 0) throw invalid('postSend: an ATOMIC_WRITE carries its 8 bytes in `atomicWrite.value`: give no SGEs');
      kind = WqeKind.ATOMIC_WRITE;
      remoteAddr = aw.remoteAddr;
      rkey = aw.rkey >>> 0;
      atomicWriteData = new Uint8Array(8);
      new DataView(atomicWriteData.buffer).setBigUint64(0, BigInt.asUintN(64, aw.value), true);
    } else if (op === WrOpcode.LOCAL_INV || op === WrOpcode.REG_MR) {
      if (sgList.length !== 0) throw invalid('postSend: LOCAL_INV and REG_MR take no SGEs');
      if (op === WrOpcode.LOCAL_INV && wr.invalidateRkey === undefined) throw invalid('postSend: LOCAL_INV needs invalidateRkey');
      if (op === WrOpcode.REG_MR && wr.reg === undefined) throw invalid('postSend: REG_MR needs `reg: { mr, key, access }`');
      kind = WqeKind.LOCAL;
    } else if (op === WrOpcode.BIND_MW) {
      const bm = wr.bindMw;
      if (sgList.length !== 0) throw invalid('postSend: BIND_MW takes no SGEs');
      if (bm === undefined) throw invalid('postSend: BIND_MW needs `bindMw: { mw, rkey, bindInfo: { mr, addr, length, mwAccessFlags } }`');
      // Type 1 windows are bound by the bind verb (ibv_bind_mw), which posts this work request itself.
      if (bm.mw.type === MwType.TYPE_1 && !bindVerb)
        throw invalid('postSend: a type 1 window is bound with qp.bindMw (ibv_bind_mw), not a BIND_MW work request');
      kind = WqeKind.LOCAL;
    }
    let inline: Uint8Array | null = null;
    if ((flags & SendFlags.INLINE) !== 0) {
      if (kind !== WqeKind.SEND && kind !== WqeKind.WRITE) throw invalid('postSend: INLINE applies to SEND and WRITE only');
      if (length > this.cap.maxInlineData) throw invalid(`postSend: ${length} inline bytes exceed maxInlineData ${this.cap.maxInlineData}`);
      inline = this.gather(sgList);
      if (inline === null) throw invalid('postSend: an inline SGE does not lie inside a registered region of this PD');
    }
    if (t === QpType.UD) {
      if (wr.ud === undefined) throw invalid('postSend: a UD send needs `ud: { ah, remoteQpn, remoteQkey }`');
      if (length > this.mtu) throw invalid(`postSend: a UD message of ${length} bytes exceeds the path MTU ${this.mtu}`);
    }
    if ((op === WrOpcode.SEND_WITH_IMM || op === WrOpcode.RDMA_WRITE_WITH_IMM) && wr.immData === undefined) {
      throw invalid('postSend: SEND_WITH_IMM and RDMA_WRITE_WITH_IMM need immData');
    }
    if (op === WrOpcode.SEND_WITH_INV && wr.invalidateRkey === undefined) throw invalid('postSend: SEND_WITH_INV needs invalidateRkey');
    return {
      wrId: BigInt(wr.wrId ?? 0),
      opcode: op,
      kind,
      sendFlags: flags,
      imm: op === WrOpcode.SEND_WITH_IMM || op === WrOpcode.RDMA_WRITE_WITH_IMM ? (wr.immData ?? 0) >>> 0 : null,
      inv: op === WrOpcode.SEND_WITH_INV || op === WrOpcode.LOCAL_INV ? (wr.invalidateRkey ?? 0) >>> 0 : null,
      sgList: sgList.map(copySge),
      inline,
      segs: [],
      length: kind === WqeKind.FLUSH ? flushLength : kind === WqeKind.ATOMIC_WRITE ? 8 : length,
      remoteAddr,
      rkey,
      compareAdd,
      swap,
      flushType,
      flushLevel,
      atomicWriteData,
      reg: op === WrOpcode.REG_MR ? (wr.reg ?? null) : null,
      bind: op === WrOpcode.BIND_MW && wr.bindMw !== undefined ? { mw: wr.bindMw.mw, rkey: wr.bindMw.rkey >>> 0, bindInfo: { ...wr.bindMw.bindInfo } } : null,
      localFault: '',
      ud: wr.ud ?? null,
      state: WqeState.POSTED,
      firstPsn: 0,
      lastPsn: 0,
      npkts: 0,
      sentPkts: 0,
      readPsn: 0,
      readBytes: 0,
    };
  }

  /** Copies an SGE list into one buffer (inline data); null when an SGE is not valid local memory of the QP's PD. */
  private gather(sgList: readonly Sge[]): Uint8Array | null {
    const r = resolveSges(this.ctx.mrs, this.pd, sgList, false);
    if (r.fault !== MrFault.OK) return null;
    return gatherFrom(r.segs, 0, segsLength(r.segs));
  }

  /** ibv_post_recv. */
  postRecv(wrs: RecvWr | readonly RecvWr[]): void {
    const list = Array.isArray(wrs) ? (wrs as readonly RecvWr[]) : [wrs as RecvWr];
    if (this.srq !== null) throw invalid('postRecv: this QP takes its receive WQEs from a shared receive queue');
    if (this.attr.qpState === QpState.RESET) throw new VerbsError(VerbsErrorCode.BadState, 'postRecv: QP is in RESET');
    if (this.rq.length + list.length > this.cap.maxRecvWr) {
      throw new VerbsError(VerbsErrorCode.QueueFull, `postRecv: receive queue full (${this.rq.length} of ${this.cap.maxRecvWr})`);
    }
    const wqes = list.map((wr) => makeRecvWqe(wr, this.cap.maxRecvSge));
    for (const w of wqes) this.rq.push(w);
    if (this.attr.qpState === QpState.ERR) this.flushRecv();
  }

  /** Takes the next receive WQE (own queue or SRQ), or null. */
  takeRecvWqe(): RecvWqe | null {
    if (this.srq !== null) return this.srq.take();
    return this.rq.shift() ?? null;
  }

  /** True when a receive WQE is available. */
  hasRecvWqe(): boolean {
    return this.srq !== null ? this.srq.size > 0 : this.rq.length > 0;
  }

  /**
   * Moves the QP to ERR (IBTA §10.3.1: every outstanding and later work
   * request completes with WR_FLUSH_ERR).
   */
  enterError(reason: string): void {
    if (this.errorReason === '') this.errorReason = reason;
    if (this.attr.qpState !== QpState.ERR) {
      this.ctx.trace(() => ({ kind: 'qp-error', timeNs: this.ctx.clock.now(), qpn: this.qpNum, reason }));
    }
    this.attr.qpState = QpState.ERR;
    this.cancelTimers();
    this.flushSend();
    this.flushRecv();
    this.ctx.inflight?.note(this); // nothing of an errored QP is in flight any more
    const r = this.resp;
    if (r.wqe !== null) {
      this.postRecvCompletion(r.wqe, WcStatus.WR_FLUSH_ERR, 0, 0, 0, 0, reason);
      r.wqe = null;
    }
  }

  /** Completes every send WQE not yet completed with WR_FLUSH_ERR, in order. */
  flushSend(): void {
    for (let i = this.comp.index; i < this.sq.length; i++) {
      const w = this.sq[i] as SendWqe;
      if (w.state !== WqeState.DONE) this.postSendCompletion(w, WcStatus.WR_FLUSH_ERR, 'flushed: QP in error state');
    }
    this.sq.length = 0;
    this.comp.index = 0;
    this.req.next = 0;
    this.req.rdAtomicOutstanding = 0;
  }

  flushRecv(): void {
    for (const w of this.rq) this.postRecvCompletion(w, WcStatus.WR_FLUSH_ERR, 0, 0, 0, 0, 'flushed: QP in error state');
    this.rq.length = 0;
  }

  /** Posts the send completion of `w` (when signaled, or always on error) and marks it done. */
  postSendCompletion(w: SendWqe, status: WcStatus, reason = ''): void {
    if (w.state === WqeState.DONE) return;
    if (w.state === WqeState.STARTED && takesRdAtomic(w.kind)) this.req.rdAtomicOutstanding--;
    w.state = WqeState.DONE;
    if (status === WcStatus.SUCCESS && !this.sqSigAll && (w.sendFlags & SendFlags.SIGNALED) === 0) return;
    const wc: WorkCompletion = {
      wrId: w.wrId,
      status,
      opcode: SEND_WC_OPCODE[w.opcode] ?? WcOpcode.SEND,
      // rxe make_send_cqe(): byte_len is the WQE's DMA length (a FLUSH's range, an ATOMIC WRITE's 8 bytes).
      byteLen: w.kind === WqeKind.SEND || w.kind === WqeKind.WRITE || w.kind === WqeKind.LOCAL ? 0 : w.length,
      qpNum: this.qpNum,
      srcQp: 0,
      wcFlags: 0,
      immData: 0,
      vendorErr: reason,
    };
    this.sendCq.push(wc);
  }

  postRecvCompletion(
    w: RecvWqe,
    status: WcStatus,
    byteLen: number,
    flags: number,
    imm: number,
    srcQp: number,
    reason = '',
    opcode: WcOpcode = WcOpcode.RECV,
  ): void {
    const wc: WorkCompletion = { wrId: w.wrId, status, opcode, byteLen, qpNum: this.qpNum, srcQp, wcFlags: flags, immData: imm, vendorErr: reason };
    this.recvCq.push(wc, true);
  }

  /** Runs the requester now (the device calls this when kicked; tests may too). */
  runRequester(): void {
    requesterRun(this);
  }
}

const SEND_WC_OPCODE: Readonly<Record<number, WcOpcode>> = {
  [WrOpcode.SEND]: WcOpcode.SEND,
  [WrOpcode.SEND_WITH_IMM]: WcOpcode.SEND,
  [WrOpcode.SEND_WITH_INV]: WcOpcode.SEND,
  [WrOpcode.RDMA_WRITE]: WcOpcode.RDMA_WRITE,
  [WrOpcode.RDMA_WRITE_WITH_IMM]: WcOpcode.RDMA_WRITE,
  [WrOpcode.RDMA_READ]: WcOpcode.RDMA_READ,
  [WrOpcode.ATOMIC_CMP_AND_SWP]: WcOpcode.COMP_SWAP,
  [WrOpcode.ATOMIC_FETCH_AND_ADD]: WcOpcode.FETCH_ADD,
  [WrOpcode.FLUSH]: WcOpcode.FLUSH,
  [WrOpcode.ATOMIC_WRITE]: WcOpcode.ATOMIC_WRITE,
  [WrOpcode.LOCAL_INV]: WcOpcode.LOCAL_INV,
  [WrOpcode.REG_MR]: WcOpcode.REG_MR,
  [WrOpcode.BIND_MW]: WcOpcode.BIND_MW,
};
