/**
 * Statistics named after rxe's hardware counters (rxe_hw_counters.c), so
 * figures from a run of this stack compare directly with `rdma statistic`
 * on an rxe device. Extra counters that rxe lacks are listed after them; the congestion-control
 * ones last, with the names of the mlx5 port hw_counters (drivers/infiniband/hw/mlx5/counters.c).
 */
import { zeroCounters } from '../base/counter-set';
export const COUNTER_NAMES = [
  // rxe's counters, same names and meaning
  'sent_pkts',
  'rcvd_pkts',
  'duplicate_request',
  'out_of_seq_request',
  'rcvd_rnr_err',
  'send_rnr_err',
  'rcvd_seq_err',
  'ack_deferred',
  'retry_exceeded_err',
  'retry_rnr_exceeded_err',
  'completer_retry_err',
  'send_err',
  'link_downed',
  'rdma_sends',
  'rdma_recvs',
  // roce-ts additions
  'retransmitted_pkts',
  'local_ack_timeout_err',
  'rcvd_icrc_err',
  'rcvd_malformed',
  'rcvd_unknown_qp',
  // Packets for an RC or UC QP from another address than its peer's, or to another than its own,
  // dropped as rxe_recv.c check_addr() drops them (rxe counts none).
  'rcvd_wrong_address',
  'rcvd_nak_inv_req',
  'rcvd_nak_rem_access',
  'rcvd_nak_rem_op',
  'send_nak_inv_req',
  'send_nak_rem_access',
  'send_nak_rem_op',
  'send_seq_err_nak',
  'implied_nak',
  'qkey_violation',
  // Times a requester stopped at a message that needs a receive WQE because the responder's end-to-end
  // credits ran out (IBTA vol. 1 §9.7.7.2); named after rdmavt's n_rc_crwaits (hfi1's RcCrWait counter).
  'rc_crwaits',
  // Times a requester stopped because its device had as many packets in flight, across its QPs, as
  // its bound allows (stack/inflight-bound.ts); named after rc_crwaits, counted once per stop.
  'rc_inflight_waits',
  // congestion control, named as mlx5 names its port counters (rdma statistic / hw_counters):
  'np_ecn_marked_roce_packets',
  'np_cnp_sent',
  'rp_cnp_handled',
  'rp_cnp_ignored',
] as const;
export type CounterName = (typeof COUNTER_NAMES)[number];
export type Counters = Record<CounterName, number>;

export const newCounters = (): Counters => zeroCounters(COUNTER_NAMES);

export function addCounters(into: Counters, from: Counters): Counters {
  for (const n of COUNTER_NAMES) into[n] += from[n];
  return into;
}
