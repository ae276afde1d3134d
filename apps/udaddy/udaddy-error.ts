/**
 * The errors of `roce udaddy` (apps/udaddy): a parameter udaddy refuses, a service ID resolution
 * that failed, a data phase that stalled. Each carries `status`, the value udaddy's main() would
 * return for the same failure ("return status %d"): the rdma_cm event's status (a negative errno,
 * or the SIDR_REP status as cma.c reports it), or -EINVAL for a size larger than the MTU.
 */
import { RoceError } from '../../base/roce-error';

export const UdaddyErrorCode = {
  /** A parameter is out of range (udaddy: -S larger than the active MTU, "message_size %d is larger than active mtu %d"). */
  CONFIG: 'ROCE_ERR_UDADDY_CONFIG',
  /** The service ID resolution failed: the SIDR_REP's status was not success, or the SIDR_REQ was never answered, or no neighbour. */
  UNREACHABLE: 'ROCE_ERR_UDADDY_UNREACHABLE',
  /** The SIDR_REP's Q_Key is not the one the QP was given (cma.c cma_set_qkey(): RDMA_CM_EVENT_ADDR_ERROR). */
  ADDR_ERROR: 'ROCE_ERR_UDADDY_ADDR_ERROR',
  /** A wait made no progress within the timeout (a datagram lost: UD does not resend; or no client came). */
  TIMEOUT: 'ROCE_ERR_UDADDY_TIMEOUT',
} as const;
export type UdaddyErrorCode = (typeof UdaddyErrorCode)[keyof typeof UdaddyErrorCode];

export class UdaddyError extends RoceError<UdaddyErrorCode> {
  constructor(
    code: UdaddyErrorCode,
    message: string,
    /** What udaddy returns for this failure (its "return status"). */
    readonly status: number,
  ) {
    super(code, message);
  }
}
