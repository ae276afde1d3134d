/** The errors of `roce rping` (apps/rping): a connection refused or not made, a broken exchange, a mismatch. */
import { RoceError } from '../../base/roce-error';

export const RpingErrorCode = {
  /** A parameter is out of range (rping's own limits: -S from RPING_MIN_BUFSIZE to 65535, -C not negative). */
  CONFIG: 'ROCE_ERR_RPING_CONFIG',
  /** The peer's CM rejected the connection (REJ; the reason from the wire). */
  REJECTED: 'ROCE_ERR_RPING_REJECTED',
  /** The peer could not be reached (no route or neighbour, or the REQ was never answered). */
  UNREACHABLE: 'ROCE_ERR_RPING_UNREACHABLE',
  /** The peer broke rping's exchange: a message of the wrong size, a buffer larger than ours, an unexpected disconnect. */
  PROTOCOL: 'ROCE_ERR_RPING_PROTOCOL',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_RPING_COMPLETION',
  /** Nothing happened for the run's timeout. */
  TIMEOUT: 'ROCE_ERR_RPING_TIMEOUT',
  /** -V: the data the server wrote back is not what the client sent ("data mismatch!"). */
  MISMATCH: 'ROCE_ERR_RPING_MISMATCH',
} as const;
export type RpingErrorCode = (typeof RpingErrorCode)[keyof typeof RpingErrorCode];

export class RpingError extends RoceError<RpingErrorCode> {}
