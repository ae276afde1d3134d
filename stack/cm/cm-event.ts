/**
 * What the connection manager tells the owner of a communication ID: the kernel's
 * `enum ib_cm_event_type` (include/rdma/ib_cm.h), with the message that caused it.
 */
import type { CmReq } from '../../packets/cm/req';
import type { CmRep } from '../../packets/cm/rep';
import type { CmRej } from '../../packets/cm/rej';
import type { CmSidrRep } from '../../packets/cm/sidr-rep';
import type { CmSidrReq } from '../../packets/cm/sidr-req';
import type { CmId } from './cm-id';
import type { MadPeer } from './gsi';

export type CmEvent =
  /** A REQ for a listened service ID: the ID is new, in REQ_RCVD; accept (REP) or reject it. */
  | { type: 'REQ_RECEIVED'; id: CmId; req: CmReq; from: MadPeer }
  /** Our REQ was answered: the ID is in REP_RCVD; move the QP to RTS and send the RTU. */
  | { type: 'REP_RECEIVED'; id: CmId; rep: CmRep }
  /** The RTU arrived: ESTABLISHED. */
  | { type: 'RTU_RECEIVED'; id: CmId }
  /** The QP received its first packet before the RTU (IB_CM_USER_ESTABLISHED): ESTABLISHED. */
  | { type: 'USER_ESTABLISHED'; id: CmId }
  | { type: 'REJ_RECEIVED'; id: CmId; rej: CmRej }
  | { type: 'MRA_RECEIVED'; id: CmId }
  /** Our REQ was never answered (max CM retries reached). */
  | { type: 'REQ_ERROR'; id: CmId }
  /** Our REP was never answered. */
  | { type: 'REP_ERROR'; id: CmId }
  /** The peer disconnects: the ID is in DREQ_RCVD; answer with a DREP. */
  | { type: 'DREQ_RECEIVED'; id: CmId }
  /** Our DREQ was never answered: TIMEWAIT. */
  | { type: 'DREQ_ERROR'; id: CmId }
  | { type: 'DREP_RECEIVED'; id: CmId }
  | { type: 'TIMEWAIT_EXIT'; id: CmId }
  | { type: 'SIDR_REQ_RECEIVED'; id: CmId; req: CmSidrReq; from: MadPeer }
  | { type: 'SIDR_REP_RECEIVED'; id: CmId; rep: CmSidrRep }
  | { type: 'SIDR_REQ_ERROR'; id: CmId };

export type CmEventType = CmEvent['type'];
