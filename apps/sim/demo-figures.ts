/**
 * The loss-recovery figures `roce demo` reports in its summary, from the counters of both
 * devices: the demo prints them and the self-consistency sweep (apps/sweep/) holds them to the
 * counters and to `roce analyze`'s episodes, so both read them here.
 */
import type { Counters } from '../../stack/counters';

export interface DemoRecoveryFigures {
  retransmittedPackets: number;
  /** PSN sequence error NAKs the responders sent. */
  seqErrNaks: number;
  /** RNR NAKs the responders sent. */
  rnrNaks: number;
  /** Local ACK timeouts of the requesters. */
  timeouts: number;
}

export function demoRecoveryFigures(totals: Counters): DemoRecoveryFigures {
  return {
    retransmittedPackets: totals.retransmitted_pkts,
    seqErrNaks: totals.send_seq_err_nak,
    rnrNaks: totals.send_rnr_err,
    timeouts: totals.local_ack_timeout_err,
  };
}
