/**
 * The numbers a work request carries: its opcode, send flags and FLUSH placement, with the values
 * of libibverbs (`verbs.h`) so figures and logs compare directly with rdma-core programs.
 */

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
