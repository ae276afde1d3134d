/**
 * One end of a communication: the kernel's `struct cm_id_private` reduced to what the RC connect,
 * disconnect and SIDR paths use. The connection manager (connection-manager.ts) keeps the IDs in
 * its tables; the state machine (state-machine.ts) moves them.
 */
import type { TimerId } from '../../base/clock';
import type { MadPeer } from './gsi';
import type { CmCounterKey } from './gsi-counters';
import { CmState } from './cm-state';
import type { CmEvent } from './cm-event';

/** A MAD sent that waits for an answer, resent on each response timeout (the MAD layer's send with timeout and retries). */
export interface OutstandingMad {
  mad: Uint8Array;
  key: CmCounterKey;
  timeoutNs: number;
  retriesLeft: number;
  timer: TimerId | null;
}

/** What REQ and REP settle for the QPs of the connection (the kernel's fields of cm_id_private). */
export interface ConnectionParams {
  localQpn: number;
  remoteQpn: number;
  /**
   * The Starting PSN of the message we sent (REQ or REP): the first PSN our receive queue expects,
   * as the kernel's ib_cm reads it (cm_req_handler() takes the REQ's Starting PSN as the passive
   * side's sq_psn, ib_send_cm_rep() the REP's as its rq_psn, cm_rep_handler() the REP's as the
   * active side's sq_psn), and as rdma_cm sets rq_psn to the ID's own seq_num (rdma_init_qp_attr()).
   */
  localPsn: number;
  /** The Starting PSN of the peer's message: the first PSN we send with. */
  remotePsn: number;
  /** Path MTU code (1 = 256 ... 5 = 4096). */
  pathMtu: number;
  /** RDMA READ/atomic requests we accept at once (our QP's max_dest_rd_atomic). */
  responderResources: number;
  /** RDMA READ/atomic requests we may have outstanding (our QP's max_rd_atomic). */
  initiatorDepth: number;
  retryCount: number;
  rnrRetryCount: number;
  /** Local ACK timeout code of the path. */
  localAckTimeout: number;
  trafficClass: number;
  hopLimit: number;
  flowLabel: number;
}

export function emptyConnectionParams(): ConnectionParams {
  return {
    localQpn: 0,
    remoteQpn: 0,
    localPsn: 0,
    remotePsn: 0,
    pathMtu: 3,
    responderResources: 0,
    initiatorDepth: 0,
    retryCount: 7,
    rnrRetryCount: 7,
    localAckTimeout: 19,
    trafficClass: 0,
    hopLimit: 64,
    flowLabel: 0,
  };
}

export class CmId {
  state: CmState = CmState.IDLE;
  /** Our communication ID (never 0). */
  readonly localId: number;
  /** The peer's communication ID (0 until its REQ or REP). */
  remoteId = 0;
  remoteCaGuid = 0n;
  serviceId = 0n;
  /** The peer's GSI. */
  peer: MadPeer | null = null;
  /** Transaction ID of the REQ (REP, RTU, REJ and MRA carry it too), and of the DREQ being answered. */
  tid = 0n;
  dreqTid = 0n;
  readonly conn: ConnectionParams = emptyConnectionParams();
  /** Max CM retries (REQ byte 51) and the times each side said it needs to answer (codes). */
  maxCmRetries = 15;
  /** How long we wait for an answer to our REQ/REP/DREQ (ns). */
  responseWaitNs = 0;
  /** Packet life time code of the path (the local ACK timeout less one). */
  packetLifeTime = 18;
  /** The message waiting for an answer, or null. */
  outstanding: OutstandingMad | null = null;
  /** Answers resent for duplicates: the MRA, REP, RTU or DREP we sent last. */
  lastMra: Uint8Array | null = null;
  lastRep: Uint8Array | null = null;
  lastRtu: Uint8Array | null = null;
  lastDrep: Uint8Array | null = null;
  timewaitTimer: TimerId | null = null;
  /** Private data of the message that moved us last (REQ, REP, REJ, DREQ ...). */
  privateData: Uint8Array = new Uint8Array(0);
  /** Entered in the remote-ID and remote-QPN tables (cm.c inserted_remote_id / inserted_remote_qp). */
  remoteKey: string | null = null;
  remoteQpnKey: string | null = null;
  /** Gone from the manager (destroyed by its owner); no event is delivered any more. */
  destroyed = false;

  constructor(
    localId: number,
    /** The index the transaction IDs are formed from. */
    readonly index: number,
    public handler: (e: CmEvent) => void,
  ) {
    this.localId = localId;
  }
}
