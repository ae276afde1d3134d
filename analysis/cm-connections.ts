/**
 * RDMA CM connections as a capture shows them: one record per communication-ID pair (IBTA vol. 1
 * §12.6: each end names a connection by its Local Communication ID, and every message after the
 * REQ carries both), from the REQ (or the first message the capture holds) to its end: the REP and
 * RTU that establish it, the MRAs, REJ, DREQ/DREP that end it, and SIDR_REQ/SIDR_REP for a UD
 * service lookup (§12.11). Per connection: the hosts, QPNs and starting PSNs of REQ and REP, the
 * service ID (and, for an ID of the RDMA IP CM range of Annex A11, port space and port), how long
 * each step took, how often each message was sent (a REQ, REP, DREQ or SIDR_REQ sent again is a
 * retry after the sender's response timeout; an MRA, RTU, DREP or REJ sent again answers a
 * duplicate), and the state it was in when the capture ended.
 *
 * A REQ from an endpoint whose communication ID is known starts a new connection unless it repeats
 * that connection's REQ (same QPN and starting PSN) while the connection is still being set up or
 * live: the kernel's cm.c hands out IDs xor-ed with a random operand, so a new connection with the
 * same ID comes only after the old one is over. A message that names no connection the capture
 * holds (the capture started after the REQ) starts one in state `incomplete`.
 */
import type { CmMessage } from '../packets/cm/message';
import { TransportServiceType } from '../packets/cm/req';
import { MRA_MESSAGE_NAMES } from '../packets/cm/mra';
import { REJ_MESSAGE_NAMES, RejReason, rejReasonText } from '../packets/cm/rej';
import { SIDR_STATUS_NAMES, SidrStatus } from '../packets/cm/sidr-rep';
import { PORT_SPACE_NAMES, isIpCmServiceId, splitServiceId } from '../packets/cm/service-id';
import { type IpCmPrivateData, ipCmAddressToString } from '../packets/cm/ip-private-data';

/** 4.096 µs × 2^code in nanoseconds (CM timeout codes: MRA service timeout, response timeouts). */
const cmCodeNs = (code: number): number => 4096 * 2 ** code;

/** Where a connection stood when the capture ended. */
export const CmConnectionState = {
  /** REQ (or SIDR_REQ) sent, nothing answered it yet. */
  CONNECTING: 'connecting',
  /** REP sent, neither the RTU nor a packet on the new QPs seen yet. */
  REP_SENT: 'repSent',
  ESTABLISHED: 'established',
  /** DREQ sent, no DREP yet. */
  DISCONNECTING: 'disconnecting',
  DISCONNECTED: 'disconnected',
  /** A REJ ended it (any reason but timeout). */
  REJECTED: 'rejected',
  /** The active side gave up: REJ with reason 4 (timeout), as cm.c sends when its REQ went unanswered or the ID was destroyed. */
  TIMED_OUT: 'timedOut',
  /** At the end of the capture a REQ, REP or SIDR_REQ was still unanswered. */
  UNANSWERED: 'unanswered',
  /** SIDR_REP with status success. */
  RESOLVED: 'resolved',
  /** SIDR_REP with another status. */
  SIDR_REFUSED: 'sidrRefused',
  /** The capture holds no REQ (SIDR_REQ) for it: it started before the capture. */
  INCOMPLETE: 'incomplete',
} as const;
export type CmConnectionState = (typeof CmConnectionState)[keyof typeof CmConnectionState];

/** One end of a CM connection. */
export interface CmEnd {
  ip: string;
  /** Local Communication ID (SIDR: the request ID on the active side); null until the capture shows it. */
  commId: number | null;
  qpn: number | null;
  /** Starting PSN its REQ or REP carried: the first PSN its receive queue expects, and the peer's first send PSN. */
  startPsn: number | null;
}

/** How often one kind of message was captured for the connection. */
export interface CmMessageCount {
  count: number;
  firstFrame: number;
  lastFrame: number;
  firstNs: number;
  lastNs: number;
}

export interface CmMraRecord {
  frame: number;
  timeNs: number;
  /** 'active' or 'passive': who sent it. */
  from: 'active' | 'passive';
  /** The message it acknowledges: REQ, REP or LAP. */
  messageMraed: string;
  /** Service timeout code, and as time (4.096 µs × 2^code): how long its sender asks the peer to wait. */
  serviceTimeout: number;
  serviceTimeoutNs: number;
}

export interface CmRejRecord {
  frame: number;
  timeNs: number;
  from: 'active' | 'passive';
  /** The message rejected: REQ, REP or other. */
  messageRejected: string;
  reason: number;
  /** The kernel's name of the reason (enum ib_cm_rej_reason without IB_CM_REJ_), e.g. INVALID_SERVICE_ID. */
  reasonName: string;
  /** IBTA table 109's meaning, e.g. "invalid service ID". */
  reasonText: string;
}

export interface CmConnection {
  id: number;
  /** 'RC', 'UC', 'XRC' or 'RD' from the REQ's transport service type; 'SIDR' for a service ID resolution; null when the capture holds no REQ. */
  transport: string | null;
  /** False when the capture holds no REQ: which end was the active one is then a guess (the sender of the first message captured). */
  rolesKnown: boolean;
  active: CmEnd;
  passive: CmEnd;
  /** Service ID as 16 hex digits, or null. */
  serviceId: string | null;
  /** For an RDMA IP CM service ID (Annex A11): port space (TCP, UDP, IB, IPoIB or its number) and port. */
  portSpace: string | null;
  port: number | null;
  /** The REQ's (SIDR_REQ's) IP CM private data header: addresses and source port as the active side gave them. */
  ipCm: { srcAddr: string; dstAddr: string; srcPort: number } | null;
  /** The RC conversation the REQ and REP set up (null for SIDR, a REQ never answered, or no REQ in the capture). */
  conversation: number | null;
  firstFrame: number;
  lastFrame: number;
  startNs: number;
  /** Messages captured, by name (REQ, MRA, REP, RTU, REJ, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR). */
  messages: Partial<Record<string, CmMessageCount>>;
  /** REQ, REP, DREQ, SIDR_REQ sent again (count − 1 of each): after the sender's response timeout, or (a REP) to answer a duplicate REQ. */
  retries: { req: number; rep: number; dreq: number; sidrReq: number };
  /** First REQ to first REP (SIDR: first SIDR_REQ to SIDR_REP). */
  reqToRepNs: number | null;
  /** First REP to first RTU (null when the capture holds no RTU). */
  repToRtuNs: number | null;
  /** First REP to the first packet on the connection's QPs: without an RTU, that packet establishes the passive side (IBTA vol. 1 §12.9.8.3 "communication established"; the kernel's IB_EVENT_COMM_EST). */
  repToFirstPacketNs: number | null;
  /** What established the connection: the RTU, or the first packet on its QPs when it came first (RTU lost, not captured, or sent later); null when neither came. */
  establishedBy: 'RTU' | 'firstPacket' | null;
  /** The first packet on the connection's QPs. */
  firstDataFrame: number | null;
  mras: CmMraRecord[];
  rej: CmRejRecord | null;
  /** First DREQ to first DREP, and who sent the first DREQ. */
  dreqToDrepNs: number | null;
  disconnectedBy: 'active' | 'passive' | null;
  /** SIDR_REP: status (and its meaning), the QPN and Q_Key of the service. */
  sidr: { status: number; statusText: string; qpn: number; qkey: number } | null;
  state: CmConnectionState;
}

const hex16 = (v: bigint): string => v.toString(16).padStart(16, '0');
const REJ_REASON_NAMES: Readonly<Record<number, string>> = Object.freeze(Object.fromEntries(Object.entries(RejReason).map(([k, v]) => [v, k])));
const TRANSPORT: Readonly<Record<number, string>> = {
  [TransportServiceType.RC]: 'RC',
  [TransportServiceType.UC]: 'UC',
  [TransportServiceType.RD]: 'RD',
  [TransportServiceType.EXTENDED]: 'XRC',
};

/** Which end sent a message naming the connection by `local` (the sender's ID) and `remote`: by ID where known, else by address. */
function senderRole(c: CmConnection, f: CmFrame, local: number, remote: number): 'active' | 'passive' {
  if (local !== 0 && c.passive.commId === local && c.passive.ip === f.src) return 'passive';
  if (local !== 0 && c.active.commId === local && c.active.ip === f.src) return 'active';
  if (c.active.ip !== c.passive.ip) return c.active.ip === f.src ? 'active' : 'passive';
  return remote !== 0 && c.active.commId === remote ? 'passive' : 'active';
}

/** A CM message as the analyzer hands it over: the frame's addresses, number and time. */
export interface CmFrame {
  frame: number;
  timeNs: number;
  src: string;
  dst: string;
}

/** What the tracker asks of the conversation table (analysis/conversations.ts). */
export interface CmConversationHooks {
  /** A REQ and the first REP answering it: the RC conversation they set up (its id). */
  established(active: { ip: string; qpn: number; psn: number }, passive: { ip: string; qpn: number; psn: number }, connection: number): number;
  /** The first DREP (or a REJ) of a connection with a conversation: the conversation is over. */
  disconnected(conversation: number): void;
}

/** Open connections kept at most (the oldest are let go). */
const MAX_OPEN = 4096;

export class CmConnectionTracker {
  readonly list: CmConnection[] = [];
  count = 0;
  /** By `${ip}#${commId}` of either end (SIDR: `${ip}#sidr#${requestId}` of the active end). */
  private readonly byEnd = new Map<string, CmConnection>();
  private readonly byConversation = new Map<number, CmConnection>();

  constructor(
    private readonly hooks: CmConversationHooks,
    private readonly keep: boolean,
  ) {}

  private create(f: CmFrame, active: CmEnd, passive: CmEnd, rolesKnown: boolean): CmConnection {
    const c: CmConnection = {
      id: ++this.count,
      transport: null,
      rolesKnown,
      active,
      passive,
      serviceId: null,
      portSpace: null,
      port: null,
      ipCm: null,
      conversation: null,
      firstFrame: f.frame,
      lastFrame: f.frame,
      startNs: f.timeNs,
      messages: {},
      retries: { req: 0, rep: 0, dreq: 0, sidrReq: 0 },
      reqToRepNs: null,
      repToRtuNs: null,
      repToFirstPacketNs: null,
      establishedBy: null,
      firstDataFrame: null,
      mras: [],
      rej: null,
      dreqToDrepNs: null,
      disconnectedBy: null,
      sidr: null,
      state: rolesKnown ? CmConnectionState.CONNECTING : CmConnectionState.INCOMPLETE,
    };
    if (this.keep) this.list.push(c);
    return c;
  }

  private index(key: string, c: CmConnection): void {
    this.byEnd.delete(key);
    this.byEnd.set(key, c);
    if (this.byEnd.size > MAX_OPEN) this.byEnd.delete(this.byEnd.keys().next().value as string);
  }

  private setService(c: CmConnection, serviceId: bigint, ip: IpCmPrivateData | null): void {
    c.serviceId = hex16(serviceId);
    const sp = isIpCmServiceId(serviceId) ? splitServiceId(serviceId) : null;
    if (sp !== null) {
      c.portSpace = PORT_SPACE_NAMES[sp.portSpace] ?? `0x${sp.portSpace.toString(16).padStart(4, '0')}`;
      c.port = sp.port;
    }
    if (ip !== null && (ip.ipVersion === 4 || ip.ipVersion === 6)) {
      c.ipCm = { srcAddr: ipCmAddressToString(ip.srcAddr, ip.ipVersion), dstAddr: ipCmAddressToString(ip.dstAddr, ip.ipVersion), srcPort: ip.srcPort };
    }
  }

  /** The connection a message from `f.src` names by its sender's ID `local` and its receiver's ID `remote`. */
  private lookup(f: CmFrame, local: number, remote: number): CmConnection | null {
    if (local !== 0) {
      const c = this.byEnd.get(`${f.src}#${local}`);
      if (c !== undefined) return c;
    }
    if (remote !== 0) {
      const c = this.byEnd.get(`${f.dst}#${remote}`);
      if (c !== undefined) return c;
    }
    return null;
  }

  /**
   * The connection of a message that is not a REQ, created `incomplete` when the capture holds
   * none; `senderActive` says which role the sender plays when the message tells (REP: passive;
   * RTU: active), else the sender is taken as the active end.
   */
  private named(f: CmFrame, local: number, remote: number, senderActive: boolean | null): { c: CmConnection; from: 'active' | 'passive' } {
    let c = this.lookup(f, local, remote);
    if (c === null) {
      const sender: CmEnd = { ip: f.src, commId: local === 0 ? null : local, qpn: null, startPsn: null };
      const receiver: CmEnd = { ip: f.dst, commId: remote === 0 ? null : remote, qpn: null, startPsn: null };
      c = senderActive === false ? this.create(f, receiver, sender, true) : this.create(f, sender, receiver, senderActive === true);
      c.state = CmConnectionState.INCOMPLETE;
      c.rolesKnown = senderActive !== null;
    }
    const from = senderRole(c, f, local, remote);
    const me = from === 'active' ? c.active : c.passive;
    const peer = from === 'active' ? c.passive : c.active;
    if (local !== 0 && me.commId === null) {
      me.commId = local;
      this.index(`${me.ip}#${local}`, c);
    }
    if (remote !== 0 && peer.commId === null) {
      peer.commId = remote;
      this.index(`${peer.ip}#${remote}`, c);
    }
    if (local !== 0) this.index(`${me.ip}#${local}`, c);
    return { c, from };
  }

  private count1(c: CmConnection, name: string, f: CmFrame): CmMessageCount {
    const have = c.messages[name];
    c.lastFrame = f.frame;
    if (have !== undefined) {
      have.count++;
      have.lastFrame = f.frame;
      have.lastNs = f.timeNs;
      return have;
    }
    const n = { count: 1, firstFrame: f.frame, lastFrame: f.frame, firstNs: f.timeNs, lastNs: f.timeNs };
    c.messages[name] = n;
    return n;
  }

  /** One CM message of the capture. */
  message(m: CmMessage, ipCm: IpCmPrivateData | null, f: CmFrame): void {
    switch (m.name) {
      case 'REQ': {
        const r = m.fields;
        const key = `${f.src}#${r.localCommId}`;
        const old = this.byEnd.get(key);
        const live =
          old !== undefined &&
          old.active.ip === f.src &&
          old.active.commId === r.localCommId &&
          old.active.qpn === r.localQpn &&
          old.active.startPsn === r.startingPsn;
        const over =
          old !== undefined &&
          (old.state === CmConnectionState.DISCONNECTED || old.state === CmConnectionState.REJECTED || old.state === CmConnectionState.TIMED_OUT);
        let c: CmConnection;
        if (old !== undefined && live && !over) {
          c = old;
        } else {
          c = this.create(
            f,
            { ip: f.src, commId: r.localCommId, qpn: r.localQpn, startPsn: r.startingPsn },
            { ip: f.dst, commId: null, qpn: null, startPsn: null },
            true,
          );
          c.transport = TRANSPORT[r.transportServiceType] ?? null;
          this.setService(c, r.serviceId, ipCm);
          this.index(key, c);
        }
        const n = this.count1(c, 'REQ', f);
        c.retries.req = n.count - 1;
        return;
      }
      case 'SIDR_REQ': {
        const r = m.fields;
        const key = `${f.src}#sidr#${r.requestId}`;
        let c = this.byEnd.get(key);
        if (c === undefined || c.state !== CmConnectionState.CONNECTING) {
          c = this.create(f, { ip: f.src, commId: r.requestId, qpn: null, startPsn: null }, { ip: f.dst, commId: null, qpn: null, startPsn: null }, true);
          c.transport = 'SIDR';
          this.setService(c, r.serviceId, ipCm);
          this.index(key, c);
        }
        const n = this.count1(c, 'SIDR_REQ', f);
        c.retries.sidrReq = n.count - 1;
        return;
      }
      case 'SIDR_REP': {
        const r = m.fields;
        let c = this.byEnd.get(`${f.dst}#sidr#${r.requestId}`);
        if (c === undefined) {
          c = this.create(f, { ip: f.dst, commId: r.requestId, qpn: null, startPsn: null }, { ip: f.src, commId: null, qpn: null, startPsn: null }, true);
          c.transport = 'SIDR';
          c.state = CmConnectionState.INCOMPLETE;
          this.setService(c, r.serviceId, null);
          this.index(`${f.dst}#sidr#${r.requestId}`, c);
        }
        const first = c.messages['SIDR_REP'] === undefined;
        this.count1(c, 'SIDR_REP', f);
        if (!first) return;
        const req = c.messages['SIDR_REQ'];
        c.reqToRepNs = req === undefined ? null : f.timeNs - req.firstNs;
        c.sidr = { status: r.status, statusText: SIDR_STATUS_NAMES[r.status] ?? `status ${r.status}`, qpn: r.qpn, qkey: r.qkey };
        if (r.status === SidrStatus.SUCCESS) c.passive.qpn = r.qpn;
        if (c.state === CmConnectionState.CONNECTING) c.state = r.status === SidrStatus.SUCCESS ? CmConnectionState.RESOLVED : CmConnectionState.SIDR_REFUSED;
        return;
      }
      case 'REP': {
        const r = m.fields;
        const { c } = this.named(f, r.localCommId, r.remoteCommId, false);
        const first = c.messages['REP'] === undefined;
        const n = this.count1(c, 'REP', f);
        c.retries.rep = n.count - 1;
        if (!first) return;
        c.passive.qpn = r.localQpn;
        c.passive.startPsn = r.startingPsn;
        const req = c.messages['REQ'];
        c.reqToRepNs = req === undefined ? null : f.timeNs - req.firstNs;
        if (c.state === CmConnectionState.CONNECTING) c.state = CmConnectionState.REP_SENT;
        if (c.transport === 'RC' && c.active.qpn !== null && c.active.startPsn !== null) {
          c.conversation = this.hooks.established(
            { ip: c.active.ip, qpn: c.active.qpn, psn: c.active.startPsn },
            { ip: c.passive.ip, qpn: r.localQpn, psn: r.startingPsn },
            c.id,
          );
          this.byConversation.set(c.conversation, c);
        }
        return;
      }
      case 'RTU': {
        const r = m.fields;
        const { c } = this.named(f, r.localCommId, r.remoteCommId, true);
        const first = c.messages['RTU'] === undefined;
        this.count1(c, 'RTU', f);
        if (!first) return;
        const rep = c.messages['REP'];
        c.repToRtuNs = rep === undefined ? null : f.timeNs - rep.firstNs;
        if (c.establishedBy === null) c.establishedBy = 'RTU';
        if (c.state === CmConnectionState.REP_SENT) c.state = CmConnectionState.ESTABLISHED;
        return;
      }
      case 'MRA': {
        const r = m.fields;
        // An MRA of a REQ comes from the passive end; of a REP from the active end.
        const { c, from } = this.named(f, r.localCommId, r.remoteCommId, r.messageMraed === 0 ? false : r.messageMraed === 1 ? true : null);
        this.count1(c, 'MRA', f);
        c.mras.push({
          frame: f.frame,
          timeNs: f.timeNs,
          from,
          messageMraed: MRA_MESSAGE_NAMES[r.messageMraed] ?? String(r.messageMraed),
          serviceTimeout: r.serviceTimeout,
          serviceTimeoutNs: cmCodeNs(r.serviceTimeout),
        });
        return;
      }
      case 'REJ': {
        const r = m.fields;
        // A REJ of a REQ comes from the passive end, of a REP from the active end; a timeout REJ (cm.c cm_destroy_id()) from the active end.
        const senderActive = r.messageRejected === 0 ? false : r.messageRejected === 1 ? true : r.reason === RejReason.TIMEOUT ? true : null;
        const { c, from } = this.named(f, r.localCommId, r.remoteCommId, senderActive);
        this.count1(c, 'REJ', f);
        if (c.rej !== null) return;
        c.rej = {
          frame: f.frame,
          timeNs: f.timeNs,
          from,
          messageRejected: REJ_MESSAGE_NAMES[r.messageRejected] ?? String(r.messageRejected),
          reason: r.reason,
          reasonName: REJ_REASON_NAMES[r.reason] ?? `REASON_${r.reason}`,
          reasonText: rejReasonText(r.reason),
        };
        if (c.state !== CmConnectionState.INCOMPLETE)
          c.state = r.reason === RejReason.TIMEOUT && from === 'active' ? CmConnectionState.TIMED_OUT : CmConnectionState.REJECTED;
        if (c.conversation !== null) this.hooks.disconnected(c.conversation);
        return;
      }
      case 'DREQ': {
        const r = m.fields;
        const { c, from } = this.named(f, r.localCommId, r.remoteCommId, null);
        const first = c.messages['DREQ'] === undefined;
        const n = this.count1(c, 'DREQ', f);
        c.retries.dreq = n.count - 1;
        if (!first) return;
        c.disconnectedBy = from;
        if (c.state !== CmConnectionState.INCOMPLETE && c.state !== CmConnectionState.DISCONNECTED) c.state = CmConnectionState.DISCONNECTING;
        return;
      }
      case 'DREP': {
        const r = m.fields;
        const { c } = this.named(f, r.localCommId, r.remoteCommId, null);
        const first = c.messages['DREP'] === undefined;
        this.count1(c, 'DREP', f);
        if (!first) return;
        const dreq = c.messages['DREQ'];
        c.dreqToDrepNs = dreq === undefined ? null : f.timeNs - dreq.firstNs;
        if (c.state !== CmConnectionState.INCOMPLETE) c.state = CmConnectionState.DISCONNECTED;
        // Both QPs are in ERR by now (rdma_disconnect() moves the QP to ERR before the DREQ; the DREQ's receiver before
        // its DREP), so nothing more of this connection can follow: the conversation ends here. At the DREQ a frame the
        // peer sent before it got the DREQ may still come.
        if (c.conversation !== null) this.hooks.disconnected(c.conversation);
        return;
      }
      case 'LAP':
      case 'APR': {
        const r = m.fields;
        const { c } = this.named(f, r.localCommId, r.remoteCommId, null);
        this.count1(c, m.name, f);
        return;
      }
    }
  }

  /** A packet of conversation `conv` (not a CM MAD): the first one after the REP establishes the connection if the RTU has not. */
  data(conversation: number, frame: number, timeNs: number): void {
    const c = this.byConversation.get(conversation);
    if (c === undefined || c.firstDataFrame !== null) return;
    c.firstDataFrame = frame;
    const rep = c.messages['REP'];
    c.repToFirstPacketNs = rep === undefined ? null : timeNs - rep.firstNs;
    if (c.establishedBy === null) c.establishedBy = 'firstPacket';
    if (c.state === CmConnectionState.REP_SENT) c.state = CmConnectionState.ESTABLISHED;
  }

  /** The end of the capture: what still waits for an answer is unanswered; a DREQ without DREP after an establishment stays disconnecting. */
  finish(): CmConnection[] {
    for (const c of this.list) {
      if (c.state === CmConnectionState.CONNECTING || c.state === CmConnectionState.REP_SENT) c.state = CmConnectionState.UNANSWERED;
    }
    return this.list;
  }
}
