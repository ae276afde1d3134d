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

/**
 * How far a frame's PSN may lie from its flow's PSNs (highest sent, else highest
 * acknowledged) and still belong to the same connection. A requester has at most
 * this many PSNs in flight in practice (IBTA allows 2^23, rxe and RNICs far fewer);
 * a new connection starts at a random 24-bit PSN and lands inside the window with
 * probability (2 * 65536 + 1) / 2^24, under 1 %. Also bounds response-to-request
 * binding.
 */
export const CONNECTION_PSN_WINDOW = 0x10000;
