/**
 * Errors of the verbs API: a bad argument or a call that is not allowed in
 * the object's state. Like libibverbs' errno returns, but typed and with a
 * message that names the attribute. Protocol errors are never thrown: they
 * become NAKs and error completions, as the IBTA says.
 */
import { RoceError } from '../base/roce-error';

/** The codes of `VerbsError`, after the errno values libibverbs returns. */
export const VerbsErrorCode = {
  /** An attribute is missing, out of range or not allowed for this transition (EINVAL). */
  InvalidArgument: 'ROCE_ERR_EINVAL',
  /** A queue is full (ENOMEM from ibv_post_send / ibv_post_recv). */
  QueueFull: 'ROCE_ERR_ENOMEM',
  /** The object is in a state that does not allow the call. */
  BadState: 'ROCE_ERR_BAD_STATE',
  /** A key, QP or other object does not exist. */
  NotFound: 'ROCE_ERR_NOT_FOUND',
  /** The object is still in use (e.g. an MR bound to a PD being freed). */
  Busy: 'ROCE_ERR_EBUSY',
  /** Not implemented by this stack. */
  NotSupported: 'ROCE_ERR_EOPNOTSUPP',
  /** A device limit (max_qp, max_mr: stack/device-limits.ts) is reached. */
  Limit: 'ROCE_ERR_LIMIT',
} as const;
export type VerbsErrorCode = (typeof VerbsErrorCode)[keyof typeof VerbsErrorCode];

/** A verbs call refused: a bad argument, a full queue, a wrong state or an unknown object. */
export class VerbsError extends RoceError<VerbsErrorCode> {}

export function invalid(message: string): VerbsError {
  return new VerbsError(VerbsErrorCode.InvalidArgument, message);
}
