/**
 * What each CM message does to the communication it names, state by state: one function per
 * received message and one for the response timeout, as the kernel's cm.c has them
 * (cm_req_handler(), cm_rep_handler(), cm_rtu_handler(), cm_rej_handler(), cm_mra_handler(),
 * cm_dreq_handler(), cm_drep_handler(), cm_process_send_error()), after IBTA vol. 1 chapter 12's
 * CM state diagram. A message for no communication, or one the state does not take, is dropped
 * (duplicates counted in cm_rx_duplicates, as cm.c counts them) and never throws.
 */
import type { CmMessage, CmMessageName } from '../../packets/cm/message';
import { type CmReq, TransportServiceType } from '../../packets/cm/req';
import type { CmRep } from '../../packets/cm/rep';
import type { CmRtu } from '../../packets/cm/rtu';
import { type CmRej, RejMessage, RejReason } from '../../packets/cm/rej';
import { type CmMra, MraMessage } from '../../packets/cm/mra';
import type { CmDreq } from '../../packets/cm/dreq';
import type { CmDrep } from '../../packets/cm/drep';
import type { ConnectionManager } from './connection-manager';
import type { CmId } from './cm-id';
import type { MadPeer, ReceivedMad } from './gsi';
import { CmState } from './cm-state';
import { cmTimeNs, responseWaitNs } from './timers';
import { sidrReqReceived, sidrRepReceived } from './sidr';

/** The most READ/atomic requests a QP takes or has outstanding (rxe's max_qp_rd_atom, RXE_MAX_QP_RD_ATOM = 128). */
const MAX_RD_ATOMIC = 128;

type Fields<N extends CmMessageName> = Extract<CmMessage, { name: N }>['fields'];
type Handler<N extends CmMessageName> = (cm: ConnectionManager, msg: Fields<N>, m: ReceivedMad) => void;

function peerOf(m: ReceivedMad): MadPeer {
  return { gid: m.from.gid, qpn: m.from.qpn };
}

/** The ID a message for an established pair of IDs names: our ID in `remoteCommId`, theirs in `localCommId`. */
function pairedId(cm: ConnectionManager, ours: number, theirs: number): CmId | null {
  const id = cm.ids.get(ours);
  return id !== undefined && id.remoteId === theirs ? id : null;
}

// ---------------------------------------------------------------------- REQ (passive side)

/** cm_req_handler(): a duplicate, a stale connection, no listener, or a new communication in REQ_RCVD. */
function reqReceived(cm: ConnectionManager, req: CmReq, m: ReceivedMad): void {
  const from = peerOf(m);
  const tid = m.header.transactionId;
  const dup = cm.remoteIds.get(`${req.localCaGuid}/${req.localCommId}`);
  if (dup !== undefined) {
    duplicateReq(cm, dup, from);
    return;
  }
  // A REQ from a QP that still has a connection here (established, or in TimeWait): cm_match_req() rejects it as stale
  // and disconnects the old one.
  const stale = cm.remoteQpns.get(`${req.localCaGuid}/${req.localQpn}`);
  if (stale !== undefined) {
    cm.issueRej(from, tid, req.localCommId, 0, RejReason.STALE_CONN, RejMessage.REQ);
    if (stale.state === CmState.ESTABLISHED) cm.sendDreq(stale);
    return;
  }
  if (req.transportServiceType !== TransportServiceType.RC) {
    cm.issueRej(from, tid, req.localCommId, 0, RejReason.INVALID_TRANSPORT_TYPE, RejMessage.REQ);
    return;
  }
  const listener = cm.listeners.get(req.serviceId);
  if (listener === undefined) {
    cm.issueRej(from, tid, req.localCommId, 0, RejReason.INVALID_SERVICE_ID, RejMessage.REQ);
    return;
  }
  if (req.pathMtu < 1) {
    cm.issueRej(from, tid, req.localCommId, 0, RejReason.INVALID_MTU, RejMessage.REQ); // no IB MTU has code 0 (IBTA table 106 Path MTU)
    return;
  }
  const id = cm.createId(listener.handler);
  id.peer = from;
  id.remoteId = req.localCommId;
  id.remoteCaGuid = req.localCaGuid;
  id.serviceId = req.serviceId;
  id.tid = tid;
  const c = id.conn;
  c.remoteQpn = req.localQpn;
  c.remotePsn = req.startingPsn;
  c.pathMtu = Math.min(req.pathMtu, cm.dev.maxMtu());
  // What the peer may have outstanding at us is what we must accept, and the other way round.
  c.responderResources = Math.min(req.initiatorDepth, MAX_RD_ATOMIC);
  c.initiatorDepth = Math.min(req.responderResources, MAX_RD_ATOMIC);
  c.retryCount = req.retryCount;
  c.rnrRetryCount = req.rnrRetryCount;
  c.localAckTimeout = req.primaryLocalAckTimeout;
  c.trafficClass = req.primaryTrafficClass;
  c.hopLimit = req.primaryHopLimit;
  c.flowLabel = req.primaryFlowLabel;
  id.maxCmRetries = req.maxCmRetries;
  id.packetLifeTime = Math.max(0, req.primaryLocalAckTimeout - 1);
  // Our REP waits as long as the REQ's sender said it needs to answer (its local CM response timeout), there and back.
  id.responseWaitNs = responseWaitNs(id.packetLifeTime, req.localCmResponseTimeout);
  id.privateData = req.privateData;
  cm.insertRemote(id);
  cm.setState(id, CmState.REQ_RCVD, 'REQ received');
  cm.emit({ type: 'REQ_RECEIVED', id, req, from });
}

/**
 * cm_dup_req_handler(): the REQ's sender did not hear our answer. MRA_REQ_SENT: the MRA again;
 * REP_SENT: the REP again (the kernel waits for its own REP retry instead; IBTA lets the REP be
 * resent); TIMEWAIT: the connection is stale, REJ. Otherwise the REQ is dropped.
 */
function duplicateReq(cm: ConnectionManager, id: CmId, from: MadPeer): void {
  cm.counters.cm_rx_duplicates.req++;
  switch (id.state) {
    case CmState.MRA_REQ_SENT:
      if (id.lastMra !== null) cm.sendMad(from, id.lastMra, 'mra');
      break;
    case CmState.REP_SENT:
    case CmState.MRA_REP_RCVD:
      if (id.lastRep !== null) cm.sendMad(from, id.lastRep, 'rep');
      break;
    case CmState.TIMEWAIT:
      cm.transmit(
        from,
        {
          name: 'REJ',
          fields: {
            localCommId: id.localId,
            remoteCommId: id.remoteId,
            messageRejected: RejMessage.OTHER,
            rejectedInfoLength: 0,
            reason: RejReason.STALE_CONN,
            ari: new Uint8Array(0),
            privateData: new Uint8Array(0),
          },
        },
        id.tid,
      );
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------- REP, RTU

/** cm_rep_handler(): the answer to our REQ; a duplicate gets the RTU (or MRA) again (cm_dup_rep_handler()). */
function repReceived(cm: ConnectionManager, rep: CmRep, m: ReceivedMad): void {
  const id = cm.ids.get(rep.remoteCommId);
  if (id === undefined) return;
  if (id.state === CmState.REQ_SENT || id.state === CmState.MRA_REQ_RCVD) {
    // A REP from a remote QP that another connection here still has: stale, refused, and our REQ keeps waiting
    // for a proper answer (cm_rep_handler(): cm_insert_remote_qpn() fails, cm_issue_rej() for the REP).
    const other = cm.remoteQpns.get(`${rep.localCaGuid}/${rep.localQpn}`);
    if (other !== undefined && other !== id) {
      cm.issueRej(id.peer as MadPeer, m.header.transactionId, rep.localCommId, rep.remoteCommId, RejReason.STALE_CONN, RejMessage.REP);
      return;
    }
    cm.cancelOutstanding(id);
    id.remoteId = rep.localCommId;
    id.remoteCaGuid = rep.localCaGuid;
    const c = id.conn;
    c.remoteQpn = rep.localQpn;
    c.remotePsn = rep.startingPsn;
    c.initiatorDepth = Math.min(rep.responderResources, MAX_RD_ATOMIC);
    c.responderResources = Math.min(rep.initiatorDepth, MAX_RD_ATOMIC);
    c.rnrRetryCount = rep.rnrRetryCount;
    id.privateData = rep.privateData;
    cm.insertRemote(id);
    cm.setState(id, CmState.REP_RCVD, 'REP received');
    cm.emit({ type: 'REP_RECEIVED', id, rep });
    return;
  }
  if (id.remoteId !== rep.localCommId) return;
  cm.counters.cm_rx_duplicates.rep++;
  if (id.state === CmState.ESTABLISHED && id.lastRtu !== null) cm.sendMad(id.peer as MadPeer, id.lastRtu, 'rtu');
  else if (id.state === CmState.MRA_REP_SENT && id.lastMra !== null) cm.sendMad(id.peer as MadPeer, id.lastMra, 'mra');
}

/** cm_rtu_handler(): REP_SENT (or MRA_REP_RCVD) -> ESTABLISHED; anything else is a duplicate. */
function rtuReceived(cm: ConnectionManager, rtu: CmRtu): void {
  const id = pairedId(cm, rtu.remoteCommId, rtu.localCommId);
  if (id === null) return;
  if (id.state !== CmState.REP_SENT && id.state !== CmState.MRA_REP_RCVD) {
    cm.counters.cm_rx_duplicates.rtu++;
    return;
  }
  cm.cancelOutstanding(id);
  id.privateData = rtu.privateData;
  cm.setState(id, CmState.ESTABLISHED, 'RTU received');
  cm.emit({ type: 'RTU_RECEIVED', id });
}

// ---------------------------------------------------------------------- REJ, MRA

/** cm_acquire_rejected_id(): a timeout REJ names the sender by CA GUID (in its ARI) and ID; others by our ID. */
function rejectedId(cm: ConnectionManager, rej: CmRej): CmId | null {
  if (rej.reason === RejReason.TIMEOUT) {
    if (rej.ari.length < 8) return null;
    const guid = new DataView(rej.ari.buffer, rej.ari.byteOffset, 8).getBigUint64(0);
    return cm.remoteIds.get(`${guid}/${rej.localCommId}`) ?? null;
  }
  if (rej.messageRejected === RejMessage.REQ) return cm.ids.get(rej.remoteCommId) ?? null;
  return pairedId(cm, rej.remoteCommId, rej.localCommId);
}

/** cm_rej_handler(): back to IDLE, or TimeWait once the peer may have a QP towards us (or the REJ says stale). */
function rejReceived(cm: ConnectionManager, rej: CmRej): void {
  const id = rejectedId(cm, rej);
  if (id === null) return;
  const stale = rej.reason === RejReason.STALE_CONN;
  switch (id.state) {
    case CmState.REQ_SENT:
    case CmState.MRA_REQ_RCVD:
    case CmState.REP_SENT:
    case CmState.MRA_REP_RCVD:
    case CmState.REQ_RCVD:
    case CmState.MRA_REQ_SENT:
      if (stale) cm.enterTimewait(id, 'REJ (stale connection) received');
      else cm.resetToIdle(id, 'REJ received');
      break;
    case CmState.DREQ_SENT:
    case CmState.REP_RCVD:
    case CmState.MRA_REP_SENT:
    case CmState.ESTABLISHED:
      cm.enterTimewait(id, 'REJ received');
      break;
    default:
      return;
  }
  id.privateData = rej.privateData;
  cm.emit({ type: 'REJ_RECEIVED', id, rej });
}

/** cm_mra_handler(): the peer needs more time; wait its service timeout (plus the ACK timeout) before resending. */
function mraReceived(cm: ConnectionManager, mra: CmMra): void {
  const id = mra.messageMraed === MraMessage.REQ ? (cm.ids.get(mra.remoteCommId) ?? null) : pairedId(cm, mra.remoteCommId, mra.localCommId);
  if (id === null) return;
  let next: CmState;
  if (mra.messageMraed === MraMessage.REQ && id.state === CmState.REQ_SENT) next = CmState.MRA_REQ_RCVD;
  else if (mra.messageMraed === MraMessage.REP && id.state === CmState.REP_SENT) next = CmState.MRA_REP_RCVD;
  else {
    if (id.state === CmState.MRA_REQ_RCVD || id.state === CmState.MRA_REP_RCVD) cm.counters.cm_rx_duplicates.mra++;
    return;
  }
  const wait = cmTimeNs(mra.serviceTimeout) + cmTimeNs(id.conn.localAckTimeout);
  if (id.outstanding !== null) id.outstanding.timeoutNs = wait;
  cm.armOutstanding(id, wait);
  cm.setState(id, next, `MRA received (service timeout ${mra.serviceTimeout})`);
  cm.emit({ type: 'MRA_RECEIVED', id });
}

// ---------------------------------------------------------------------- DREQ, DREP

/**
 * cm_dreq_handler(): the peer disconnects. A DREQ crossing ours (DREQ_SENT) is taken like any
 * other: our DREQ is cancelled and the DREP we send answers theirs; their DREP to ours then finds
 * us in TimeWait and is dropped. In TimeWait a repeated DREQ gets a DREP again; for a
 * communication we no longer know, a DREP all the same (cm_issue_drep()).
 */
function dreqReceived(cm: ConnectionManager, dreq: CmDreq, m: ReceivedMad): void {
  const tid = m.header.transactionId;
  const id = pairedId(cm, dreq.remoteCommId, dreq.localCommId);
  if (id === null) {
    cm.counters.cm_rx_duplicates.dreq++;
    cm.issueDrep(peerOf(m), tid, dreq.localCommId, dreq.remoteCommId);
    return;
  }
  if (id.conn.localQpn !== dreq.remoteQpnEecn) return; // not for the QP of this connection
  switch (id.state) {
    case CmState.REP_SENT:
    case CmState.MRA_REP_RCVD:
    case CmState.DREQ_SENT:
      cm.cancelOutstanding(id);
      break;
    case CmState.ESTABLISHED:
      break;
    case CmState.TIMEWAIT:
      cm.counters.cm_rx_duplicates.dreq++;
      cm.issueDrep(id.peer as MadPeer, tid, id.remoteId, id.localId);
      return;
    case CmState.DREQ_RCVD:
      cm.counters.cm_rx_duplicates.dreq++;
      return;
    default:
      return;
  }
  id.dreqTid = tid;
  id.privateData = dreq.privateData;
  cm.setState(id, CmState.DREQ_RCVD, 'DREQ received');
  cm.emit({ type: 'DREQ_RECEIVED', id });
}

/** cm_drep_handler(): our DREQ answered (or theirs, if we answered it already): TimeWait. */
function drepReceived(cm: ConnectionManager, drep: CmDrep): void {
  const id = pairedId(cm, drep.remoteCommId, drep.localCommId);
  if (id === null || (id.state !== CmState.DREQ_SENT && id.state !== CmState.DREQ_RCVD)) return;
  id.privateData = drep.privateData;
  cm.enterTimewait(id, 'DREP received');
  cm.emit({ type: 'DREP_RECEIVED', id });
}

/** LAP and APR (alternate paths; RoCE has none): dropped, as rdma_cm never sends them. */
function ignored(): void {}

export const RECEIVE_HANDLERS: { readonly [N in CmMessageName]: Handler<N> } = Object.freeze({
  REQ: reqReceived,
  MRA: mraReceived,
  REJ: rejReceived,
  REP: repReceived,
  RTU: rtuReceived,
  DREQ: dreqReceived,
  DREP: drepReceived,
  SIDR_REQ: sidrReqReceived,
  SIDR_REP: sidrRepReceived,
  LAP: ignored,
  APR: ignored,
});

// ---------------------------------------------------------------------- timeouts

/**
 * The answer to the outstanding REQ, REP, DREQ or SIDR_REQ did not come in time: resend it while
 * retries are left (cm_tx_retries), else give up as cm_process_send_error() does: REQ and REP
 * back to IDLE with an error event, DREQ into TimeWait.
 */
export function onResponseTimeout(cm: ConnectionManager, id: CmId): void {
  const o = id.outstanding;
  if (o === null) return;
  if (o.retriesLeft > 0) {
    o.retriesLeft--;
    cm.counters.cm_tx_retries[o.key]++;
    cm.sendMad(id.peer as MadPeer, o.mad, o.key);
    cm.armOutstanding(id, o.timeoutNs);
    return;
  }
  id.outstanding = null;
  switch (id.state) {
    case CmState.REQ_SENT:
    case CmState.MRA_REQ_RCVD:
      cm.resetToIdle(id, 'REQ not answered');
      cm.emit({ type: 'REQ_ERROR', id });
      break;
    case CmState.REP_SENT:
    case CmState.MRA_REP_RCVD:
      cm.resetToIdle(id, 'REP not answered');
      cm.emit({ type: 'REP_ERROR', id });
      break;
    case CmState.DREQ_SENT:
      cm.enterTimewait(id, 'DREQ not answered');
      cm.emit({ type: 'DREQ_ERROR', id });
      break;
    case CmState.SIDR_REQ_SENT:
      cm.setState(id, CmState.IDLE, 'SIDR_REQ not answered');
      cm.emit({ type: 'SIDR_REQ_ERROR', id });
      break;
    default:
      break;
  }
}
