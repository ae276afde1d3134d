/**
 * 24-bit packet sequence numbers (IBTA vol. 1 §9.7.1): arithmetic modulo
 * 2^24, and comparison by the sign of the 24-bit difference, which splits
 * the PSN space into two halves of 2^23 (rxe `psn_compare`: (s32)((a - b) << 8)).
 */
export const PSN_MASK = 0xffffff;
export const PSN_HALF = 0x800000;

export function psnAdd(psn: number, n: number): number {
  return (psn + n) & PSN_MASK;
}

/** Signed distance from b to a: positive when a is after b (within 2^23). */
export function psnDiff(a: number, b: number): number {
  return ((a - b) << 8) >> 8;
}

/** The later of two PSNs (null counts as "nothing yet"). */
export function psnMax(a: number | null, b: number): number {
  return a === null || psnDiff(b, a) > 0 ? b : a;
}

/** <0, 0, >0 like a comparator: a before, equal to, or after b. */
export function psnCmp(a: number, b: number): number {
  return psnDiff(a, b);
}
