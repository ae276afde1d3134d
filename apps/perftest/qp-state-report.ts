/**
 * One line describing where a QP and its device stand, for the error of a run
 * that made no progress: the requester's and completer's PSNs, the send queue,
 * whether the local ACK timer is armed, the responder's expected PSN and
 * receive queue, the QP's counters that moved and the driver's frame counters
 * (drops included). A stall then says which side waits for what: a window
 * that stays closed, a timer that is not armed, frames that stopped arriving.
 */
import type { QueuePair } from '../../stack/queue-pair';
import type { DriverStats } from '../../nic-driver/driver';
import { WqeState } from '../../stack/work-request';
import { QP_STATE_NAMES } from '../../stack/qp-type-and-state';
import { psnDiff } from '../../base/psn';
import { nonZeroCounters } from './result';

/** Milliseconds from now to `atNs` on the device's clock, as text ('-' for none). */
function inMs(qp: QueuePair, atNs: number): string {
  if (!Number.isFinite(atNs)) return '-';
  return `${((atNs - qp.ctx.clock.now()) / 1e6).toFixed(1)}ms`;
}

/** The state of `qp` (and of the driver its device sends through) in one line. */
export function qpStateReport(qp: QueuePair, driver: { readonly name: string; readonly stats: DriverStats }): string {
  const { req, comp, resp } = qp;
  let posted = 0;
  let started = 0;
  for (let i = comp.index; i < qp.sq.length; i++) {
    const s = qp.sq[i]?.state;
    if (s === WqeState.POSTED) posted++;
    else if (s === WqeState.STARTED) started++;
  }
  const oldest = qp.sq[comp.index];
  const counters = Object.entries(nonZeroCounters(qp.counters))
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const d = driver.stats;
  const parts = [
    `QP 0x${qp.qpNum.toString(16)} ${QP_STATE_NAMES[qp.state] ?? String(qp.state)}`,
    `requester: next PSN ${req.psn}, highest sent ${req.sentAny ? req.sentHigh : '-'}, unacked ${req.sentAny ? psnDiff(req.psn, comp.psn) : 0} PSNs, WQE ${req.next} of ${qp.sq.length}` +
      (req.waitUntil > qp.ctx.clock.now() ? `, RNR wait ${inMs(qp, req.waitUntil)}` : ''),
    `completer: oldest unacked PSN ${comp.psn}, WQE ${comp.index}` +
      (oldest !== undefined ? ` (wr_id ${oldest.wrId}, PSNs ${oldest.firstPsn}..${oldest.lastPsn})` : '') +
      `, ${started} started + ${posted} posted outstanding, retransmit timer ${comp.timer !== null ? `armed (deadline in ${inMs(qp, comp.deadline)})` : 'not armed'}, retries left ${comp.retryLeft}${comp.retrying ? ', retrying' : ''}`,
    `responder: expected PSN ${resp.psn}, ${qp.rq.length} receives posted`,
    `counters: ${counters === '' ? 'none' : counters}`,
    `driver ${driver.name}: rx ${d.rxFrames} frames (${d.rxDropped} dropped), tx ${d.txFrames} frames (${d.txDropped} dropped)`,
  ];
  return parts.join('; ');
}
