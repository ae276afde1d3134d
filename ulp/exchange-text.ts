/** Text pieces the per-protocol request reports of `roce analyze` share (exchange-analysis.ts). */
import type { ExchangeRecord } from './exchange-analysis';

/**
 * One request's line: `what (frame N)extra: 43.100 µs, STATUS (frame M); RDMA 1 READ, 2 packets,
 * 1500 B`, or `what (frame N)extra: <unanswered>` when no answer came.
 */
export function exchangeLine(what: string, c: ExchangeRecord, unanswered: string, extra = ''): string {
  const done = c.answer === null ? unanswered : `${(c.answer.latencyNs / 1000).toFixed(3)} µs, ${c.answer.status} (frame ${c.answer.frame})`;
  const r = c.rdma;
  const ops = [r.reads > 0 ? `${r.reads} READ${r.reads > 1 ? 's' : ''}` : '', r.writes > 0 ? `${r.writes} WRITE${r.writes > 1 ? 's' : ''}` : ''].filter(
    (x) => x !== '',
  );
  const rdma =
    r.reads + r.writes + r.packets === 0
      ? ''
      : `; RDMA ${ops.join(' and ')}, ${r.packets} packets, ${r.bytes} B${r.resent > 0 ? `, ${r.resent} sent again` : ''}`;
  return `${what} (frame ${c.frame})${extra}: ${done}${rdma}`;
}
