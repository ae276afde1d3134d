/**
 * What the NVMe-oF decoder remembers between frames, as plain structured-clonable data, so that a
 * batch of records decoded on a worker thread starts from exactly the state the frames before it
 * left (capture-engine/decode-workers.ts carries it with each batch):
 *
 * - `pending`: RDMA CM REQs to an NVMe-oF port awaiting their REP or REJ (by the REQ's local
 *   communication ID);
 * - `ends`: the queue pairs the CM (a REP answering such a REQ) made NVMe-oF, by destination
 *   address and QPN, with the direction frames sent to them travel and the queue's ID;
 * - `queues`: per queue, the commands sent and not yet completed (by command ID), the queue ID
 *   a Connect named (for queues named with --decode-as), the command of the RDMA WRITE in progress
 *   each way, and the RDMA READ requests whose responses may still come;
 * - `partial`: a capsule arriving in several SEND packets, per destination, until its LAST.
 */

/** Which way frames sent to a QP end travel: to the controller (commands), to the host (responses, data), or not known. */
export type EndRole = 'target' | 'host' | 'either';

export interface PendingReq {
  commId: number;
  hostAddr: string;
  targetAddr: string;
  hostQpn: number;
  qid: number | null;
}

export interface QpEnd {
  role: EndRole;
  /** The queue this end belongs to (the key of `queues`). */
  queue: string;
}

/** A command sent on a queue and not yet completed. */
export interface OpenCommand {
  opcode: number;
  fctype: number | null;
  /** The keyed SGL's key and address (null when the data is in the capsule or there is none). */
  key: number | null;
  address: bigint;
  length: number;
}

/** The command a frame's data belongs to (the decoder's CommandRef, kept as plain data). */
export interface DataOwner {
  commandId: number;
  opcode: number;
  fctype: number | null;
}

/** An RDMA READ request of a command's data: its responses carry its PSN and the ones after. */
export interface ReadOfCommand {
  psn: number;
  of: DataOwner;
}

export interface QueueState {
  /** The queue ID: from the CM REQ's private data, or the Connect seen on the queue. */
  qid: number | null;
  commands: Map<number, OpenCommand>;
  /**
   * The command of the RDMA WRITE in progress, by the way it travels ('to-host', 'to-target'): set by
   * its FIRST packet, whose RETH names the command's keyed SGL, and read by its MIDDLE and LAST
   * packets, which carry no RETH (IBTA vol. 1 §9.4.3: only the first packet of a WRITE has one).
   */
  writing: Map<string, DataOwner | null>;
  /** READ requests of commands' data, oldest first (at most a few dozen: responses come in order). */
  reads: ReadOfCommand[];
}

export interface PartialCapsule {
  chunks: Uint8Array[];
  length: number;
  /** The PSN the next packet must carry. */
  nextPsn: number;
  packets: number;
}

export interface NvmeConversationState {
  pending: PendingReq[];
  ends: Map<string, QpEnd>;
  queues: Map<string, QueueState>;
  partial: Map<string, PartialCapsule>;
}

export function emptyState(): NvmeConversationState {
  return { pending: [], ends: new Map(), queues: new Map(), partial: new Map() };
}

/** True when the state holds nothing a later frame could depend on. */
export function isEmptyState(s: NvmeConversationState): boolean {
  return s.pending.length === 0 && s.ends.size === 0 && s.queues.size === 0 && s.partial.size === 0;
}

/** The key of a QP end: its address and QPN. */
export function endKey(addr: string, qpn: number): string {
  return `${addr}/${qpn}`;
}
