/**
 * How a device hands out the names a peer addresses it by: memory keys and addresses
 * (stack/key-allocator.ts) and QP numbers (stack/qpn-allocator.ts).
 *
 *  - RANDOM (the default): each drawn from the device's random source, so that one name says
 *    nothing of the next (ReDMArk, USENIX Security 2021: sequential QPNs and R_Keys stepping by
 *    0x100 let an off-path host inject frames and reach memory; docs/security.md).
 *  - SEQUENTIAL: rxe's order (rxe_pool.c xa_alloc_cyclic(): the next free index; QPNs from 0x11),
 *    for tests and comparisons that want predictable names.
 */
export const AllocationOrder = { RANDOM: 'random', SEQUENTIAL: 'sequential' } as const;
export type AllocationOrder = (typeof AllocationOrder)[keyof typeof AllocationOrder];

/** The order named by `text`, or null. */
export function parseAllocationOrder(text: string): AllocationOrder | null {
  return text === AllocationOrder.RANDOM || text === AllocationOrder.SEQUENTIAL ? text : null;
}
