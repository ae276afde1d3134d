/**
 * Errors that are bugs: in roce-ts itself, or in the code calling it. Input
 * data, the network, the peer and the configuration never cause them, so a
 * program has nothing to recover; the message says what to fix.
 */
import { RoceError } from './roce-error';

export const ProgrammingErrorCode = {
  /** A check of roce-ts's own invariants failed (a state the code cannot reach unless roce-ts has a bug). */
  Internal: 'ROCE_ERR_INTERNAL',
  /** An object was used in a way its API does not allow: written after close, asked for what it does not hold, called again while a call is pending. */
  Misuse: 'ROCE_ERR_MISUSE',
} as const;
export type ProgrammingErrorCode = (typeof ProgrammingErrorCode)[keyof typeof ProgrammingErrorCode];

export class ProgrammingError extends RoceError<ProgrammingErrorCode> {}

/** A ROCE_ERR_INTERNAL error: `what` went wrong that cannot unless roce-ts has a bug. */
export function internalError(what: string): ProgrammingError {
  return new ProgrammingError(ProgrammingErrorCode.Internal, `internal: ${what}`);
}
