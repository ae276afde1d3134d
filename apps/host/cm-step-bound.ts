/**
 * How long an RDMA CM tool waits for a CM step (the REP or RTU of a connection, the SIDR_REP of a
 * UD resolution, the DREP of a disconnect), derived from the CM's own timers instead of a fixed
 * 10 s. The CM resends an unanswered REQ, REP or DREQ every response wait, twice the
 * packet life time plus the peer's CM response time (IBTA vol. 1 §12.6, the REQ's Remote CM
 * Response Timeout; cm.c ib_send_cm_req() timeout_ms), up to max CM retries times, and then
 * reports UNREACHABLE (cma.c: RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT); a SIDR_REQ waits the
 * response time alone (cma.c resolve: 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms). A peer may stretch a
 * wait once with an MRA (service timeout 24 from librdmacm, 68.7 s). The tool's bound is that sum
 * plus a margin: the CM's own event names what ran out; the bound only catches a CM that stayed
 * silent, and then the message says which timers it was made of.
 */
import { CmDefaults, cmTimeNs, responseWaitNs } from '../../stack/cm/timers';
import { MARGIN_MS, type NoProgressBound } from './no-progress-bound';

export interface CmTiming {
  /** CM response timeout code (librdmacm: 20, 4.3 s). */
  responseTimeout?: number;
  /** Max CM retries (librdmacm: 15). */
  maxCmRetries?: number;
}

const fmt = (ns: number): string => {
  const ms = ns / 1e6;
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
};

/** The bound of a CM step with `t`; `sidr` for a SIDR_REQ (no packet life time in its wait, no MRA). */
export function cmStepBound(t: CmTiming = {}, sidr = false): NoProgressBound {
  const rt = t.responseTimeout ?? CmDefaults.responseTimeout;
  const retries = t.maxCmRetries ?? CmDefaults.maxCmRetries;
  const plt = CmDefaults.packetLifeTime;
  const waitNs = sidr ? cmTimeNs(rt) : responseWaitNs(plt, rt);
  const mraNs = sidr ? 0 : cmTimeNs(CmDefaults.mraServiceTimeout);
  const ms = Math.ceil(((retries + 1) * waitNs + mraNs) / 1e6 + MARGIN_MS);
  const wait = sidr
    ? `SIDR response wait ${fmt(waitNs)} (response timeout ${rt})`
    : `CM response wait ${fmt(waitNs)} (packet life time ${plt}, response timeout ${rt})`;
  const why = `${wait} × ${retries + 1} tries (max CM retries ${retries})${mraNs > 0 ? ` + one MRA's service time ${fmt(mraNs)}` : ''} + ${MARGIN_MS} ms margin`;
  return { ms, why };
}

/** The CM timing as rdma_connect / resolveUd options (only what is set). */
export function cmConnectTiming(t: CmTiming | undefined): { responseTimeout?: number; maxCmRetries?: number } {
  return {
    ...(t?.responseTimeout !== undefined ? { responseTimeout: t.responseTimeout } : {}),
    ...(t?.maxCmRetries !== undefined ? { maxCmRetries: t.maxCmRetries } : {}),
  };
}
