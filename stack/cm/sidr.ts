/**
 * Service ID Resolution (IBTA vol. 1 chapter 12, SIDR_REQ table 119 and SIDR_REP table 120): a UD
 * client asks which QP and Q_Key serve a service ID. Not implemented yet: a SIDR_REQ is answered
 * with status "service ID not supported" (as cm.c answers one with no listener,
 * cm_sidr_req_handler()), a SIDR_REP is dropped.
 */
import type { CmSidrReq } from '../../packets/cm/sidr-req';
import { SidrStatus } from '../../packets/cm/sidr-rep';
import type { ConnectionManager } from './connection-manager';
import type { ReceivedMad } from './gsi';

export function sidrReqReceived(cm: ConnectionManager, req: CmSidrReq, m: ReceivedMad): void {
  cm.transmit(
    { gid: m.from.gid, qpn: m.from.qpn },
    {
      name: 'SIDR_REP',
      fields: { requestId: req.requestId, status: SidrStatus.UNSUPPORTED, additionalInfoLength: 0, qpn: 0, serviceId: req.serviceId, qkey: 0, additionalInfo: new Uint8Array(0), privateData: new Uint8Array(0) },
    },
    m.header.transactionId,
  );
}

export function sidrRepReceived(): void {}
