/**
 * Service ID Resolution (IBTA vol. 1 chapter 12, SIDR_REQ table 119 and SIDR_REP table 120): a UD
 * client asks which QP and Q_Key serve a service ID, as librdmacm's UDP port space does (udaddy).
 * As the kernel's cm.c: the SIDR_REQ's request ID is the sender's communication ID; the receiver
 * makes an ID in SIDR_REQ_RCVD for it (a repeated SIDR_REQ, known by the sender's GID and request
 * ID, is counted and dropped), or answers "service ID not supported" when nobody listens
 * (cm_sidr_req_handler()); the SIDR_REP returns both ends to IDLE (cm_sidr_rep_handler()).
 */
import type { CmSidrReq } from '../../packets/cm/sidr-req';
import { type CmSidrRep, SidrStatus } from '../../packets/cm/sidr-rep';
import { ipv6ToString } from '../../packets/bytes';
import type { ConnectionManager } from './connection-manager';
import type { ReceivedMad } from './gsi';
import { CmState } from './cm-state';

export function sidrKey(gid: Uint8Array, requestId: number): string {
  return `${ipv6ToString(gid)}/${requestId}`;
}

export function sidrReqReceived(cm: ConnectionManager, req: CmSidrReq, m: ReceivedMad): void {
  const from = { gid: m.from.gid, qpn: m.from.qpn };
  const key = sidrKey(from.gid, req.requestId);
  if (cm.remoteSidr.has(key)) {
    cm.counters.cm_rx_duplicates.sidr_req++;
    return;
  }
  const listener = cm.listeners.get(req.serviceId);
  if (listener === undefined) {
    cm.transmit(
      from,
      {
        name: 'SIDR_REP',
        fields: {
          requestId: req.requestId,
          status: SidrStatus.UNSUPPORTED,
          additionalInfoLength: 0,
          qpn: 0,
          serviceId: req.serviceId,
          qkey: 0,
          additionalInfo: new Uint8Array(0),
          privateData: new Uint8Array(0),
        },
      },
      m.header.transactionId,
    );
    return;
  }
  const id = cm.createId(listener.handler);
  id.peer = from;
  id.remoteId = req.requestId;
  id.serviceId = req.serviceId;
  id.tid = m.header.transactionId;
  id.privateData = req.privateData;
  id.remoteKey = key;
  cm.remoteSidr.set(key, id);
  cm.setState(id, CmState.SIDR_REQ_RCVD, 'SIDR_REQ received');
  cm.emit({ type: 'SIDR_REQ_RECEIVED', id, req, from });
}

export function sidrRepReceived(cm: ConnectionManager, rep: CmSidrRep): void {
  const id = cm.ids.get(rep.requestId);
  if (id === undefined || id.state !== CmState.SIDR_REQ_SENT) return;
  cm.cancelOutstanding(id);
  id.privateData = rep.privateData;
  cm.setState(id, CmState.IDLE, 'SIDR_REP received');
  cm.emit({ type: 'SIDR_REP_RECEIVED', id, rep });
}
