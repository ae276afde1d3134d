/**
 * Work requests as the application posts them (shaped after `ibv_send_wr`
 * and `ibv_recv_wr`), and the internal work queue entries the requester,
 * completer and responder keep for them.
 */
import type { Seg } from './dma';
import { WrOpcode } from './work-request-codes';
import { WcStatus } from './work-completion';
import type { Sge } from './sge';
import type { AddressHandle } from './address';
import { invalid } from './errors';
import { type MemoryRegion, sgeTotal } from './memory-region';
import type { MemoryWindow, MwBindInfo } from './memory-window';

/** rxe's maximum message size (RXE_MAX_MSG_SIZE = 2^31). */
export const MAX_MSG_SIZE = 0x8000_0000;

/** A send work request (`struct ibv_send_wr`): SEND, RDMA WRITE, READ, atomics, with their remote address and key. */
export interface SendWr {
  wrId?: bigint | number;
  opcode: WrOpcode;
  sgList?: Sge[];
  /** SendFlags bits: FENCE, SIGNALED, SOLICITED, INLINE. */
  sendFlags?: number;
  /** SEND_WITH_IMM and RDMA_WRITE_WITH_IMM. */
  immData?: number;
  /** SEND_WITH_INV: the remote R_Key to invalidate; LOCAL_INV: the local key to invalidate. */
  invalidateRkey?: number;
  /**
   * REG_MR: bind the fast-registration region `mr` (Device.allocMr) to the pages Device.mapMrSg gave
   * it, under `key` (its key index with a key byte of the consumer's choosing), with `access` (the
   * kernel's struct ib_reg_wr).
   */
  reg?: { mr: MemoryRegion; key: number; access: number };
  /**
   * BIND_MW (`ibv_send_wr.bind_mw`): bind the type 2 window `mw` under `rkey` (its key index with a key
   * byte of the consumer's choosing) to a range of a region (stack/memory-window.ts). Type 1 windows are
   * bound with QueuePair.bindMw.
   */
  bindMw?: { mw: MemoryWindow; rkey: number; bindInfo: MwBindInfo };
  /** RDMA_WRITE(_WITH_IMM) and RDMA_READ. */
  rdma?: { remoteAddr: bigint; rkey: number };
  /** ATOMIC_CMP_AND_SWP (compareAdd = compare, swap) and ATOMIC_FETCH_AND_ADD (compareAdd = add). */
  atomic?: { remoteAddr: bigint; rkey: number; compareAdd: bigint; swap?: bigint };
  /**
   * FLUSH (ibv_wr_flush): the range [remoteAddr, remoteAddr + length) of the region `rkey` names, or
   * the whole region (`selectivity` FlushLevel.MR), made globally visible and/or persistent
   * (`placementType`, FlushType bits) at the responder (IBTA vol. 1 annex A19).
   */
  flush?: { remoteAddr: bigint; rkey: number; length: number; placementType: number; selectivity?: number };
  /**
   * ATOMIC WRITE (ibv_wr_atomic_write): 8 bytes written at `remoteAddr` as one, after every earlier
   * request (IBTA vol. 1 annex A19). `value` is stored in the host's order (little-endian), as the
   * atomics' operands are; the packet carries those 8 bytes as they lie in memory.
   */
  atomicWrite?: { remoteAddr: bigint; rkey: number; value: bigint };
  /** UD: where to send. A remoteQkey with the high bit set means "use the QP's own Q_Key" (IBTA C10-15). */
  ud?: { ah: AddressHandle; remoteQpn: number; remoteQkey: number };
}

/** A receive work request (`struct ibv_recv_wr`): where an incoming SEND lands. */
export interface RecvWr {
  wrId?: bigint | number;
  sgList: Sge[];
}

/**
 * What a send WQE does on the wire: SEND, WRITE, READ and atomics as ever; FLUSH and ATOMIC WRITE
 * are one request packet each, answered by an RDMA READ response of no data (rxe_resp.c
 * acknowledge(): send_read_response_ack()). LOCAL work requests (REG_MR, LOCAL_INV) never reach the
 * wire: the requester executes them in order and they complete in order (rxe_req.c rxe_do_local_ops()).
 * BIND_MW is one too.
 */
export const WqeKind = { SEND: 0, WRITE: 1, READ: 2, ATOMIC: 3, FLUSH: 4, ATOMIC_WRITE: 5, LOCAL: 6 } as const;
export type WqeKind = (typeof WqeKind)[keyof typeof WqeKind];

/**
 * WQEs that take one of the responder's READ/atomic resources and count against max_rd_atomic:
 * READ, the atomics and ATOMIC WRITE (rxe_req.c check_init_depth() for RXE_READ_OR_ATOMIC_MASK |
 * RXE_ATOMIC_WRITE_MASK; a FLUSH does not count there).
 */
export function takesRdAtomic(kind: WqeKind): boolean {
  return kind === WqeKind.READ || kind === WqeKind.ATOMIC || kind === WqeKind.ATOMIC_WRITE;
}

/** WQEs whose request is one packet answered by a response of its own (READ response or atomic ACK): every kind but SEND and WRITE. */
export function singleRequest(kind: WqeKind): boolean {
  return kind !== WqeKind.SEND && kind !== WqeKind.WRITE && kind !== WqeKind.LOCAL;
}

export const WqeState = { POSTED: 0, STARTED: 1, DONE: 2 } as const;
export type WqeState = (typeof WqeState)[keyof typeof WqeState];

/** A send queue entry. */
export interface SendWqe {
  wrId: bigint;
  opcode: WrOpcode;
  kind: WqeKind;
  sendFlags: number;
  imm: number | null;
  inv: number | null;
  /** Local memory: the data to send (SEND/WRITE) or where the result goes (READ/atomic). Resolved when the WQE starts. */
  sgList: Sge[];
  /** Inline data copied at post time (SendFlags.INLINE), or null. */
  inline: Uint8Array | null;
  /** `sgList` resolved to region segments (or the inline data) when the WQE starts. */
  segs: Seg[];
  length: number;
  remoteAddr: bigint;
  rkey: number;
  compareAdd: bigint;
  swap: bigint;
  /** FLUSH: the FETH's placement type and selectivity level. */
  flushType: number;
  flushLevel: number;
  /** ATOMIC WRITE: the 8 bytes it writes, as they lie in memory. */
  atomicWriteData: Uint8Array | null;
  /** REG_MR: what it binds. */
  reg: SendWr['reg'] | null;
  /** BIND_MW: the window, its new key and what it binds it to. */
  bind: SendWr['bindMw'] | null;
  /** LOCAL: why it failed when the requester executed it ('' when it succeeded). */
  localFault: string;
  ud: SendWr['ud'] | null;
  state: WqeState;
  firstPsn: number;
  lastPsn: number;
  npkts: number;
  /** Packets of this WQE sent in the current pass (the requester resumes from here). */
  sentPkts: number;
  /** READ: the PSN the (re)sent request starts at. */
  readPsn: number;
  /** READ: response bytes placed so far. */
  readBytes: number;
}

/** A receive queue entry. */
export interface RecvWqe {
  wrId: bigint;
  sgList: Sge[];
  length: number;
}

/**
 * The status a local work request that failed completes with: MW_BIND_ERR for a bind, LOC_QP_OP_ERR for
 * REG_MR and LOCAL_INV (rxe_req.c rxe_do_local_ops()).
 */
export function localFaultStatus(w: SendWqe): WcStatus {
  return w.opcode === WrOpcode.BIND_MW ? WcStatus.MW_BIND_ERR : WcStatus.LOC_QP_OP_ERR;
}

export interface CompletionInfo {
  status: WcStatus;
  reason: string;
}

export function makeRecvWqe(wr: RecvWr, maxSge: number): RecvWqe {
  if (wr.sgList.length > maxSge) throw invalid(`postRecv: ${wr.sgList.length} SGEs exceed maxRecvSge ${maxSge}`);
  for (const s of wr.sgList) {
    if (!Number.isInteger(s.length) || s.length < 0 || s.length > MAX_MSG_SIZE) throw invalid(`postRecv: SGE length ${s.length} is out of range`);
  }
  return { wrId: BigInt(wr.wrId ?? 0), sgList: wr.sgList.map(copySge), length: sgeTotal(wr.sgList) };
}

/** A private copy of an SGE (the caller may reuse its objects after posting, as with ibv_post_send). */
export function copySge(s: Sge): Sge {
  return { addr: s.addr, length: s.length, lkey: s.lkey };
}
