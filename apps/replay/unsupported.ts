/**
 * Features a captured conversation may use that this stack cannot reproduce. Replay cannot judge the
 * stack on those frames: it reports them as `unsupported` (never as a violation of the captured peer or
 * of the stack), names the feature, and goes on past them, so that the rest of the conversation is
 * still judged:
 *
 * - An R_Key in rxe's memory-window index ranges (`rkey_is_mw()`: indexes 0x10001..0x20000 before
 *   Linux 6.2, 0x80001..0x100000 since; stack/key-allocator.ts RXE_MW_INDEX_RANGES) that the
 *   stack could not bind a window under (window-stand-ins.ts: every window index taken, or max_mw
 *   reached). Such a key is a memory window's, bound off the wire; replay binds a type 2 window under
 *   it with a BIND_MW of the stack's QP, and only when it cannot is the key unsupported. Any other key a
 *   SEND with Invalidate names is taken for a fast-registration region's (rxe invalidates no other
 *   kind, `rxe_invalidate_mr()`), which the stack has: nothing unsupported there.
 */
import { RXE_MW_INDEX_RANGES } from '../../stack/key-allocator';
import { type Difference, DiffClass } from './differences';

export const Feature = {
  MEMORY_WINDOW: {
    kind: 'memoryWindow',
    feature: 'memory windows',
    rule: "an R_Key in rxe's memory-window index range (rxe rkey_is_mw()) is a window bound off the wire; replay binds a type 2 window under it on the stack's QP, and could not for this one (docs/conformance.md)",
  },
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

/**
 * Whether `rkey` is in one of rxe's memory-window index ranges (rxe_verbs.h rkey_is_mw()). Both
 * kernels' ranges are read as windows: a capture does not say which kernel wrote it, and on a 6.2+
 * kernel a region's index reaches 0x10001 only after 65536 registrations since the module loaded
 * (and a window stand-in admits and refuses what that region did).
 */
export function rxeMemoryWindowKey(rkey: number): boolean {
  const index = rkey >>> 8;
  return RXE_MW_INDEX_RANGES.some((r) => index >= r.min && index <= r.max);
}

/** The `unsupported` difference for `feature` at `psn`, shown by `frames`. */
export function unsupportedDifference(feature: Feature, psn: number | null, frames: number[], expected: string, got: string): Difference {
  return { class: DiffClass.UNSUPPORTED, kind: feature.kind, feature: feature.feature, psn, frames, expected, got, rule: feature.rule };
}
