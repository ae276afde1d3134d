/**
 * Features a captured conversation may use that this stack lacks. Replay cannot judge the stack on
 * those frames: it reports them as `unsupported` (never as a violation of the captured peer or of
 * the stack), names the feature, and goes on past them with a stand-in, so that the rest of the
 * conversation is still judged:
 *
 * - SEND with Invalidate of an R_Key in rxe's memory-window index range (`rkey_is_mw()`: indexes
 *   0x10001..0x20000): a memory window's key, bound by work requests that never reach the wire, and
 *   this stack has no memory windows. Replay binds a fast-registration region under the key, which the
 *   invalidation revokes the same way; the answer is still compared. Any other key so named is taken
 *   for a fast-registration region's (rxe invalidates no other kind, `rxe_invalidate_mr()`), which the
 *   stack has: nothing unsupported there.
 */
import { type Difference, DiffClass } from './differences';

export const Feature = {
  MEMORY_WINDOW: {
    kind: 'memoryWindow',
    feature: 'memory windows',
    rule: 'a SEND with Invalidate names an R_Key in rxe\'s memory-window index range (rxe rkey_is_mw()), bound by a memory-window bind that never reaches the wire; this stack has no memory windows (docs/conformance.md)',
  },
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

/** rxe's memory-window key indexes (rxe_param.h RXE_MIN_MW_INDEX, RXE_MAX_MW_INDEX). */
const RXE_MW_INDEX = { min: 0x10001, max: 0x20000 } as const;

/** Whether `rkey` is in rxe's memory-window index range (rxe_verbs.h rkey_is_mw()). */
export function rxeMemoryWindowKey(rkey: number): boolean {
  const index = rkey >>> 8;
  return index >= RXE_MW_INDEX.min && index <= RXE_MW_INDEX.max;
}

/** The `unsupported` difference for `feature` at `psn`, shown by `frames`. */
export function unsupportedDifference(feature: Feature, psn: number | null, frames: number[], expected: string, got: string): Difference {
  return { class: DiffClass.UNSUPPORTED, kind: feature.kind, feature: feature.feature, psn, frames, expected, got, rule: feature.rule };
}
