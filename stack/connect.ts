/**
 * Connecting two QPs the way the out-of-band exchange of rc_pingpong or
 * perftest does: each side learns the other's QPN, start PSN and GID, then
 * goes RESET -> INIT -> RTR -> RTS with the attributes those tools use
 * (path MTU, min_rnr_timer 12, timeout 14, retry_cnt 7, rnr_retry 7, one
 * outstanding READ/atomic), unless the caller overrides them.
 */
import { QpState, QpType } from './qp-type-and-state';
import { Access } from './access-flags';
import type { Mtu } from './mtu';
import type { QueuePair } from './queue-pair';
import type { Device } from './device';
import { VerbsError, VerbsErrorCode } from './errors';

/** What one end tells the other to connect a QP, as rc_pingpong's exchange does: QPN, start PSN, GID and MAC. */
export interface Endpoint {
  qpn: number;
  psn: number;
  gid: Uint8Array;
  mac: number;
  /**
   * The GID's index in its device's table, for the local end: the QP's source GID (ahAttr.sgidIndex).
   * Without it the device picks one for the destination (the first IPv4-mapped GID, or index 0).
   */
  gidIndex?: number;
}

/** QP attributes for `connectQp` beyond the endpoints (path MTU, timeouts, retry counts, RDMA read depth...). */
export interface ConnectOptions {
  pathMtu?: Mtu;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  minRnrTimer?: number;
  maxRdAtomic?: number;
  maxDestRdAtomic?: number;
  accessFlags?: number;
  trafficClass?: number;
  qkey?: number;
}

/** The local side's endpoint description (what the out-of-band exchange sends). */
export function endpointOf(dev: Device, qp: QueuePair, psn: number, gidIndex = 1): Endpoint {
  const index = dev.gids[gidIndex] !== undefined ? gidIndex : 0;
  const gid = dev.gids[index];
  if (gid === undefined) throw new VerbsError(VerbsErrorCode.NotFound, 'device has no GID');
  return { qpn: qp.qpNum, psn, gid, mac: dev.driver.mac, gidIndex: index };
}

/** Moves `qp` to RTS towards `remote`; `localPsn` is its send PSN. */
export function connectQp(qp: QueuePair, local: Endpoint, remote: Endpoint, o: ConnectOptions = {}): void {
  const access = o.accessFlags ?? Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
  if (qp.state !== QpState.RESET) qp.modify({ qpState: QpState.RESET });
  if (qp.type === QpType.UD) {
    qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: o.qkey ?? 0x11111111 });
    qp.modify({ qpState: QpState.RTR });
    qp.modify({ qpState: QpState.RTS, sqPsn: local.psn });
    return;
  }
  qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: access & ~Access.MW_BIND });
  // The QP sends from the local endpoint's GID, and takes packets only to it (stack/port.ts fromPeer).
  const ahAttr = {
    dgid: remote.gid,
    dmac: remote.mac,
    hopLimit: 64,
    ...(local.gidIndex !== undefined ? { sgidIndex: local.gidIndex } : {}),
    ...(o.trafficClass !== undefined ? { trafficClass: o.trafficClass } : {}),
  };
  if (qp.type === QpType.RC) {
    qp.modify({
      qpState: QpState.RTR,
      ahAttr,
      pathMtu: o.pathMtu ?? 3,
      destQpNum: remote.qpn,
      rqPsn: remote.psn,
      maxDestRdAtomic: o.maxDestRdAtomic ?? 16,
      minRnrTimer: o.minRnrTimer ?? 12,
    });
    qp.modify({
      qpState: QpState.RTS,
      sqPsn: local.psn,
      timeout: o.timeout ?? 14,
      retryCnt: o.retryCnt ?? 7,
      rnrRetry: o.rnrRetry ?? 7,
      maxRdAtomic: o.maxRdAtomic ?? 16,
    });
  } else {
    qp.modify({ qpState: QpState.RTR, ahAttr, pathMtu: o.pathMtu ?? 3, destQpNum: remote.qpn, rqPsn: remote.psn });
    qp.modify({ qpState: QpState.RTS, sqPsn: local.psn });
  }
}
