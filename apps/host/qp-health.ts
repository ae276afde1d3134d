/**
 * What a finished run must say about its QP, whatever its own loop saw: a QP in the error state,
 * or a requester that ran out of retries, makes the run fail (`ok: false`) and is named in its
 * problems; retries that recovered are worth a warning, since they are not free (each one cost a
 * local ACK timeout or a NAK round trip). A passive side (the server of a one-sided bandwidth
 * test) posts nothing and polls nothing, so without this it would report success over a QP that a
 * hostile frame had moved to ERR.
 */
import { QpState } from '../../stack/qp-type-and-state';
import type { Counters } from '../../stack/counters';
import { QP_ERR_BY_MODIFY } from '../../stack/queue-pair';

export interface QpHealthView {
  readonly qpNum: number;
  readonly state: QpState;
  readonly errorReason: string;
  readonly counters: Counters;
}

export interface QpHealth {
  problems: string[];
  warnings: string[];
}

const hex = (n: number): string => `0x${n.toString(16)}`;

export function qpHealth(qp: QpHealthView): QpHealth {
  const problems: string[] = [];
  const warnings: string[] = [];
  const c = qp.counters;
  // A QP its user moved to ERR (an RDMA CM disconnect does, as rdma_disconnect) ended in order; any other
  // way into ERR is a transport failure (a NAK of class C, retries exhausted, a bad receive WQE).
  if (qp.state === QpState.ERR && qp.errorReason !== QP_ERR_BY_MODIFY)
    problems.push(`QP ${hex(qp.qpNum)} is in the error state: ${qp.errorReason || 'no reason recorded'}`);
  // rxe/mlx5 counter names: retry_exceeded_err = transport retries exhausted, retry_rnr_exceeded_err = RNR retries exhausted.
  if (c.retry_exceeded_err > 0) problems.push(`QP ${hex(qp.qpNum)}: the transport retry count ran out ${c.retry_exceeded_err} time(s) (retry_exceeded_err)`);
  if (c.retry_rnr_exceeded_err > 0)
    problems.push(`QP ${hex(qp.qpNum)}: the RNR retry count ran out ${c.retry_rnr_exceeded_err} time(s) (retry_rnr_exceeded_err)`);
  if (c.local_ack_timeout_err > 0)
    warnings.push(`QP ${hex(qp.qpNum)}: ${c.local_ack_timeout_err} local ACK timeout(s), each followed by a go-back-N retry (local_ack_timeout_err)`);
  if (c.rcvd_seq_err > 0) warnings.push(`QP ${hex(qp.qpNum)}: ${c.rcvd_seq_err} PSN sequence error NAK(s) received, each followed by a retry (rcvd_seq_err)`);
  if (c.rcvd_rnr_err > 0) warnings.push(`QP ${hex(qp.qpNum)}: ${c.rcvd_rnr_err} RNR NAK(s) received, the receiver had no receive WQE posted (rcvd_rnr_err)`);
  const dropped = c.rcvd_malformed + c.rcvd_icrc_err;
  if (dropped > 0)
    warnings.push(
      `QP ${hex(qp.qpNum)}: ${dropped} received frame(s) dropped as malformed or with a bad ICRC (rcvd_malformed ${c.rcvd_malformed}, rcvd_icrc_err ${c.rcvd_icrc_err})`,
    );
  return { problems, warnings };
}
