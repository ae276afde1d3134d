/**
 * The access a memory region or window grants, with the bits of libibverbs (`verbs.h`).
 */

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
export const ACCESS_MR_SUPPORTED =
  Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.MW_BIND | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

/**
 * The access a memory window may be bound with: a region's, and zero-based addressing (rxe
 * RXE_ACCESS_SUPPORTED_MW). Only the remote rights (read, write, atomic, flush) grant anything.
 */
export const ACCESS_MW_SUPPORTED = ACCESS_MR_SUPPORTED | Access.ZERO_BASED;
