/**
 * The contract every fuzz target checks: bad input gets a typed error (a `RoceError` with a
 * `ROCE_ERR_*` code) or a result that says what is wrong, never anything else. Any other
 * exception (a TypeError, a RangeError from a typed array, a stack overflow) is a crash.
 */
import { RoceError } from '../base/roce-error';

/** Runs `fn`; a typed error is an accepted outcome, anything else propagates as a finding. */
export function typedErrorsOnly(fn: () => void): void {
  try {
    fn();
  } catch (e) {
    if (e instanceof RoceError) return;
    throw e;
  }
}

/** A fuzz target: the function libFuzzer calls with each input. */
export type FuzzTarget = (data: Uint8Array) => void;
