/**
 * What the RPC-over-RDMA decoder remembers between frames, as plain structured-clonable data (Maps
 * and arrays of numbers, strings and byte arrays), so a batch decoded on another thread starts
 * from the state the frames before it left:
 *
 * - `pending`: RDMA CM REQs to an RPC-over-RDMA port awaiting their REP (by local communication ID);
 * - `ends`: QP ends known to be the protocol's (by the CM, by --decode-as, or by a SEND's shape),
 *   by destination address and QPN, with the way frames sent to them travel and their conversation;
 * - `conversations`: per connection, the calls awaiting their reply (by xid), the handles their
 *   chunks named (so an RDMA READ or WRITE of that handle belongs to the call), the RDMA READ
 *   requests whose responses may still come, the RDMA WRITE in progress per destination, and the
 *   bytes of an RPC message travelling in a chunk (a call in a position-zero read chunk, a reply
 *   in a reply chunk) until it is whole;
 * - `partial`: a message arriving in several SEND packets, per destination end, until its LAST.
 *
 * Every map and list is capped; the oldest entry is forgotten first (a Map keeps insertion order).
 */

import type { RpcRdmaCmPrivateData } from './cm-private-data';

/** Which way frames sent to a QP end travel: to the NFS server (calls), to the client (replies), or not known. */
export type EndRole = 'server' | 'client' | 'either';

export interface PendingReq {
  commId: number;
  clientAddr: string;
  serverAddr: string;
  clientQpn: number;
  /** The REQ's RFC 8797 private data, if it carried one: the REP's frame shows both sides'. */
  cm: RpcRdmaCmPrivateData | null;
}

export interface QpEnd {
  role: EndRole;
  conversation: string;
}

/** A call awaiting its reply. */
export interface OpenCall {
  /** Null when the call's RPC message was not read (yet): it travels in a read chunk. */
  prog: number | null;
  vers: number | null;
  proc: number | null;
  /** The call named a write list: a READ's data in the reply goes to it, not inline. */
  writeList: boolean;
}

export type ChunkKind = 'read' | 'write' | 'reply';

/** What an RDMA segment's handle was named for. */
export interface HandleUse {
  xid: number;
  chunk: ChunkKind;
  /** A read segment at position 0: it carries the call's RPC message itself (RFC 8166 §3.5.3). */
  message: boolean;
}

export interface ReadRequest {
  psn: number;
  handle: number;
  use: HandleUse;
}

/** A read segment past position zero: a data item the call's inline XDR stream left out, and its bytes read so far. */
export interface DataItemSegment {
  position: number;
  handle: number;
  length: number;
  parts: Uint8Array[];
  got: number;
}

/**
 * An RPC message travelling in a chunk, gathered from the RDMA READ responses or WRITEs that carry
 * it; or (`items` not empty) a call sent inline whose data items travel in read chunks past
 * position zero, kept until the READs have fetched every item (RFC 8166 §3.4.5).
 */
export interface ChunkMessage {
  kind: 'call' | 'reply';
  /** Bytes expected (a call's position-zero read segments; a reply's, from the reply's header), 0 when not known yet. */
  expected: number;
  parts: Uint8Array[];
  length: number;
  /** A call's inline RPC message, when its data items are in `items`. */
  inline: Uint8Array | null;
  items: DataItemSegment[];
}

export interface Conversation {
  calls: Map<number, OpenCall>;
  handles: Map<number, HandleUse>;
  reads: ReadRequest[];
  /** The handle of the RDMA WRITE in progress, by its destination end (IBTA vol. 1 §9.4.3: only a WRITE's first packet has a RETH). */
  writing: Map<string, number>;
  messages: Map<number, ChunkMessage>;
}

export interface PartialSend {
  chunks: Uint8Array[];
  length: number;
  nextPsn: number;
  packets: number;
}

export interface RpcRdmaState {
  pending: PendingReq[];
  ends: Map<string, QpEnd>;
  conversations: Map<string, Conversation>;
  partial: Map<string, PartialSend>;
}

export function emptyRpcRdmaState(): RpcRdmaState {
  return { pending: [], ends: new Map(), conversations: new Map(), partial: new Map() };
}

export function isEmptyRpcRdmaState(s: RpcRdmaState): boolean {
  return s.pending.length === 0 && s.ends.size === 0 && s.conversations.size === 0 && s.partial.size === 0;
}

export function emptyConversation(): Conversation {
  return { calls: new Map(), handles: new Map(), reads: [], writing: new Map(), messages: new Map() };
}

export function endKey(addr: string, qpn: number): string {
  return `${addr}/${qpn}`;
}

/** Sets `k` in `m`, forgetting the oldest entries beyond `cap`. */
export function capSet<K, V>(m: Map<K, V>, k: K, v: V, cap: number): void {
  m.delete(k);
  m.set(k, v);
  while (m.size > cap) {
    const first = m.keys().next();
    if (first.done === true) break;
    m.delete(first.value);
  }
}
