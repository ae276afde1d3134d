/** The errors of `roce rdma-server` and `roce rdma-client` (apps/rdma-example): a refused or lost connection, a broken exchange. */
import { RoceError } from '../../base/roce-error';

export const RdmaExampleErrorCode = {
  /** A parameter is out of range (a port, an IPv4 address). */
  CONFIG: 'ROCE_ERR_RDMA_EXAMPLE_CONFIG',
  /** The peer's CM rejected the connection (REJ; the reason from the wire): rdma_connect()'s ECONNREFUSED. */
  REJECTED: 'ROCE_ERR_RDMA_EXAMPLE_REJECTED',
  /** The peer could not be reached (no route or neighbour, the REQ or REP never answered). */
  UNREACHABLE: 'ROCE_ERR_RDMA_EXAMPLE_UNREACHABLE',
  /** The peer broke the exchange: a message that is not 16 bytes, a disconnect before it. */
  PROTOCOL: 'ROCE_ERR_RDMA_EXAMPLE_PROTOCOL',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_RDMA_EXAMPLE_COMPLETION',
  /** Nothing happened for the step's timeout. */
  TIMEOUT: 'ROCE_ERR_RDMA_EXAMPLE_TIMEOUT',
} as const;
export type RdmaExampleErrorCode = (typeof RdmaExampleErrorCode)[keyof typeof RdmaExampleErrorCode];

export class RdmaExampleError extends RoceError<RdmaExampleErrorCode> {}
