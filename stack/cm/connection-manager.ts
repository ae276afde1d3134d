/**
 * The communication manager of a device (the kernel's ib_cm, drivers/infiniband/core/cm.c), over
 * the GSI (gsi.ts): communication IDs and their tables, the messages each side sends, the response
 * timeouts and retries of REQ, REP and DREQ, and TimeWait. What each received message does, state
 * by state, is in state-machine.ts; the rdma_cm-style API on top is rdma-cm.ts.
 *
 * Tables, as cm.c keeps them: IDs by local communication ID; by (remote CA GUID, remote
 * communication ID) to recognise a duplicate REQ; by (remote CA GUID, remote QPN) to recognise a
 * stale connection (a new REQ from a QP that still has one here); listeners by service ID.
 * An ID stays in the remote tables until TimeWait ends (cm_cleanup_timewait()).
 *
 * Determinism: communication IDs, start PSNs and transaction IDs come from a seeded generator;
 * every timer is on the device's clock.
 */
import { Rng } from '../../base/rng';
import type { Clock } from '../../base/clock';
import { CM_CLASS_VERSION, CM_ATTR_NAMES, GSI_QPN, MAD_HEADER_LEN, MadMethod, MgmtClass } from '../../packets/mad';
import { buildCmMad } from '../../packets/mad-payload';
import { type CmMessage, parseCmMessage } from '../../packets/cm/message';
import { RejMessage, RejReason } from '../../packets/cm/rej';
import { TransportServiceType } from '../../packets/cm/req';
import { MraMessage } from '../../packets/cm/mra';
import { SidrStatus } from '../../packets/cm/sidr-rep';
import { VerbsError, VerbsErrorCode } from '../errors';
import type { Device } from '../device';
import { Gsi, type GsiOptions, type MadPeer, type ReceivedMad } from './gsi';
import { type CmCounterKey, type CmCounters, newCmCounters } from './gsi-counters';
import { CmId } from './cm-id';
import { CmState, cmStateName } from './cm-state';
import type { CmEvent } from './cm-event';
import { CmDefaults, ackTimeoutCode, cmTimeNs, responseWaitNs } from './timers';
import { RECEIVE_HANDLERS, onResponseTimeout } from './state-machine';

export interface CmOptions extends GsiOptions {
  /** Seed of communication IDs, start PSNs and transaction IDs (default: drawn from the device's generator). */
  seed?: number;
}

/** A state change or message, for traces and tests. */
export interface CmTraceEvent {
  timeNs: number;
  localId: number;
  from: string;
  to: string;
  why: string;
}

/** What the active side offers in its REQ (ib_cm_req_param, with rdma_cm's RoCE defaults in timers.ts). */
export interface ReqParams {
  /** The peer's GID (IPv4-mapped for IPv4). */
  peerGid: Uint8Array;
  /** Our GID on the path. */
  localGid: Uint8Array;
  serviceId: bigint;
  qpn: number;
  startingPsn: number;
  pathMtu: number;
  responderResources: number;
  initiatorDepth: number;
  retryCount: number;
  rnrRetryCount: number;
  trafficClass: number;
  hopLimit: number;
  flowLabel: number;
  privateData: Uint8Array;
  /** CM response timeout codes and retries (default 20, 20, 15) and the path's packet life time (default 18). */
  localCmResponseTimeout?: number;
  remoteCmResponseTimeout?: number;
  maxCmRetries?: number;
  packetLifeTime?: number;
}

/** What the passive side answers in its REP (ib_cm_rep_param). */
export interface RepParams {
  qpn: number;
  startingPsn: number;
  responderResources: number;
  initiatorDepth: number;
  rnrRetryCount: number;
  privateData: Uint8Array;
}

export interface CmListener {
  serviceId: bigint;
  /** Called with REQ_RECEIVED (and SIDR_REQ_RECEIVED) for the new ID; the new ID's own events go to the handler it sets. */
  handler: (e: CmEvent) => void;
}

const HI_TID = 1n;

export class ConnectionManager {
  readonly dev: Device;
  readonly clock: Clock;
  readonly gsi: Gsi;
  readonly counters: CmCounters = newCmCounters();
  /** Our CA GUID: the EUI-64 of the MAC (rxe's node GUID, addrconf_addr_eui48()). */
  readonly caGuid: bigint;
  readonly ids = new Map<number, CmId>();
  readonly remoteIds = new Map<string, CmId>();
  readonly remoteQpns = new Map<string, CmId>();
  readonly listeners = new Map<bigint, CmListener>();
  /** SIDR requests being answered, by the sender's GID and request ID (cm.c remote_sidr_table). */
  readonly remoteSidr = new Map<string, CmId>();
  tracer: ((e: CmTraceEvent) => void) | null = null;
  private readonly rng: Rng;
  /** Where starting PSNs come from: the device's random source when it has one (a seeded CM keeps its own stream). */
  private readonly psns: { u32(): number };
  /** cm.c xors each allocated ID with a random operand so IDs do not repeat across restarts. */
  private readonly idOperand: number;
  private nextIndex = 1;

  constructor(dev: Device, o: CmOptions = {}) {
    this.dev = dev;
    this.clock = dev.clock;
    this.rng = new Rng(o.seed ?? (dev.random ?? dev.rng).u32());
    this.idOperand = this.rng.u32();
    this.psns = o.seed === undefined && dev.random !== null ? dev.random : this.rng;
    const g = dev.gids[0] as Uint8Array; // the link-local GID carries the modified EUI-64 of the MAC
    this.caGuid = new DataView(g.buffer, g.byteOffset + 8, 8).getBigUint64(0);
    this.gsi = new Gsi(dev, o);
    this.gsi.register(MgmtClass.CM, CM_CLASS_VERSION, [MadMethod.SEND], (m) => this.receive(m));
  }

  // ------------------------------------------------------------------ IDs

  /** ib_create_cm_id. */
  createId(handler: (e: CmEvent) => void): CmId {
    for (;;) {
      const index = this.nextIndex;
      this.nextIndex = (this.nextIndex + 1) >>> 0 || 1;
      const localId = (index ^ this.idOperand) >>> 0;
      if (localId === 0 || this.ids.has(localId)) continue;
      const id = new CmId(localId, index, handler);
      this.ids.set(localId, id);
      return id;
    }
  }

  /** A random 24-bit start PSN (cma.c: get_random_u32() & 0xffffff). */
  randomPsn(): number {
    return this.psns.u32() & 0xffffff;
  }

  /** An ephemeral port for a connecting ID (Linux's default ip_local_port_range, 32768-60999). */
  randomPort(): number {
    return 32768 + (this.rng.u32() % (60999 - 32768 + 1));
  }

  /** cm.c cm_form_tid(): the agent's high word and the ID's index. */
  formTid(id: CmId): bigint {
    return (HI_TID << 32n) | BigInt(id.index >>> 0);
  }

  /** ib_cm_listen: REQs (and SIDR_REQs) for `serviceId` go to `handler`. */
  listen(serviceId: bigint, handler: (e: CmEvent) => void): CmListener {
    if (this.listeners.has(serviceId))
      throw new VerbsError(VerbsErrorCode.Busy, `CM: service ID 0x${serviceId.toString(16).padStart(16, '0')} is already listened on`);
    const l = { serviceId, handler };
    this.listeners.set(serviceId, l);
    return l;
  }

  stopListening(l: CmListener): void {
    if (this.listeners.get(l.serviceId) === l) this.listeners.delete(l.serviceId);
  }

  /** Moves `id` to `to`, traced. */
  setState(id: CmId, to: CmState, why: string): void {
    const from = id.state;
    id.state = to;
    if (this.tracer !== null) this.tracer({ timeNs: this.clock.now(), localId: id.localId, from: cmStateName(from), to: cmStateName(to), why });
  }

  /** Delivers an event to the owner of `id` (none once it is destroyed). */
  emit(e: CmEvent): void {
    if (!e.id.destroyed) e.id.handler(e);
  }

  insertRemote(id: CmId): void {
    id.remoteKey = `${id.remoteCaGuid}/${id.remoteId}`;
    this.remoteIds.set(id.remoteKey, id);
    id.remoteQpnKey = `${id.remoteCaGuid}/${id.conn.remoteQpn}`;
    this.remoteQpns.set(id.remoteQpnKey, id);
  }

  /** cm.c cm_cleanup_timewait(): out of the remote tables. */
  removeRemote(id: CmId): void {
    if (id.remoteKey !== null && this.remoteIds.get(id.remoteKey) === id) this.remoteIds.delete(id.remoteKey);
    if (id.remoteQpnKey !== null && this.remoteQpns.get(id.remoteQpnKey) === id) this.remoteQpns.delete(id.remoteQpnKey);
    id.remoteKey = null;
    id.remoteQpnKey = null;
  }

  // ------------------------------------------------------------------ sending

  /** Builds and sends one CM message to `to`; returns the MAD (kept for resending). */
  transmit(to: MadPeer, m: CmMessage, tid: bigint): Uint8Array {
    const mad = buildCmMad(m, { transactionId: tid });
    this.sendMad(to, mad, m.name.toLowerCase() as CmCounterKey);
    return mad;
  }

  /** Sends a MAD already built (a retry, or an answer resent for a duplicate). */
  sendMad(to: MadPeer, mad: Uint8Array, key: CmCounterKey): void {
    this.counters.cm_tx_msgs[key]++;
    this.gsi.send(to, mad);
  }

  /** Sends `m` for `id` and waits `id.responseWaitNs` for the answer, resending up to `id.maxCmRetries` times. */
  sendWithRetries(id: CmId, m: CmMessage, tid: bigint): Uint8Array {
    this.cancelOutstanding(id);
    const peer = id.peer as MadPeer;
    const mad = this.transmit(peer, m, tid);
    id.outstanding = { mad, key: m.name.toLowerCase() as CmCounterKey, timeoutNs: id.responseWaitNs, retriesLeft: id.maxCmRetries, timer: null };
    this.armOutstanding(id, id.responseWaitNs);
    return mad;
  }

  /** (Re)starts the wait for the answer to the outstanding message (ib_modify_mad() after an MRA). */
  armOutstanding(id: CmId, waitNs: number): void {
    const o = id.outstanding;
    if (o === null) return;
    if (o.timer !== null) this.clock.cancel(o.timer);
    o.timer = this.clock.schedule(this.clock.now() + waitNs, () => {
      o.timer = null;
      if (id.outstanding !== o) return;
      onResponseTimeout(this, id);
      this.dev.flush();
    });
  }

  /** ib_cancel_mad(). */
  cancelOutstanding(id: CmId): void {
    const o = id.outstanding;
    if (o === null) return;
    if (o.timer !== null) this.clock.cancel(o.timer);
    id.outstanding = null;
  }

  // ------------------------------------------------------------------ messages without an ID

  /** cm.c cm_issue_rej(): a REJ answering a message no ID takes (no listener, stale connection). */
  issueRej(to: MadPeer, tid: bigint, theirCommId: number, ourCommId: number, reason: number, rejected: number, ari: Uint8Array = new Uint8Array(0)): void {
    this.transmit(
      to,
      {
        name: 'REJ',
        fields: {
          localCommId: ourCommId,
          remoteCommId: theirCommId,
          messageRejected: rejected,
          rejectedInfoLength: ari.length,
          reason,
          ari,
          privateData: new Uint8Array(0),
        },
      },
      tid,
    );
  }

  /** cm.c cm_issue_drep(): a DREP for a DREQ of a connection we no longer know. */
  issueDrep(to: MadPeer, tid: bigint, theirCommId: number, ourCommId: number): void {
    this.transmit(to, { name: 'DREP', fields: { localCommId: ourCommId, remoteCommId: theirCommId, privateData: new Uint8Array(0) } }, tid);
  }

  // ------------------------------------------------------------------ ID actions (ib_send_cm_*)

  /** ib_send_cm_req: IDLE -> REQ_SENT; the REQ is resent each response timeout, up to the max CM retries. */
  sendReq(id: CmId, p: ReqParams): void {
    if (id.state !== CmState.IDLE)
      throw new VerbsError(VerbsErrorCode.BadState, `CM REQ: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    const plt = p.packetLifeTime ?? CmDefaults.packetLifeTime;
    const localTo = p.localCmResponseTimeout ?? CmDefaults.responseTimeout;
    const remoteTo = p.remoteCmResponseTimeout ?? CmDefaults.responseTimeout;
    id.peer = { gid: p.peerGid, qpn: GSI_QPN };
    id.serviceId = p.serviceId;
    id.maxCmRetries = p.maxCmRetries ?? CmDefaults.maxCmRetries;
    id.packetLifeTime = plt;
    id.responseWaitNs = responseWaitNs(plt, remoteTo);
    const c = id.conn;
    c.localQpn = p.qpn;
    c.localPsn = p.startingPsn;
    c.pathMtu = p.pathMtu;
    c.responderResources = p.responderResources;
    c.initiatorDepth = p.initiatorDepth;
    c.retryCount = p.retryCount;
    c.rnrRetryCount = p.rnrRetryCount;
    c.localAckTimeout = ackTimeoutCode(CmDefaults.caAckDelay, plt);
    c.trafficClass = p.trafficClass;
    c.hopLimit = p.hopLimit;
    c.flowLabel = p.flowLabel;
    id.tid = this.formTid(id);
    const zeroGid = new Uint8Array(16);
    this.setState(id, CmState.REQ_SENT, 'REQ sent');
    this.sendWithRetries(
      id,
      {
        name: 'REQ',
        fields: {
          localCommId: id.localId,
          serviceId: p.serviceId,
          localCaGuid: this.caGuid,
          localQkey: 0,
          localQpn: p.qpn,
          responderResources: p.responderResources,
          localEecn: 0,
          initiatorDepth: p.initiatorDepth,
          remoteEecn: 0,
          remoteCmResponseTimeout: remoteTo,
          transportServiceType: TransportServiceType.RC,
          endToEndFlowControl: false,
          startingPsn: p.startingPsn,
          localCmResponseTimeout: localTo,
          retryCount: p.retryCount,
          pkey: 0xffff,
          pathMtu: p.pathMtu,
          rdcExists: false,
          rnrRetryCount: p.rnrRetryCount,
          maxCmRetries: id.maxCmRetries,
          srq: false,
          extendedTransportType: 0,
          // RoCE has no LIDs: rxe puts the permissive LID in both (captures/rxe).
          primaryLocalLid: 0xffff,
          primaryRemoteLid: 0xffff,
          primaryLocalGid: p.localGid,
          primaryRemoteGid: p.peerGid,
          primaryFlowLabel: p.flowLabel,
          primaryPacketRate: 0,
          primaryTrafficClass: p.trafficClass,
          primaryHopLimit: p.hopLimit,
          primarySl: 0,
          primarySubnetLocal: false,
          primaryLocalAckTimeout: c.localAckTimeout,
          alternateLocalLid: 0,
          alternateRemoteLid: 0,
          alternateLocalGid: zeroGid,
          alternateRemoteGid: zeroGid,
          alternateFlowLabel: 0,
          alternatePacketRate: 0,
          alternateTrafficClass: 0,
          alternateHopLimit: 0,
          alternateSl: 0,
          alternateSubnetLocal: false,
          alternateLocalAckTimeout: 0,
          sapSupported: false,
          privateData: p.privateData,
        },
      },
      id.tid,
    );
  }

  /** ib_send_cm_rep: REQ_RCVD (or MRA_REQ_SENT) -> REP_SENT; the REP is resent until the RTU (or the first packet) comes. */
  sendRep(id: CmId, p: RepParams): void {
    if (id.state !== CmState.REQ_RCVD && id.state !== CmState.MRA_REQ_SENT) {
      throw new VerbsError(VerbsErrorCode.BadState, `CM REP: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    }
    const c = id.conn;
    c.localQpn = p.qpn;
    c.localPsn = p.startingPsn;
    c.responderResources = p.responderResources;
    c.initiatorDepth = p.initiatorDepth;
    this.setState(id, CmState.REP_SENT, 'REP sent');
    id.lastRep = this.sendWithRetries(
      id,
      {
        name: 'REP',
        fields: {
          localCommId: id.localId,
          remoteCommId: id.remoteId,
          localQkey: 0,
          localQpn: p.qpn,
          localEecn: 0,
          startingPsn: p.startingPsn,
          responderResources: p.responderResources,
          initiatorDepth: p.initiatorDepth,
          targetAckDelay: CmDefaults.caAckDelay,
          failoverAccepted: 0,
          endToEndFlowControl: false,
          rnrRetryCount: p.rnrRetryCount,
          srq: false,
          localCaGuid: this.caGuid,
          privateData: p.privateData,
        },
      },
      id.tid,
    );
  }

  /** ib_send_cm_sidr_req: IDLE -> SIDR_REQ_SENT; resent each response timeout, up to the max CM retries. */
  sendSidrReq(id: CmId, p: { peerGid: Uint8Array; serviceId: bigint; privateData: Uint8Array; responseTimeout?: number; maxCmRetries?: number }): void {
    if (id.state !== CmState.IDLE)
      throw new VerbsError(VerbsErrorCode.BadState, `CM SIDR_REQ: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    id.peer = { gid: p.peerGid, qpn: GSI_QPN };
    id.serviceId = p.serviceId;
    id.maxCmRetries = p.maxCmRetries ?? CmDefaults.maxCmRetries;
    // cma.c: timeout_ms = 1 << (CMA_CM_RESPONSE_TIMEOUT - 8), the response timeout alone.
    id.responseWaitNs = cmTimeNs(p.responseTimeout ?? CmDefaults.responseTimeout);
    id.tid = this.formTid(id);
    this.setState(id, CmState.SIDR_REQ_SENT, 'SIDR_REQ sent');
    this.sendWithRetries(id, { name: 'SIDR_REQ', fields: { requestId: id.localId, pkey: 0xffff, serviceId: p.serviceId, privateData: p.privateData } }, id.tid);
  }

  /** ib_send_cm_sidr_rep: the answer to a SIDR_REQ (status, and for success the QP and Q_Key); back to IDLE. */
  sendSidrRep(id: CmId, p: { status: number; qpn: number; qkey: number; privateData: Uint8Array }): void {
    if (id.state !== CmState.SIDR_REQ_RCVD)
      throw new VerbsError(VerbsErrorCode.BadState, `CM SIDR_REP: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    this.transmit(
      id.peer as MadPeer,
      {
        name: 'SIDR_REP',
        fields: {
          requestId: id.remoteId,
          status: p.status,
          additionalInfoLength: 0,
          qpn: p.qpn,
          serviceId: id.serviceId,
          qkey: p.qkey,
          additionalInfo: new Uint8Array(0),
          privateData: p.privateData,
        },
      },
      id.tid,
    );
    if (id.remoteKey !== null && this.remoteSidr.get(id.remoteKey) === id) this.remoteSidr.delete(id.remoteKey);
    id.remoteKey = null;
    this.setState(id, CmState.IDLE, 'SIDR_REP sent');
  }

  /** Sends a REJ for `id` and leaves it as cm.c ib_send_cm_rej() does. */
  reject(id: CmId, reason: number, privateData: Uint8Array = new Uint8Array(0), ari: Uint8Array = new Uint8Array(0)): void {
    const s = id.state;
    let rejected: number = RejMessage.OTHER;
    if (s === CmState.REQ_RCVD || s === CmState.MRA_REQ_SENT) rejected = RejMessage.REQ;
    else if (s === CmState.REP_RCVD || s === CmState.MRA_REP_SENT) rejected = RejMessage.REP;
    else if (s !== CmState.REQ_SENT && s !== CmState.MRA_REQ_RCVD && s !== CmState.REP_SENT && s !== CmState.MRA_REP_RCVD) {
      throw new VerbsError(VerbsErrorCode.BadState, `CM reject: communication 0x${id.localId.toString(16)} is in ${cmStateName(s)}`);
    }
    this.cancelOutstanding(id);
    if (id.peer !== null) {
      this.transmit(
        id.peer,
        {
          name: 'REJ',
          fields: { localCommId: id.localId, remoteCommId: id.remoteId, messageRejected: rejected, rejectedInfoLength: ari.length, reason, ari, privateData },
        },
        id.tid,
      );
    }
    if (s === CmState.REQ_RCVD || s === CmState.MRA_REQ_SENT || s === CmState.REQ_SENT || s === CmState.MRA_REQ_RCVD) this.resetToIdle(id, 'REJ sent');
    else this.enterTimewait(id, 'REJ sent');
  }

  /**
   * ib_send_cm_mra: asks the peer for more time for its REQ or REP. Also sends at once an MRA that
   * prepareMra() only prepared (the ID already in MRA_REQ_SENT or MRA_REP_SENT).
   */
  sendMra(id: CmId, serviceTimeout: number = CmDefaults.mraServiceTimeout, privateData: Uint8Array = new Uint8Array(0)): void {
    const { what, next } = this.mraOf(id);
    id.lastMra = this.transmit(
      id.peer as MadPeer,
      { name: 'MRA', fields: { localCommId: id.localId, remoteCommId: id.remoteId, messageMraed: what, serviceTimeout, privateData } },
      id.tid,
    );
    this.setState(id, next, 'MRA sent');
  }

  /**
   * What the kernel's rdma_cm does when it has delivered a connect request its consumer has not
   * answered yet (cma.c cma_ib_req_handler()), and when a REP arrives (cma_ib_handler(),
   * IB_CM_REP_RECEIVED): ib_send_cm_mra() with CMA_CM_MRA_SETTING = IB_CM_MRA_FLAG_DELAY | 24, which
   * since Linux 6.16 is ib_prepare_cm_mra() with cm.c's CM_MRA_SETTING 24 ("IB/cm: Remove dead code
   * and adjust naming"). The delay flag means "send MRA only after a duplicate msg": the ID moves to
   * MRA_REQ_SENT (MRA_REP_SENT) and nothing goes out; a duplicate REQ (REP) is then answered with an
   * MRA of service timeout 24 (cm_dup_req_handler(), cm_dup_rep_handler()), after which the peer
   * waits 4.096 µs × 2^24 (68.7 s) plus its ACK timeout instead of resending every response timeout.
   */
  prepareMra(id: CmId, serviceTimeout: number = CmDefaults.mraServiceTimeout): void {
    const { what, next } = this.mraOf(id);
    id.lastMra = buildCmMad(
      { name: 'MRA', fields: { localCommId: id.localId, remoteCommId: id.remoteId, messageMraed: what, serviceTimeout, privateData: new Uint8Array(0) } },
      { transactionId: id.tid },
    );
    this.setState(id, next, 'MRA prepared (sent on a duplicate)');
  }

  /** The message an MRA of `id` acknowledges now, and the state it leaves the ID in. */
  private mraOf(id: CmId): { what: number; next: CmState } {
    let what: number;
    let next: CmState;
    if (id.state === CmState.REQ_RCVD || id.state === CmState.MRA_REQ_SENT) {
      what = MraMessage.REQ;
      next = CmState.MRA_REQ_SENT;
    } else if (id.state === CmState.REP_RCVD || id.state === CmState.MRA_REP_SENT) {
      what = MraMessage.REP;
      next = CmState.MRA_REP_SENT;
    } else {
      throw new VerbsError(VerbsErrorCode.BadState, `CM MRA: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    }
    return { what, next };
  }

  /** Active side, after the QP reached RTS: the RTU (ib_send_cm_rtu). */
  sendRtu(id: CmId, privateData: Uint8Array = new Uint8Array(0)): void {
    if (id.state !== CmState.REP_RCVD && id.state !== CmState.MRA_REP_SENT) {
      throw new VerbsError(VerbsErrorCode.BadState, `CM RTU: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    }
    id.lastRtu = this.transmit(id.peer as MadPeer, { name: 'RTU', fields: { localCommId: id.localId, remoteCommId: id.remoteId, privateData } }, id.tid);
    this.setState(id, CmState.ESTABLISHED, 'RTU sent');
  }

  /** ib_send_cm_dreq: only an established connection is disconnected this way. */
  sendDreq(id: CmId, privateData: Uint8Array = new Uint8Array(0)): void {
    if (id.state !== CmState.ESTABLISHED)
      throw new VerbsError(VerbsErrorCode.BadState, `CM DREQ: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    id.tid = this.formTid(id);
    this.setState(id, CmState.DREQ_SENT, 'DREQ sent');
    this.sendWithRetries(
      id,
      { name: 'DREQ', fields: { localCommId: id.localId, remoteCommId: id.remoteId, remoteQpnEecn: id.conn.remoteQpn, privateData } },
      id.tid,
    );
  }

  /** ib_send_cm_drep: the answer to the peer's DREQ; then TimeWait. */
  sendDrep(id: CmId, privateData: Uint8Array = new Uint8Array(0)): void {
    if (id.state !== CmState.DREQ_RCVD)
      throw new VerbsError(VerbsErrorCode.BadState, `CM DREP: communication 0x${id.localId.toString(16)} is in ${cmStateName(id.state)}`);
    id.lastDrep = this.transmit(id.peer as MadPeer, { name: 'DREP', fields: { localCommId: id.localId, remoteCommId: id.remoteId, privateData } }, id.dreqTid);
    this.enterTimewait(id, 'DREP sent');
  }

  /**
   * The QP of a passive connection received its first packet before the RTU (IBTA allows the
   * passive side to count the connection established then; the kernel's ib_cm_notify() with
   * IB_EVENT_COMM_EST, cm_establish()).
   */
  establish(id: CmId): void {
    if (id.state !== CmState.REP_SENT && id.state !== CmState.MRA_REP_RCVD) return;
    this.cancelOutstanding(id);
    this.setState(id, CmState.ESTABLISHED, 'first packet on the QP (communication established)');
    this.emit({ type: 'USER_ESTABLISHED', id });
  }

  /**
   * A received REQ (or SIDR_REQ) the consumer has no room for: the ID goes back to idle and is
   * forgotten without a REJ, so the peer's REQ retries may find room later (cm.c cm_destroy_id():
   * REQ_RCVD with -ENOMEM, "Do not reject to allow future retries", which ucma returns when a
   * listener's backlog is used up).
   */
  dropRequest(id: CmId): void {
    if (id.destroyed) return;
    id.destroyed = true;
    this.resetToIdle(id, 'no room in the listen backlog');
    this.forget(id);
  }

  /** cm.c cm_destroy_id(): leaves the peer told (REJ, DREQ or DREP as the state asks) and forgets the ID. */
  destroy(id: CmId): void {
    if (id.destroyed) return;
    switch (id.state) {
      case CmState.REQ_SENT:
      case CmState.MRA_REQ_RCVD: {
        // cm_destroy_id(): REJ with reason timeout and our CA GUID as additional information (captures/rxe).
        const ari = new Uint8Array(8);
        new DataView(ari.buffer).setBigUint64(0, this.caGuid);
        this.reject(id, RejReason.TIMEOUT, new Uint8Array(0), ari);
        break;
      }
      case CmState.REQ_RCVD:
      case CmState.MRA_REQ_SENT:
      case CmState.REP_SENT:
      case CmState.MRA_REP_RCVD:
      case CmState.REP_RCVD:
      case CmState.MRA_REP_SENT:
        this.reject(id, RejReason.CONSUMER_DEFINED);
        break;
      case CmState.ESTABLISHED:
        this.sendDreq(id);
        this.enterTimewait(id, 'destroyed');
        break;
      case CmState.DREQ_SENT:
        this.enterTimewait(id, 'destroyed');
        break;
      case CmState.DREQ_RCVD:
        this.sendDrep(id);
        break;
      case CmState.SIDR_REQ_SENT:
        this.cancelOutstanding(id);
        break;
      case CmState.SIDR_REQ_RCVD:
        this.sendSidrRep(id, { status: SidrStatus.REJECT, qpn: 0, qkey: 0, privateData: new Uint8Array(0) });
        break;
      default:
        break;
    }
    id.destroyed = true;
    this.cancelOutstanding(id);
    // An ID in TimeWait stays in the remote tables until the TimeWait timer ends (stale connections are still recognised).
    if (id.state !== CmState.TIMEWAIT) this.forget(id);
    this.dev.flush();
  }

  /** Stops the CM: every timer cancelled, QP 1 given back to the device. */
  close(): void {
    for (const id of this.ids.values()) {
      this.cancelOutstanding(id);
      if (id.timewaitTimer !== null) this.clock.cancel(id.timewaitTimer);
      id.timewaitTimer = null;
    }
    this.gsi.close();
  }

  // ------------------------------------------------------------------ state helpers

  /** cm.c cm_reset_to_idle(). */
  resetToIdle(id: CmId, why: string): void {
    this.cancelOutstanding(id);
    this.removeRemote(id);
    this.setState(id, CmState.IDLE, why);
  }

  /**
   * cm.c cm_enter_timewait(): TIMEWAIT for the local ACK timeout of the path, so that packets of the
   * old connection die out before its QP numbers are used again; then TIMEWAIT_EXIT.
   */
  enterTimewait(id: CmId, why: string): void {
    this.cancelOutstanding(id);
    if (id.timewaitTimer !== null) this.clock.cancel(id.timewaitTimer);
    this.setState(id, CmState.TIMEWAIT, why);
    id.timewaitTimer = this.clock.schedule(this.clock.now() + cmTimeNs(id.conn.localAckTimeout), () => {
      id.timewaitTimer = null;
      if (id.state !== CmState.TIMEWAIT) return;
      this.removeRemote(id);
      this.setState(id, CmState.IDLE, 'TimeWait over');
      if (id.destroyed) this.forget(id);
      else this.emit({ type: 'TIMEWAIT_EXIT', id });
    });
  }

  private forget(id: CmId): void {
    this.removeRemote(id);
    if (id.timewaitTimer !== null) this.clock.cancel(id.timewaitTimer);
    id.timewaitTimer = null;
    if (this.ids.get(id.localId) === id) this.ids.delete(id.localId);
  }

  // ------------------------------------------------------------------ receiving

  private receive(m: ReceivedMad): void {
    const name = CM_ATTR_NAMES[m.header.attributeId];
    const msg = name === undefined ? null : parseCmMessage(m.header.attributeId, m.view, MAD_HEADER_LEN, m.mad.length);
    if (msg === null) {
      this.gsi.counters.gsi_unknown_attribute++; // cm_recv_handler() drops attributes it has no case for
      return;
    }
    this.counters.cm_rx_msgs[msg.name.toLowerCase() as CmCounterKey]++;
    RECEIVE_HANDLERS[msg.name](this, msg.fields as never, m);
  }
}
