/**
 * What `roce perftest` and `roce pingpong` report when a run fails: the
 * message, and for roce-ts's typed errors their `code` (and the message field
 * at fault, for out-of-band and test errors). Errors are told apart by class
 * (`instanceof`), never by the shape of the object.
 */
import { types } from 'node:util';
import { RoceError } from '../base/roce-error';
import { OobError } from '../apps/oob/tcp-channel';
import { PerftestError } from '../apps/perftest/perftest-error';

export interface Failure {
  error: string;
  code?: string;
  field?: string;
}

export function failureOf(e: unknown): Failure {
  // isNativeError holds for errors of another realm too (Node's own under jest).
  const f: Failure = { error: types.isNativeError(e) ? e.message : String(e) };
  if (e instanceof RoceError) f.code = e.code;
  if ((e instanceof OobError || e instanceof PerftestError) && e.field !== undefined) f.field = e.field;
  return f;
}
