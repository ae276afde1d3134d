/**
 * What the iSER decoder remembers between frames, as plain structured-clonable data (the capture
 * engine carries it from batch to batch):
 *
 * - `pending`: RDMA CM REQs to an iSER port awaiting their REP (by the REQ's local communication ID);
 * - `ends`: the QP ends the CM (or nothing, for --decode-as) made iSER, by address and QPN, with
 *   the way frames sent to them travel and their connection;
 * - `conns`: per connection, the tasks whose SCSI Command named STags (by Initiator Task Tag, oldest
 *   first), the task of the RDMA WRITE in progress, and the RDMA READ requests whose responses may
 *   still come;
 * - `partial`: an iSER message arriving in several SEND packets, per destination, until its LAST.
 *
 * Every collection is capped; the oldest entry is forgotten first.
 */

/** Which way frames sent to a QP end travel: to the target (commands), to the initiator, or not known (--decode-as). */
export type IserEndRole = 'target' | 'initiator' | 'either';

export interface IserPendingReq {
  commId: number;
  initiatorAddr: string;
  targetAddr: string;
  initiatorQpn: number;
}

export interface IserEnd {
  role: IserEndRole;
  conn: string;
}

/** A SCSI task whose iSER header named STags: what its data transfers are tied to. */
export interface IserTask {
  itt: number;
  /** The CDB's operation code and name. */
  scsiOpcode: number;
  name: string;
  /** W: the initiator's buffer the target RDMA READs (a SCSI write). */
  writeStag: number | null;
  writeBaseOffset: bigint;
  /** R: the initiator's buffer the target RDMA WRITEs (a SCSI read). */
  readStag: number | null;
  readBaseOffset: bigint;
  /** Expected Data Transfer Length: how far past the base offset the buffer goes. */
  length: number;
}

/** The task a data transfer belongs to (plain data). */
export interface IserTaskRef {
  itt: number;
  scsiOpcode: number;
  name: string;
}

export interface IserConnState {
  tasks: Map<number, IserTask>;
  /** The task of the RDMA WRITE whose FIRST packet was seen (IBTA vol. 1 §9.4.3: only the first packet carries a RETH). */
  writing: IserTaskRef | null;
  /** RDMA READ requests of tasks' data, oldest first. */
  reads: { psn: number; of: IserTaskRef }[];
}

export interface IserPartial {
  chunks: Uint8Array[];
  length: number;
  nextPsn: number;
  packets: number;
}

export interface IserState {
  pending: IserPendingReq[];
  ends: Map<string, IserEnd>;
  conns: Map<string, IserConnState>;
  partial: Map<string, IserPartial>;
}

export function emptyIserState(): IserState {
  return { pending: [], ends: new Map(), conns: new Map(), partial: new Map() };
}

export function isEmptyIserState(s: IserState): boolean {
  return s.pending.length === 0 && s.ends.size === 0 && s.conns.size === 0 && s.partial.size === 0;
}

export function endKey(addr: string, qpn: number): string {
  return `${addr}/${qpn}`;
}

/** Sets `k` in `m`, forgetting the oldest entries past `cap` (a Map keeps insertion order). */
export function capSet<K, V>(m: Map<K, V>, k: K, v: V, cap: number): void {
  m.delete(k);
  m.set(k, v);
  while (m.size > cap) {
    const first = m.keys().next();
    if (first.done === true) break;
    m.delete(first.value);
  }
}
