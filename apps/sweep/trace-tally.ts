/**
 * The engine's trace events of a run counted by kind, and its go-back-N rewinds by cause: what
 * `roce demo` prints as its interesting moments, as numbers.
 */
import type { TraceEvent, TraceListener } from '../../stack/trace';

export type TraceKind = TraceEvent['kind'];
export type RewindCause = Extract<TraceEvent, { kind: 'retransmit' }>['cause'];

export interface TraceCounts {
  byKind: Record<TraceKind, number>;
  /** `retransmit` events by cause: each is one go-back-N rewind of a requester (stack/completer.ts rewind()). */
  rewinds: Record<RewindCause, number>;
}

export function emptyTraceCounts(): TraceCounts {
  return {
    byKind: { 'nak-sent': 0, 'rnr-nak-sent': 0, 'nak-received': 0, 'rnr-nak-received': 0, timeout: 0, retransmit: 0, 'qp-error': 0 },
    rewinds: { nak: 0, timeout: 0, rnr: 0, impliedNak: 0 },
  };
}

/** A listener for `Device.tracer` that counts into `into`. */
export function tallyInto(into: TraceCounts): TraceListener {
  return (e) => {
    into.byKind[e.kind]++;
    if (e.kind === 'retransmit') into.rewinds[e.cause]++;
  };
}
