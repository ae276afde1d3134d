/**
 * Features a captured conversation may use that this stack lacks. Replay cannot judge the stack on
 * those frames: it reports them as `unsupported` (never as a violation of the captured peer or of
 * the stack), names the feature, and where it can it goes on past them with a stand-in, so that the
 * rest of the conversation is still judged:
 *
 * - SEND with Invalidate of an R_Key the capture never shows in use: the key of a memory window or
 *   of a fast-registered region (rxe invalidates no other kind, `rxe_invalidate_mr()`), made by work
 *   requests that never reach the wire. Replay registers a plain region under that key so that the
 *   invalidation succeeds, as it did for the captured responder; the answer is still compared.
 */
import { type Difference, DiffClass } from './differences';

export const Feature = {
  INVALIDATE: {
    kind: 'invalidateUnregistered',
    feature: 'memory windows / fast registration',
    rule: 'a SEND with Invalidate names the R_Key of a memory window or a fast-registered region (rxe invalidates no other kind), made by work requests that never reach the wire; this stack has neither (docs/conformance.md)',
  },
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

/** The `unsupported` difference for `feature` at `psn`, shown by `frames`. */
export function unsupportedDifference(feature: Feature, psn: number | null, frames: number[], expected: string, got: string): Difference {
  return { class: DiffClass.UNSUPPORTED, kind: feature.kind, feature: feature.feature, psn, frames, expected, got, rule: feature.rule };
}
