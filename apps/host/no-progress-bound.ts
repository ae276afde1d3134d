/**
 * How long a live command waits without progress before it gives up, derived from its QP's own
 * timers instead of a fixed 300 s. A requester whose peer died, went silent or was
 * hijacked ends with an error completion within local ACK timeout × (retry_cnt + 1) (IBTA vol. 1
 * §9.7.6.1.3: 4.096 µs × 2^timeout per try), or RNR timer × (rnr_retry + 1) when the peer keeps
 * answering RNR NAKs (§9.7.5.2.8; rnr_retry 7, "infinite", counted as 8 waits here). A side that
 * only waits for the peer's next message cannot see a dead peer at all (RC has no keep-alive): the
 * peer's own retries bound how late a live peer's message may come, so the same sum bounds the
 * wait, plus a margin for the two user-space processes being scheduled (`MARGIN_MS`).
 *
 * An explicit --timeout overrides the derived value. A QP timeout of 0 (no local ACK timer) gives
 * the transport no bound: then `NO_TIMER_FALLBACK_MS` applies and the message says so.
 */
import { RNR_TIMER_USEC } from '../../packets/aeth';

export interface TransportTimers {
  /** Local ACK timeout exponent (0 = none). */
  timeout: number;
  retryCnt: number;
  rnrRetry: number;
  /** The RNR NAK timer code the peer answers with (both ends of these tools set the same min_rnr_timer). */
  minRnrTimer: number;
}

export interface NoProgressBound {
  readonly ms: number;
  /** What the bound is made of, for the message of a run that ran out of it. */
  readonly why: string;
}

/** Scheduling margin: a process of this stack may be descheduled for a while on a loaded host (GC, other processes). */
export const MARGIN_MS = 2000;
/** With timeout 0 the transport never gives up: the wait is bounded by this instead. */
export const NO_TIMER_FALLBACK_MS = 60_000;

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(3).replace(/\.?0+$/, ''));

/** The no-progress bound of a QP with `t`, or the explicit `overrideS` seconds (--timeout). */
export function noProgressBound(t: TransportTimers, overrideS?: number): NoProgressBound {
  if (overrideS !== undefined) return { ms: overrideS * 1000, why: `--timeout ${overrideS} s` };
  const rnrMs = ((RNR_TIMER_USEC[t.minRnrTimer] ?? RNR_TIMER_USEC[0] ?? 655360) / 1000) * (t.rnrRetry + 1);
  const rnr = `RNR timer ${fmt((RNR_TIMER_USEC[t.minRnrTimer] ?? 655360) / 1000)} ms × ${t.rnrRetry + 1} (rnr_retry ${t.rnrRetry})`;
  if (t.timeout === 0) {
    return { ms: NO_TIMER_FALLBACK_MS + rnrMs, why: `QP timeout 0 (no local ACK timer: the transport never gives up), so ${NO_TIMER_FALLBACK_MS} ms + ${rnr}` };
  }
  const ackMs = (4.096 * 2 ** t.timeout) / 1000;
  const transportMs = ackMs * (t.retryCnt + 1);
  const ms = Math.ceil(transportMs + rnrMs + MARGIN_MS);
  return {
    ms,
    why: `local ACK timeout ${fmt(ackMs)} ms (timeout ${t.timeout}) × ${t.retryCnt + 1} tries (retry_cnt ${t.retryCnt}) + ${rnr} + ${MARGIN_MS} ms margin`,
  };
}
