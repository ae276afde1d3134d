/**
 * 24-bit PSN arithmetic for the analyzer (as stack/psn.ts, IBTA vol. 1 §9.7.1): modulo 2^24,
 * compared by the sign of the 24-bit difference (rxe `psn_compare`).
 * Kept here so packets/ does not depend on stack/.
 */
export const PSN_MASK = 0xffffff;

export function psnAdd(psn: number, n: number): number {
  return (psn + n) & PSN_MASK;
}

/** Signed distance from b to a: positive when a comes after b (within 2^23). */
export function psnDiff(a: number, b: number): number {
  return ((a - b) << 8) >> 8;
}

/** The later of two PSNs (null counts as "nothing yet"). */
export function psnMax(a: number | null, b: number): number {
  return a === null || psnDiff(b, a) > 0 ? b : a;
}
