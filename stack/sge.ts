/** A scatter/gather element, as libibverbs has it (`struct ibv_sge`). */

/** A scatter/gather element (`struct ibv_sge`): a range of a registered region. */
export interface Sge {
  /** Virtual address inside a registered memory region. */
  addr: bigint;
  length: number;
  lkey: number;
}
