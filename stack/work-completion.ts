/**
 * A work completion and its numbers (opcode, status, flags), with the values of libibverbs
 * (`verbs.h`) so figures and logs compare directly with rdma-core programs.
 */

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
export const WC_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze(Object.fromEntries(Object.entries(WcStatus).map(([k, v]) => [v, k])));

/** Work completion flags (`enum ibv_wc_flags`). */
export const WcFlags = { GRH: 1, WITH_IMM: 2, IP_CSUM_OK: 4, WITH_INV: 8 } as const;

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
