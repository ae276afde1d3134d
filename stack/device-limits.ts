/**
 * How many live objects a device allows, as ibv_query_device reports them (max_qp, max_mr, max_mw). Past a
 * limit the verb fails with `ROCE_ERR_LIMIT` and a message naming the limit, instead of the process
 * growing without bound: a peer that makes an application create a QP and register a region per
 * connection (an rc_pingpong or rdma_cm server accepting over and over) meets a clear refusal.
 * The defaults are rxe's (drivers/infiniband/sw/rxe/rxe_param.h, Linux 6.x: DEFAULT_MAX_VALUE =
 * 2^20; QP indexes 16..2^20, so RXE_MAX_QP = 2^20 - 16 + 1; MR indexes 1..2^19, so RXE_MAX_MR = 2^19).
 */
export interface DeviceLimits {
  /** Live QPs, QP 1 (the GSI) included. */
  maxQp: number;
  /** Live memory regions. */
  maxMr: number;
  /** Live memory windows (rxe gives them an index range of their own, as large as its regions': RXE_MAX_MW). */
  maxMw: number;
}

export const RXE_DEVICE_LIMITS: Readonly<DeviceLimits> = Object.freeze({ maxQp: (1 << 20) - 16 + 1, maxMr: 1 << 19, maxMw: 1 << 19 });
