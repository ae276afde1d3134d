/**
 * What a finished run says about its QP (apps/host/qp-health.ts): a QP its user moved to ERR (as an
 * RDMA CM disconnect does, rdma_disconnect) ended in order; a QP the transport moved to ERR, or
 * exhausted retries, fail the run; recovered retries are warnings.
 */
import { qpHealth } from '../../apps/host/qp-health';
import { createSimPair } from '../../apps/sim/sim-pair';
import { QpState, QpType } from '../../stack/qp-type-and-state';

function qp() {
  const sim = createSimPair({ seed: 1 });
  const pd = sim.a.allocPd();
  const cq = sim.a.createCq(16);
  return sim.a.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
}

test('a QP moved to ERR by its user (a disconnect) is no problem', () => {
  const q = qp();
  q.modify({ qpState: QpState.ERR });
  expect(qpHealth(q)).toEqual({ problems: [], warnings: [] });
});

test('a QP the transport moved to ERR fails the run, naming the cause', () => {
  const q = qp();
  q.enterError('NAK remote access error received for WRITE PSN 7');
  expect(qpHealth(q).problems).toEqual([`QP 0x${q.qpNum.toString(16)} is in the error state: NAK remote access error received for WRITE PSN 7`]);
});

test('exhausted retries are problems; recovered ones are warnings', () => {
  const q = qp();
  q.counters.retry_exceeded_err = 1;
  q.counters.local_ack_timeout_err = 3;
  const h = qpHealth(q);
  expect(h.problems).toEqual([expect.stringMatching(/transport retry count ran out 1 time\(s\) \(retry_exceeded_err\)/)]);
  expect(h.warnings).toEqual([expect.stringMatching(/3 local ACK timeout\(s\)/)]);
});
