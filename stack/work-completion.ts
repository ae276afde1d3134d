/**
 * Verbs constants, with the numeric values of libibverbs (`verbs.h`) so
 * figures and logs compare directly with rdma-core programs.
 */

/** QP transport types (`enum ibv_qp_type`): RC, UC and UD. */
export const QpType = { RC: 2, UC: 3, UD: 4 } as const;
export type QpType = (typeof QpType)[keyof typeof QpType];

/** QP states (`enum ibv_qp_state`). */
export const QpState = { RESET: 0, INIT: 1, RTR: 2, RTS: 3, SQD: 4, SQE: 5, ERR: 6 } as const;
export type QpState = (typeof QpState)[keyof typeof QpState];
export const QP_STATE_NAMES: readonly string[] = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'];

/**
 * Access flags (`enum ibv_access_flags`). FLUSH_GLOBAL and FLUSH_PERSISTENT allow a FLUSH of that
 * placement type into a region (IBTA vol. 1 annex A19; rxe check_rkey() asks the region for them, and
 * check_qp_attr_access() the QP).
 */
export const Access = {
  LOCAL_WRITE: 1,
  REMOTE_WRITE: 2,
  REMOTE_READ: 4,
  REMOTE_ATOMIC: 8,
  MW_BIND: 16,
  /**
   * A memory window's addresses count from its first byte (IBV_ACCESS_ZERO_BASED): the VA of a request
   * is an offset into the window, not a virtual address of the region. Type 2 windows only (IBTA vol. 1
   * o10-36.2.2, which rxe_check_bind_mw() enforces for type 1).
   */
  ZERO_BASED: 1 << 5,
  FLUSH_GLOBAL: 1 << 8,
  FLUSH_PERSISTENT: 1 << 9,
} as const;

/** Every access flag a region may be registered with. */
export const ACCESS_MR_SUPPORTED = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.MW_BIND | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

/**
 * The access a memory window may be bound with: a region's, and zero-based addressing (rxe
 * RXE_ACCESS_SUPPORTED_MW). Only the remote rights (read, write, atomic, flush) grant anything.
 */
export const ACCESS_MW_SUPPORTED = ACCESS_MR_SUPPORTED | Access.ZERO_BASED;

/**
 * Memory window types (`enum ibv_mw_type`): type 1 is bound by the bind verb (ibv_bind_mw) and answers
 * on any QP of its PD; type 2 is bound by a BIND_MW work request and answers only on the QP that bound
 * it (IBTA vol. 1 §10.6.7).
 */
export const MwType = { TYPE_1: 1, TYPE_2: 2 } as const;
export type MwType = (typeof MwType)[keyof typeof MwType];

/** FLUSH placement types, bits of the FETH (libibverbs IBV_FLUSH_GLOBAL, IBV_FLUSH_PERSISTENT; IBTA vol. 1 annex A19.4.1). */
export const FlushType = { GLOBAL: 1, PERSISTENT: 2 } as const;
/** FLUSH selectivity levels (IBV_FLUSH_RANGE: the RETH's range; IBV_FLUSH_MR: the whole region the R_Key names). */
export const FlushLevel = { RANGE: 0, MR: 1 } as const;

/** Send flags (`enum ibv_send_flags`). */
export const SendFlags = { FENCE: 1, SIGNALED: 2, SOLICITED: 4, INLINE: 8 } as const;

/** Work request opcodes (`enum ibv_wr_opcode`). */
export const WrOpcode = {
  RDMA_WRITE: 0,
  RDMA_WRITE_WITH_IMM: 1,
  SEND: 2,
  SEND_WITH_IMM: 3,
  RDMA_READ: 4,
  ATOMIC_CMP_AND_SWP: 5,
  ATOMIC_FETCH_AND_ADD: 6,
  LOCAL_INV: 7,
  BIND_MW: 8,
  SEND_WITH_INV: 9,
  /** IBV_WR_FLUSH (IBTA vol. 1 annex A19). */
  FLUSH: 14,
  /** IBV_WR_ATOMIC_WRITE: 8 bytes written as one (IBTA vol. 1 annex A19). */
  ATOMIC_WRITE: 15,
  /** Fast registration (the kernel's IB_WR_REG_MR; libibverbs has no such work request). */
  REG_MR: 0x20,
} as const;
export type WrOpcode = (typeof WrOpcode)[keyof typeof WrOpcode];

/** Work completion opcodes (`enum ibv_wc_opcode`). */
export const WcOpcode = {
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  COMP_SWAP: 3,
  FETCH_ADD: 4,
  BIND_MW: 5,
  LOCAL_INV: 6,
  FLUSH: 8,
  ATOMIC_WRITE: 9,
  /** The kernel's IB_WC_REG_MR (libibverbs has none). */
  REG_MR: 10,
  RECV: 128,
  RECV_RDMA_WITH_IMM: 129,
} as const;
export type WcOpcode = (typeof WcOpcode)[keyof typeof WcOpcode];

/** Work completion status codes (`enum ibv_wc_status`). */
export const WcStatus = {
  SUCCESS: 0,
  LOC_LEN_ERR: 1,
  LOC_QP_OP_ERR: 2,
  LOC_EEC_OP_ERR: 3,
  LOC_PROT_ERR: 4,
  WR_FLUSH_ERR: 5,
  MW_BIND_ERR: 6,
  BAD_RESP_ERR: 7,
  LOC_ACCESS_ERR: 8,
  REM_INV_REQ_ERR: 9,
  REM_ACCESS_ERR: 10,
  REM_OP_ERR: 11,
  RETRY_EXC_ERR: 12,
  RNR_RETRY_EXC_ERR: 13,
  LOC_RDD_VIOL_ERR: 14,
  REM_INV_RD_REQ_ERR: 15,
  REM_ABORT_ERR: 16,
  INV_EECN_ERR: 17,
  INV_EEC_STATE_ERR: 18,
  FATAL_ERR: 19,
  RESP_TIMEOUT_ERR: 20,
  GENERAL_ERR: 21,
} as const;
export type WcStatus = (typeof WcStatus)[keyof typeof WcStatus];
/** The name of each `WcStatus` value (5 → "WR_FLUSH_ERR"). */
export const WC_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze(
  Object.fromEntries(Object.entries(WcStatus).map(([k, v]) => [v, k])),
);

/** Work completion flags (`enum ibv_wc_flags`). */
export const WcFlags = { GRH: 1, WITH_IMM: 2, IP_CSUM_OK: 4, WITH_INV: 8 } as const;

/** Path MTU enum of libibverbs (`enum ibv_mtu`) and the byte sizes. */
export const Mtu = { MTU_256: 1, MTU_512: 2, MTU_1024: 3, MTU_2048: 4, MTU_4096: 5 } as const;
export type Mtu = (typeof Mtu)[keyof typeof Mtu];
/** The size in bytes of a path MTU value (MTU_1024 → 1024). */
export function mtuBytes(mtu: Mtu): number {
  return 128 << mtu;
}
export function mtuFromBytes(bytes: number): Mtu | undefined {
  const m = Math.log2(bytes) - 7;
  return Number.isInteger(m) && m >= 1 && m <= 5 ? (m as Mtu) : undefined;
}

/** A scatter/gather element (`struct ibv_sge`): a range of a registered region. */
export interface Sge {
  /** Virtual address inside a registered memory region. */
  addr: bigint;
  length: number;
  lkey: number;
}

/** A work completion (`struct ibv_wc`). */
export interface WorkCompletion {
  wrId: bigint;
  status: WcStatus;
  opcode: WcOpcode;
  /** Bytes received (receive completions), or bytes transferred (READ). */
  byteLen: number;
  qpNum: number;
  /** Source QP (UD receives). */
  srcQp: number;
  wcFlags: number;
  /** Immediate data (with WcFlags.WITH_IMM) or the invalidated R_Key (WITH_INV). */
  immData: number;
  /** The vendor error: for an error completion, a short reason. */
  vendorErr: string;
}
