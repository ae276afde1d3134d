/** The path MTU as libibverbs numbers it (`enum ibv_mtu`), and its size in bytes. */

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
