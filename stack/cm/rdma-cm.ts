/**
 * An rdma_cm-style API over the connection manager (the kernel's cma.c and librdmacm, for RC over
 * RoCE v2): listen on a port of the TCP port space, connect with private data, accept, reject,
 * disconnect; events CONNECT_REQUEST, ESTABLISHED, REJECTED, UNREACHABLE, CONNECT_ERROR,
 * DISCONNECTED and TIMEWAIT_EXIT, named as librdmacm's RDMA_CM_EVENT_*.
 *
 * Addressing is IBTA vol. 1 Annex A11 as librdmacm uses it: the service ID is the port space and
 * port (packets/cm/service-id.ts); the REQ's private data starts with the IP CM header
 * (packets/cm/ip-private-data.ts: version, IP version, source port, source and destination
 * addresses) and the application's own private data (at most 56 bytes) follows it. The path is
 * what rxe fills in: the GIDs of the two addresses, the device's path MTU, traffic class = ToS,
 * hop limit 64, and the flow label cma.c derives from the ports (cma_get_roce_udp_flow_label()).
 *
 * The QP is moved as cma.c moves it: INIT when the ID is given it (rdma_create_qp), RTR and RTS on
 * the active side when the REP arrives (before the RTU goes out), and on the passive side before
 * the REP goes out (cma_accept_ib()). Between REP and RTU the passive side counts the connection
 * established on the RTU or on the QP's first packet, whichever comes first (QueuePair.onCommEst).
 */
import {
  ipCmAddressFromString,
  ipCmAddressToString,
  IP_CM_HEADER_LEN,
  CMA_VERSION,
  emitIpCmPrivateData,
  parseIpCmPrivateData,
} from '../../packets/cm/ip-private-data';
import { PortSpace, rdmaServiceId, splitServiceId } from '../../packets/cm/service-id';
import { REQ_PRIVATE_DATA_LEN } from '../../packets/cm/req';
import { REP_PRIVATE_DATA_LEN } from '../../packets/cm/rep';
import { RejReason, rejReasonText } from '../../packets/cm/rej';
import { QpState, QpType } from '../qp-type-and-state';
import { Access } from '../access-flags';
import type { Mtu } from '../mtu';
import { VerbsError, VerbsErrorCode, invalid } from '../errors';
import type { Device } from '../device';
import type { QueuePair } from '../queue-pair';
import type { AddressHandle } from '../address';
import { SIDR_STATUS_NAMES, SidrStatus } from '../../packets/cm/sidr-rep';
import { SIDR_REQ_PRIVATE_DATA_LEN } from '../../packets/cm/sidr-req';
import { ConnectionManager, type CmListener, type CmOptions } from './connection-manager';
import type { CmEvent } from './cm-event';
import type { CmId } from './cm-id';
import { CmState } from './cm-state';
import type { MadPeer } from './gsi';
import { sourceGidIndex } from './source-gid';

export type RdmaCmEvent =
  | { type: 'CONNECT_REQUEST'; id: RdmaCmId; privateData: Uint8Array; responderResources: number; initiatorDepth: number }
  /** `ud`: for a UD "connection" (SIDR), where to send: the peer's QP and Q_Key and an address handle. */
  | { type: 'ESTABLISHED'; id: RdmaCmId; privateData: Uint8Array; ud?: { qpn: number; qkey: number; ah: AddressHandle } }
  | { type: 'REJECTED'; id: RdmaCmId; reason: number; reasonText: string; privateData: Uint8Array }
  /** `status`: the rdma_cm event's status as cma.c sets it: -ETIMEDOUT (-110) for an unanswered REQ, REP or SIDR_REQ (and no neighbour), the SIDR_REP's status for a refused SIDR. */
  | { type: 'UNREACHABLE'; id: RdmaCmId; why: string; status: number }
  | { type: 'CONNECT_ERROR'; id: RdmaCmId; why: string }
  | { type: 'DISCONNECTED'; id: RdmaCmId }
  | { type: 'TIMEWAIT_EXIT'; id: RdmaCmId };

export type RdmaCmEventType = RdmaCmEvent['type'];
export type RdmaCmHandler = (e: RdmaCmEvent) => void;

/** rdma_conn_param. */
export interface ConnParam {
  privateData?: Uint8Array;
  /** RDMA READ/atomic requests the peer may have outstanding at us (default 1, as rping). */
  responderResources?: number;
  /** RDMA READ/atomic requests we may have outstanding (default 1). */
  initiatorDepth?: number;
  /** Transport retries (default 7) and RNR retries (default 7). */
  retryCount?: number;
  rnrRetryCount?: number;
}

export interface ConnectOptions {
  /** Destination address (dotted quad or IPv6) and port. */
  dst: string;
  port: number;
  /** The RC QP of the connection (moved to INIT at once). */
  qp: QueuePair;
  /** Source port of the IP CM header (default: an ephemeral port). */
  srcPort?: number;
  /** Type of service: the path's traffic class (default 0). */
  tos?: number;
  /** CM response timeout codes and max CM retries (defaults 20, 20 and 15, as librdmacm). */
  responseTimeout?: number;
  maxCmRetries?: number;
  /** rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) before rdma_connect: the QP's local ACK timeout (default the path's). */
  ackTimeout?: number;
  param?: ConnParam;
}

const USER_PRIVATE_DATA_LEN = REQ_PRIVATE_DATA_LEN - IP_CM_HEADER_LEN;
/** -ETIMEDOUT, the status cma.c gives UNREACHABLE for an unanswered REQ, REP or SIDR_REQ (cma_ib_handler(), cma_sidr_rep_handler()). */
const ETIMEDOUT = 110;
/** The Q_Key of librdmacm's UDP port space (rdma_cma.h RDMA_UDP_QKEY). */
export const RDMA_UDP_QKEY = 0x01234567;

/** Access flags cm.c gives a connected QP at INIT (cm_init_qp_init_attr()): remote write, and read and atomics when it has responder resources. */
function initAccess(responderResources: number): number {
  return Access.LOCAL_WRITE | Access.REMOTE_WRITE | (responderResources > 0 ? Access.REMOTE_READ | Access.REMOTE_ATOMIC : 0);
}

/** One connection (or a listener's request) of the rdma_cm API. */
export class RdmaCmId {
  qp: QueuePair | null = null;
  /** Addresses as text and ports of the two ends. */
  localAddr = '';
  localPort = 0;
  peerAddr = '';
  peerPort = 0;
  private disconnectedSent = false;
  /**
   * rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT): the local ACK timeout code the QP gets at RTS in
   * place of the one the CM computed from the path (cma.c rdma_init_qp_attr(): `if
   * (id_priv->timeout_set) qp_attr->timeout = id_priv->timeout`); null for the CM's. perftest -R
   * sets it from -u on both ends (perftest_communication.c).
   */
  ackTimeout: number | null = null;

  constructor(
    private readonly rcm: RdmaCm,
    readonly cmId: CmId,
    public handler: RdmaCmHandler,
  ) {}

  /** The CM state of the communication. */
  get cmState(): CmState {
    return this.cmId.state;
  }

  /** rdma_accept: moves `qp` to RTS with what the REQ offered and sends the REP. */
  accept(qp: QueuePair, param: ConnParam = {}): void {
    const id = this.cmId;
    if (id.state === CmState.SIDR_REQ_RCVD) {
      this.acceptUd(qp, param);
      return;
    }
    if (id.state !== CmState.REQ_RCVD && id.state !== CmState.MRA_REQ_SENT)
      throw new VerbsError(VerbsErrorCode.BadState, 'rdma accept: no connect request pending on this ID');
    if (qp.type !== QpType.RC) throw invalid('rdma accept: the QP must be RC');
    const c = id.conn;
    // librdmacm clamps what it accepts to what the REQ offered (rdma_accept(): ucma_valid_param()).
    const responderResources = Math.min(param.responderResources ?? c.responderResources, c.responderResources);
    const initiatorDepth = Math.min(param.initiatorDepth ?? c.initiatorDepth, c.initiatorDepth);
    const psn = this.rcm.cm.randomPsn();
    c.localQpn = qp.qpNum;
    c.localPsn = psn;
    c.responderResources = responderResources;
    c.initiatorDepth = initiatorDepth;
    try {
      this.bindQp(qp);
      this.toRtr();
      this.toRts();
    } catch (e) {
      this.rcm.cm.reject(id, RejReason.CONSUMER_DEFINED);
      this.rcm.cm.dev.flush();
      throw e;
    }
    this.rcm.cm.sendRep(id, {
      qpn: qp.qpNum,
      startingPsn: psn,
      responderResources,
      initiatorDepth,
      rnrRetryCount: param.rnrRetryCount ?? 7,
      privateData: limited(param.privateData, REP_PRIVATE_DATA_LEN),
    });
    const cm = this.rcm.cm;
    qp.onCommEst = () =>
      cm.clock.soon(() => {
        cm.establish(id);
        cm.dev.flush();
      });
    cm.dev.flush();
  }

  /** rdma_accept of a SIDR request: the UD QP (to RTS with the UDP port space's Q_Key if still in RESET) in a SIDR_REP. */
  private acceptUd(qp: QueuePair, param: ConnParam): void {
    if (qp.type !== QpType.UD) throw invalid('rdma accept: a UDP port space request needs a UD QP');
    this.qp = qp;
    if (qp.state === QpState.RESET) {
      qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: RDMA_UDP_QKEY });
      qp.modify({ qpState: QpState.RTR });
      qp.modify({ qpState: QpState.RTS, sqPsn: this.rcm.cm.randomPsn() });
    }
    this.rcm.cm.sendSidrRep(this.cmId, { status: SidrStatus.SUCCESS, qpn: qp.qpNum, qkey: qp.attr.qkey, privateData: limited(param.privateData, 136) });
    this.rcm.release(this.cmId);
    this.rcm.cm.dev.flush();
  }

  /** rdma_reject: REJ with reason 28 (consumer defined) and the private data (a SIDR request: SIDR_REP "rejected"). */
  reject(privateData?: Uint8Array): void {
    if (this.cmId.state === CmState.SIDR_REQ_RCVD) {
      this.rcm.cm.sendSidrRep(this.cmId, { status: SidrStatus.REJECT, qpn: 0, qkey: 0, privateData: limited(privateData, 136) });
      this.rcm.release(this.cmId);
      this.rcm.cm.dev.flush();
      return;
    }
    this.rcm.cm.reject(this.cmId, RejReason.CONSUMER_DEFINED, limited(privateData, 148));
    this.rcm.cm.dev.flush();
  }

  /** rdma_notify-free MRA: tells the peer we need `serviceTimeout` (4.096 µs × 2^n) to answer its REQ or REP. */
  delay(serviceTimeout?: number): void {
    this.rcm.cm.sendMra(this.cmId, serviceTimeout);
    this.rcm.cm.dev.flush();
  }

  /** rdma_disconnect: the QP to ERR, then DREQ (or the DREP to the peer's DREQ). */
  disconnect(privateData?: Uint8Array): void {
    const cm = this.rcm.cm;
    const id = this.cmId;
    if (this.qp !== null && this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.ERR });
    if (this.qp !== null) this.qp.onCommEst = null;
    if (id.state === CmState.REP_SENT || id.state === CmState.MRA_REP_RCVD) cm.establish(id);
    if (id.state === CmState.ESTABLISHED) cm.sendDreq(id, limited(privateData, 220));
    else if (id.state === CmState.DREQ_RCVD) cm.sendDrep(id, limited(privateData, 224));
    cm.dev.flush();
  }

  /** rdma_destroy_id: tells the peer what the state asks (REJ, DREQ, DREP) and forgets the ID. */
  destroy(): void {
    if (this.qp !== null) this.qp.onCommEst = null;
    this.rcm.cm.destroy(this.cmId);
  }

  /** The QP: to INIT now (rdma_create_qp). */
  bindQp(qp: QueuePair): void {
    this.qp = qp;
    if (qp.state !== QpState.RESET) qp.modify({ qpState: QpState.RESET });
    qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: initAccess(this.cmId.conn.responderResources) });
  }

  /** cma_modify_qp_rtr(): the peer's QPN, the PSN we advertised (ConnectionParams.localPsn), the path, the MTU, our responder resources. */
  toRtr(): void {
    const c = this.cmId.conn;
    const qp = this.qp as QueuePair;
    const peerGid = (this.cmId.peer as MadPeer).gid;
    qp.modify({
      qpState: QpState.RTR,
      ahAttr: {
        dgid: peerGid,
        sgidIndex: sourceGidIndex(this.rcm.dev.gids, peerGid),
        hopLimit: c.hopLimit,
        trafficClass: c.trafficClass,
        flowLabel: c.flowLabel,
      },
      pathMtu: c.pathMtu as Mtu,
      destQpNum: c.remoteQpn,
      rqPsn: c.localPsn,
      maxDestRdAtomic: c.responderResources,
      minRnrTimer: 12,
      qpAccessFlags: initAccess(c.responderResources),
    });
  }

  /** cma_modify_qp_rts(): the PSN the peer advertised (ConnectionParams.remotePsn), the ACK timeout of the path, the retry counts, our initiator depth. */
  toRts(): void {
    const c = this.cmId.conn;
    (this.qp as QueuePair).modify({
      qpState: QpState.RTS,
      sqPsn: c.remotePsn,
      timeout: this.ackTimeout ?? c.localAckTimeout,
      retryCnt: c.retryCount,
      rnrRetry: c.rnrRetryCount,
      maxRdAtomic: c.initiatorDepth,
    });
  }

  /** The CM's events as rdma_cm events (cma.c cma_ib_handler()). */
  onCmEvent(e: CmEvent): void {
    const cm = this.rcm.cm;
    switch (e.type) {
      case 'REP_RECEIVED': {
        this.rcm.mraIfSlow(this.cmId);
        try {
          this.toRtr();
          this.toRts();
        } catch (err) {
          if (!(err instanceof VerbsError)) throw err;
          cm.reject(this.cmId, RejReason.CONSUMER_DEFINED);
          this.handler({ type: 'CONNECT_ERROR', id: this, why: `QP could not be moved to RTS: ${err.message}` });
          return;
        }
        cm.sendRtu(this.cmId);
        this.handler({ type: 'ESTABLISHED', id: this, privateData: e.rep.privateData });
        return;
      }
      case 'RTU_RECEIVED':
      case 'USER_ESTABLISHED':
        if (this.qp !== null) this.qp.onCommEst = null;
        this.handler({ type: 'ESTABLISHED', id: this, privateData: this.cmId.privateData });
        return;
      case 'REJ_RECEIVED':
        this.qpToError();
        this.handler({ type: 'REJECTED', id: this, reason: e.rej.reason, reasonText: rejReasonText(e.rej.reason), privateData: e.rej.privateData });
        return;
      case 'REQ_ERROR':
      case 'REP_ERROR':
        this.qpToError();
        this.handler({
          type: 'UNREACHABLE',
          id: this,
          why: `${e.type === 'REQ_ERROR' ? 'REQ' : 'REP'} not answered after ${this.cmId.maxCmRetries} retries`,
          status: -ETIMEDOUT,
        });
        return;
      case 'DREQ_RECEIVED':
        this.qpToError();
        // librdmacm consumers answer DISCONNECTED with rdma_disconnect(); the DREP goes out at once here.
        cm.sendDrep(this.cmId);
        this.disconnected();
        return;
      case 'DREQ_ERROR':
      case 'DREP_RECEIVED':
        this.disconnected();
        return;
      case 'TIMEWAIT_EXIT':
        this.handler({ type: 'TIMEWAIT_EXIT', id: this });
        return;
      case 'SIDR_REP_RECEIVED': {
        // cma.c cma_sidr_rep_handler(): anything but success is UNREACHABLE.
        const r = e.rep;
        const ah = r.status === SidrStatus.SUCCESS ? cm.gsi.addressHandle((this.cmId.peer as MadPeer).gid) : null;
        if (ah === null) {
          this.handler({ type: 'UNREACHABLE', id: this, why: `SIDR_REP status ${r.status} (${SIDR_STATUS_NAMES[r.status] ?? 'unknown'})`, status: r.status });
          return;
        }
        this.handler({ type: 'ESTABLISHED', id: this, privateData: r.privateData, ud: { qpn: r.qpn, qkey: r.qkey, ah } });
        return;
      }
      case 'SIDR_REQ_ERROR':
        this.handler({ type: 'UNREACHABLE', id: this, why: `SIDR_REQ not answered after ${this.cmId.maxCmRetries} retries`, status: -ETIMEDOUT });
        return;
      default:
        return;
    }
  }

  private disconnected(): void {
    if (this.disconnectedSent) return;
    this.disconnectedSent = true;
    this.handler({ type: 'DISCONNECTED', id: this });
  }

  private qpToError(): void {
    const qp = this.qp;
    if (qp === null) return;
    qp.onCommEst = null;
    if (qp.state !== QpState.RESET && qp.state !== QpState.ERR) qp.modify({ qpState: QpState.ERR });
  }
}

export interface RdmaCmListener {
  port: number;
  portSpace: number;
  /** Connection requests handed over and not yet accepted or rejected, at most (rdma_listen's backlog). */
  readonly backlog: number;
  /** Requests dropped because that many were pending (no REJ: the peer's retries may find room later). */
  readonly requestsDropped: number;
  close(): void;
}

/** rdma_listen's backlog when none is given, and the most it may be (ucma.c max_backlog, 1024). */
export const MAX_LISTEN_BACKLOG = 1024;

/** CM states of a request handed to the listener and not yet answered. */
const AWAITING_ANSWER: ReadonlySet<number> = new Set([CmState.REQ_RCVD, CmState.MRA_REQ_SENT, CmState.SIDR_REQ_RCVD]);

/** The rdma_cm of one device: its connection manager and the IDs of the API. */

/** A destination as the IP CM header carries it. */
type IpCmAddress = ReturnType<typeof ipCmAddressFromString>;

/** The private data of a REQ or SIDR_REQ: the IP CM header (Annex A11, cma.c `cma_hdr`), then the user's bytes. */
function ipCmPrivateData(dst: IpCmAddress, srcPort: number, srcAddr: Uint8Array, user: Uint8Array): Uint8Array {
  const pd = new Uint8Array(IP_CM_HEADER_LEN + user.length);
  emitIpCmPrivateData(
    { majorVersion: CMA_VERSION >>> 4, minorVersion: CMA_VERSION & 0xf, ipVersion: dst.ipVersion, reserved: 0, srcPort, srcAddr, dstAddr: dst.addr },
    new DataView(pd.buffer),
    0,
  );
  pd.set(user, IP_CM_HEADER_LEN);
  return pd;
}

/**
 * When the rdma_cm answers a REQ its consumer has not accepted yet, or a REP, with an MRA
 * (connection-manager.ts prepareMra()): 'delayed' as the kernel's cma.c does for RC (the MRA goes
 * out only to answer a duplicate of the REQ or REP), 'immediate' (at once, before the peer's
 * response timeout: ib_send_cm_mra() without IB_CM_MRA_FLAG_DELAY), or 'off'. SIDR never gets one
 * (cma.c: not for IB_QPT_UD).
 */
export const AutoMra = { DELAYED: 'delayed', IMMEDIATE: 'immediate', OFF: 'off' } as const;
export type AutoMra = (typeof AutoMra)[keyof typeof AutoMra];

export interface RdmaCmOptions extends CmOptions {
  /** Default 'delayed', as the kernel's rdma_cm. */
  autoMra?: AutoMra;
}

export class RdmaCm {
  readonly cm: ConnectionManager;
  readonly autoMra: AutoMra;
  private readonly byCmId = new Map<CmId, RdmaCmId>();

  constructor(
    readonly dev: Device,
    o: RdmaCmOptions = {},
  ) {
    this.cm = new ConnectionManager(dev, o);
    this.autoMra = o.autoMra ?? AutoMra.DELAYED;
  }

  /**
   * cma.c cma_ib_req_handler() after the connect request event, cma_ib_handler() on
   * IB_CM_REP_RECEIVED: an RC ID still waiting in REQ_RCVD (REP_RCVD) gets its MRA prepared
   * ('delayed') or sent ('immediate'). For a REP the MRA is only prepared: the RTU follows at once.
   */
  mraIfSlow(cmId: CmId): void {
    if (this.autoMra === AutoMra.OFF || cmId.destroyed) return;
    if (cmId.state === CmState.REQ_RCVD && this.autoMra === AutoMra.IMMEDIATE) this.cm.sendMra(cmId);
    else if (cmId.state === CmState.REQ_RCVD || cmId.state === CmState.REP_RCVD) this.cm.prepareMra(cmId);
    else return;
    this.dev.flush();
  }

  /**
   * rdma_listen on `port`: CONNECT_REQUEST events (and every later event of the new IDs) go to
   * `handler`. At most `backlog` requests wait for an answer (accept or reject) at a time; past it
   * a new request is dropped without a REJ, as ucma does when the backlog is used up, so a flood of
   * REQs holds at most `backlog` IDs (a backlog of 0, or one over 1024, means 1024, as ucma.c).
   */
  listen(port: number, handler: RdmaCmHandler, portSpace: number = PortSpace.TCP, backlog = MAX_LISTEN_BACKLOG): RdmaCmListener {
    const max = Number.isInteger(backlog) && backlog > 0 && backlog <= MAX_LISTEN_BACKLOG ? backlog : MAX_LISTEN_BACKLOG;
    const pending = new Set<RdmaCmId>();
    let dropped = 0;
    const admit = (cmId: CmId): boolean => {
      for (const p of pending) if (p.cmId.destroyed || !AWAITING_ANSWER.has(p.cmId.state)) pending.delete(p);
      if (pending.size < max) return true;
      dropped++;
      this.cm.dropRequest(cmId);
      return false;
    };
    const l: CmListener = this.cm.listen(rdmaServiceId(portSpace, port), (e) => this.onRequest(e, handler, admit, pending));
    return {
      port,
      portSpace,
      backlog: max,
      get requestsDropped() {
        return dropped;
      },
      close: () => this.cm.stopListening(l),
    };
  }

  /**
   * rdma_resolve_addr + rdma_resolve_route + rdma_connect: the QP to INIT, then the REQ. A peer
   * without a neighbour entry gets UNREACHABLE (soon, as an event) rather than an exception.
   */
  connect(o: ConnectOptions, handler: RdmaCmHandler): RdmaCmId {
    if (o.qp.type !== QpType.RC) throw invalid('rdma connect: the QP must be RC');
    if (!Number.isInteger(o.port) || o.port < 0 || o.port > 0xffff) throw invalid(`rdma connect: port ${o.port} is out of range`);
    const user = o.param?.privateData ?? new Uint8Array(0);
    if (user.length > USER_PRIVATE_DATA_LEN)
      throw invalid(`rdma connect: ${user.length} bytes of private data exceed ${USER_PRIVATE_DATA_LEN} (92 less the IP CM header)`);
    const a = this.activeId(o.dst, o.port, handler);
    if (a.srcIp === null) return a.id;
    const { id, cmId, dst, peerGid, srcIp } = a;
    if (o.ackTimeout !== undefined) id.ackTimeout = o.ackTimeout;
    const localGid = dst.ipVersion === 4 ? v4MappedGid(srcIp) : srcIp;
    const srcPort = o.srcPort ?? this.cm.randomPort();
    id.localAddr = ipCmAddressToString(srcIp, dst.ipVersion);
    id.localPort = srcPort;
    const param = o.param ?? {};
    const responderResources = param.responderResources ?? 1;
    const initiatorDepth = param.initiatorDepth ?? 1;
    cmId.conn.responderResources = responderResources;
    id.bindQp(o.qp);
    const pd = ipCmPrivateData(dst, srcPort, srcIp, user);
    this.cm.sendReq(cmId, {
      peerGid,
      localGid,
      serviceId: rdmaServiceId(PortSpace.TCP, o.port),
      qpn: o.qp.qpNum,
      startingPsn: this.cm.randomPsn(),
      pathMtu: this.dev.maxMtu(),
      responderResources,
      initiatorDepth,
      retryCount: param.retryCount ?? 7,
      rnrRetryCount: param.rnrRetryCount ?? 7,
      trafficClass: o.tos ?? 0,
      hopLimit: 64,
      // cma.c cma_get_roce_udp_flow_label(): (source port × 31 + destination port), 20 bits.
      flowLabel: (srcPort * 31 + o.port) & 0xfffff,
      privateData: pd,
      ...(o.responseTimeout !== undefined ? { localCmResponseTimeout: o.responseTimeout, remoteCmResponseTimeout: o.responseTimeout } : {}),
      ...(o.maxCmRetries !== undefined ? { maxCmRetries: o.maxCmRetries } : {}),
    });
    this.dev.flush();
    return id;
  }

  /**
   * rdma_connect on the UDP port space: a SIDR_REQ for `port` (IP CM header and private data), and
   * ESTABLISHED with the peer's QPN, Q_Key and an address handle when the SIDR_REP says success.
   */
  resolveUd(
    o: { dst: string; port: number; srcPort?: number; privateData?: Uint8Array; responseTimeout?: number; maxCmRetries?: number },
    handler: RdmaCmHandler,
  ): RdmaCmId {
    const user = o.privateData ?? new Uint8Array(0);
    if (user.length > SIDR_REQ_PRIVATE_DATA_LEN - IP_CM_HEADER_LEN)
      throw invalid(`rdma connect (UDP): ${user.length} bytes of private data exceed ${SIDR_REQ_PRIVATE_DATA_LEN - IP_CM_HEADER_LEN}`);
    const a = this.activeId(o.dst, o.port, handler);
    if (a.srcIp === null) return a.id;
    const { id, cmId, dst, peerGid, srcIp } = a;
    id.localAddr = ipCmAddressToString(srcIp, dst.ipVersion);
    id.localPort = o.srcPort ?? this.cm.randomPort();
    const pd = ipCmPrivateData(dst, id.localPort, srcIp, user);
    this.cm.sendSidrReq(cmId, {
      peerGid,
      serviceId: rdmaServiceId(PortSpace.UDP, o.port),
      privateData: pd,
      ...(o.responseTimeout !== undefined ? { responseTimeout: o.responseTimeout } : {}),
      ...(o.maxCmRetries !== undefined ? { maxCmRetries: o.maxCmRetries } : {}),
    });
    this.dev.flush();
    return id;
  }

  /**
   * The active side's start (rdma_resolve_addr + rdma_resolve_route): a new id towards `dst`:`port`
   * and the source address of the route to it (16 bytes, IPv4 in the last 4 as the IP CM header
   * carries it), or `srcIp` null when there is none: the id is then forgotten and UNREACHABLE comes
   * soon, as an event rather than an exception.
   */
  private activeId(
    dstText: string,
    port: number,
    handler: RdmaCmHandler,
  ): { id: RdmaCmId; cmId: CmId; dst: IpCmAddress; peerGid: Uint8Array; srcIp: Uint8Array | null } {
    const cmId = this.cm.createId((e) => this.dispatch(e));
    const id = new RdmaCmId(this, cmId, handler);
    this.byCmId.set(cmId, id);
    const dst = ipCmAddressFromString(dstText);
    const peerGid = dst.ipVersion === 4 ? v4MappedGid(dst.addr) : dst.addr;
    const ah = this.cm.gsi.addressHandle(peerGid);
    id.peerAddr = dstText;
    id.peerPort = port;
    if (ah === null) {
      this.byCmId.delete(cmId);
      this.cm.clock.soon(() => handler({ type: 'UNREACHABLE', id, why: `no route or neighbour entry for ${dstText}`, status: -ETIMEDOUT }));
      return { id, cmId, dst, peerGid, srcIp: null };
    }
    const srcIp = dst.ipVersion === 4 ? padV4(ah.path.srcIp) : ah.path.srcIp.slice();
    return { id, cmId, dst, peerGid, srcIp };
  }

  /** The API forgets `cmId` (no more events can come for it). */
  release(cmId: CmId): void {
    this.byCmId.delete(cmId);
  }

  /** Stops the CM: its timers cancelled, QP 1 given back. */
  close(): void {
    this.cm.close();
  }

  private dispatch(e: CmEvent): void {
    const id = this.byCmId.get(e.id);
    if (id === undefined) return;
    id.onCmEvent(e);
    if (e.type === 'TIMEWAIT_EXIT' || (e.id.state === CmState.IDLE && e.type !== 'REQ_RECEIVED')) this.byCmId.delete(e.id);
  }

  /** A REQ for a listened port: a new ID with the IP CM header read, CONNECT_REQUEST to the listener. */
  private onRequest(e: CmEvent, handler: RdmaCmHandler, admit: (cmId: CmId) => boolean, pending: Set<RdmaCmId>): void {
    if (e.type !== 'REQ_RECEIVED' && e.type !== 'SIDR_REQ_RECEIVED') return;
    const cmId = e.id;
    if (!admit(cmId)) return;
    cmId.handler = (ev) => this.dispatch(ev);
    const id = new RdmaCmId(this, cmId, handler);
    this.byCmId.set(cmId, id);
    pending.add(id);
    const pdBytes = e.req.privateData;
    const ip = parseIpCmPrivateData(new DataView(pdBytes.buffer, pdBytes.byteOffset, pdBytes.length), 0);
    if (ip.majorVersion !== 0 || (ip.ipVersion !== 4 && ip.ipVersion !== 6)) {
      // cma.c cma_save_ip_info(): a header it cannot read is refused.
      if (e.type === 'SIDR_REQ_RECEIVED') this.cm.sendSidrRep(cmId, { status: SidrStatus.REJECT, qpn: 0, qkey: 0, privateData: new Uint8Array(0) });
      else this.cm.reject(cmId, RejReason.CONSUMER_DEFINED);
      this.byCmId.delete(cmId);
      return;
    }
    if (e.type === 'SIDR_REQ_RECEIVED') {
      id.peerAddr = ipCmAddressToString(ip.srcAddr, ip.ipVersion);
      id.peerPort = ip.srcPort;
      id.localAddr = ipCmAddressToString(ip.dstAddr, ip.ipVersion);
      id.localPort = splitServiceId(e.req.serviceId)?.port ?? 0;
      handler({ type: 'CONNECT_REQUEST', id, privateData: pdBytes.slice(IP_CM_HEADER_LEN), responderResources: 0, initiatorDepth: 0 });
      return;
    }
    id.peerAddr = ipCmAddressToString(ip.srcAddr, ip.ipVersion);
    id.peerPort = ip.srcPort;
    id.localAddr = ipCmAddressToString(ip.dstAddr, ip.ipVersion);
    id.localPort = splitServiceId(e.req.serviceId)?.port ?? 0;
    handler({
      type: 'CONNECT_REQUEST',
      id,
      privateData: e.req.privateData.slice(IP_CM_HEADER_LEN),
      responderResources: cmId.conn.initiatorDepth,
      initiatorDepth: cmId.conn.responderResources,
    });
    this.mraIfSlow(cmId);
  }
}

function limited(pd: Uint8Array | undefined, max: number): Uint8Array {
  const b = pd ?? new Uint8Array(0);
  if (b.length > max) throw invalid(`rdma cm: ${b.length} bytes of private data exceed ${max}`);
  return b;
}

/** 4 address bytes -> the 16 of an IP CM header (12 zero bytes first). */
function padV4(a4: Uint8Array): Uint8Array {
  const a = new Uint8Array(16);
  a.set(a4.subarray(a4.length - 4), 12);
  return a;
}

/** The IPv4-mapped GID of a padded IPv4 address. */
function v4MappedGid(padded: Uint8Array): Uint8Array {
  const g = padded.slice();
  g[10] = 0xff;
  g[11] = 0xff;
  return g;
}
