/** The errors of `roce cmatose` (apps/cmatose): a connection refused or not made, a broken exchange, a failed completion. */
import { RoceError } from '../../base/roce-error';

export const CmatoseErrorCode = {
  /** A parameter is out of range (-c at least 1, -C and -S not negative, an IPv4 address). */
  CONFIG: 'ROCE_ERR_CMATOSE_CONFIG',
  /** The peer's CM rejected a connection (REJ; the reason from the wire). */
  REJECTED: 'ROCE_ERR_CMATOSE_REJECTED',
  /** The peer could not be reached (no route or neighbour, the REQ or REP never answered). */
  UNREACHABLE: 'ROCE_ERR_CMATOSE_UNREACHABLE',
  /** The peer broke ucmatose's exchange: a disconnect before the messages were through, a message of the wrong size. */
  PROTOCOL: 'ROCE_ERR_CMATOSE_PROTOCOL',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_CMATOSE_COMPLETION',
  /** Nothing happened for the step's timeout. */
  TIMEOUT: 'ROCE_ERR_CMATOSE_TIMEOUT',
} as const;
export type CmatoseErrorCode = (typeof CmatoseErrorCode)[keyof typeof CmatoseErrorCode];

export class CmatoseError extends RoceError<CmatoseErrorCode> {}
