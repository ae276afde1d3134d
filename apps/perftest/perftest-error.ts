/** The typed error of a perftest run: a bad parameter, a failed completion, no progress, or a peer that cannot work with this side. */
import { RoceError } from '../../base/roce-error';

export const PerftestErrorCode = {
  /** A parameter is out of range or not allowed for the test. */
  CONFIG: 'ROCE_ERR_PERFTEST_CONFIG',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_PERFTEST_COMPLETION',
  /** The test made no progress within the run timeout. */
  TIMEOUT: 'ROCE_ERR_PERFTEST_TIMEOUT',
  /** The peer's QP attributes cannot work with this side's (GID types, MTU). */
  INCOMPATIBLE: 'ROCE_ERR_PERFTEST_INCOMPATIBLE',
  /** -R: the peer refused the RDMA CM connection (a REJ: nobody listens on the port, or it would not accept). */
  REJECTED: 'ROCE_ERR_PERFTEST_REJECTED',
  /** -R: the RDMA CM connection could not be made (no route to the peer, the REQ or REP not answered). */
  UNREACHABLE: 'ROCE_ERR_PERFTEST_UNREACHABLE',
} as const;
export type PerftestErrorCode = (typeof PerftestErrorCode)[keyof typeof PerftestErrorCode];

export class PerftestError extends RoceError<PerftestErrorCode> {
  readonly field: string | undefined;
  constructor(code: PerftestErrorCode, message: string, field?: string) {
    super(code, message);
    this.field = field;
  }
}

/** A CONFIG error naming `field`. */
export function configError(field: string, why: string): PerftestError {
  return new PerftestError(PerftestErrorCode.CONFIG, `${field} ${why}`, field);
}
