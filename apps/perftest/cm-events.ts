/** What the -R mode makes of RDMA CM events: a failed connection as a typed error, and the GID of an IPv4 peer. */
import type { RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { PerftestError, PerftestErrorCode } from './perftest-error';

/** The IPv4-mapped GID of a dotted quad (the GID rxe gives an IPv4 address). */
export function v4Gid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  ip.split('.').forEach((p, i) => (g[12 + i] = Number(p)));
  return g;
}

/** A connection that did not come up, as perftest reports it ("Unexpected CM event", rdma_cm_event_error_handler()). */
export function cmEventFailure(e: RdmaCmEvent, what: string): PerftestError {
  switch (e.type) {
    case 'REJECTED':
      return new PerftestError(PerftestErrorCode.REJECTED, `${what}: RDMA_CM_EVENT_REJECTED, REJ reason ${e.reason} (${e.reasonText})`, 'rdma_cm');
    case 'UNREACHABLE':
      return new PerftestError(PerftestErrorCode.UNREACHABLE, `${what}: RDMA_CM_EVENT_UNREACHABLE (${e.why})`, 'rdma_cm');
    case 'CONNECT_ERROR':
      return new PerftestError(PerftestErrorCode.UNREACHABLE, `${what}: RDMA_CM_EVENT_CONNECT_ERROR (${e.why})`, 'rdma_cm');
    case 'DISCONNECTED':
      return new PerftestError(PerftestErrorCode.UNREACHABLE, `${what}: the peer disconnected before the connection was established`, 'rdma_cm');
    default:
      return new PerftestError(PerftestErrorCode.UNREACHABLE, `${what}: unexpected RDMA CM event ${e.type}`, 'rdma_cm');
  }
}
