/**
 * Where the stack draws the values a peer must not guess (R_Keys, L_Keys, QP numbers, memory
 * addresses, starting PSNs) and the few other random choices it makes.
 *
 * A source is injected: composition roots that face a network build one over the operating
 * system's cryptographic generator (base/crypto-random.ts), the deterministic simulation and the
 * tests a seeded one (base/rng.ts `Rng` is a RandomSource), so a simulated run stays reproducible
 * from its seed.
 */
import { ProgrammingError, ProgrammingErrorCode } from './programming-error';
export interface RandomSource {
  /** A uniform unsigned 32-bit integer. */
  u32(): number;
}

/**
 * A uniform integer in [0, n) for 1 <= n <= 2^32, without the bias of `u32() % n`: draws that fall
 * in the last incomplete multiple of n are drawn again (at most half the draws, for any n).
 */
export function uniformBelow(src: RandomSource, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 0x1_0000_0000)
    throw new ProgrammingError(ProgrammingErrorCode.Misuse, `uniformBelow: n must be an integer 1..2^32, not ${n}`);
  const limit = 0x1_0000_0000 - (0x1_0000_0000 % n);
  for (;;) {
    const x = src.u32() >>> 0;
    if (x < limit) return x % n;
  }
}
