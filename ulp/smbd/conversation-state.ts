/**
 * What the SMB Direct decoder remembers between frames, as plain structured-clonable data (the
 * capture engine carries it from batch to batch):
 *
 * - `pending`: RDMA CM REQs to an SMB Direct port awaiting their REP (by the REQ's local
 *   communication ID);
 * - `ends`: the QP ends that are SMB Direct (by the CM, or claimed from a negotiate message's shape),
 *   by destination address and QPN, with the way frames sent to them travel and their connection;
 * - `conns`: per connection, the SMB2 requests awaiting their response (by MessageId) with their
 *   RDMA buffer descriptors, the request of the RDMA WRITE in progress each way, and the RDMA READ
 *   requests whose responses may still come;
 * - `sends`: a SMB Direct message arriving in several SEND packets, per destination, until its LAST;
 * - `fragments`: an SMB2 message spread over several data transfer messages (MS-SMBD §3.1.5.4:
 *   RemainingDataLength counts what is still to come), per destination.
 *
 * Every map is capped; the oldest entry goes first (a Map iterates in insertion order).
 */

/** Which way frames to a QP end travel: to the SMB server (requests), to the client (responses), or not known. */
export type SmbdRole = 'server' | 'client' | 'either';

export interface SmbdPendingReq {
  commId: number;
  clientAddr: string;
  serverAddr: string;
  clientQpn: number;
}

export interface SmbdEnd {
  role: SmbdRole;
  /** The connection this end belongs to (the key of `conns`). */
  conn: string;
}

/** The SMB2 request an RDMA transfer or a response belongs to. */
export interface RequestRef {
  messageId: bigint;
  command: number;
}

export interface OpenRequest {
  command: number;
  descriptors: { offset: bigint; token: number; length: number }[];
}

export interface SmbdConnState {
  requests: Map<bigint, OpenRequest>;
  /** The request of the RDMA WRITE in progress, by the way it travels: set by its FIRST packet (the only one with a RETH, IBTA vol. 1 §9.4.3). */
  writing: Map<string, RequestRef | null>;
  /** RDMA READ requests of a request's data, oldest first: responses carry the request's PSN and the ones after (IBTA vol. 1 §9.7.4.1.3). */
  reads: { psn: number; of: RequestRef }[];
}

export interface PartialSend {
  chunks: Uint8Array[];
  length: number;
  nextPsn: number;
  packets: number;
}

export interface PartialMessage {
  chunks: Uint8Array[];
  length: number;
  /** RemainingDataLength of the last data transfer taken: what is still to come. */
  remaining: number;
  transfers: number;
}

export interface SmbdState {
  pending: SmbdPendingReq[];
  ends: Map<string, SmbdEnd>;
  conns: Map<string, SmbdConnState>;
  sends: Map<string, PartialSend>;
  fragments: Map<string, PartialMessage>;
}

export function emptySmbdState(): SmbdState {
  return { pending: [], ends: new Map(), conns: new Map(), sends: new Map(), fragments: new Map() };
}

export function isEmptySmbdState(s: SmbdState): boolean {
  return s.pending.length === 0 && s.ends.size === 0 && s.conns.size === 0 && s.sends.size === 0 && s.fragments.size === 0;
}

/** Forgets the oldest entries of `m` beyond `max`. */
export function capMap<K, V>(m: Map<K, V>, max: number): void {
  for (const k of m.keys()) {
    if (m.size <= max) return;
    m.delete(k);
  }
}
