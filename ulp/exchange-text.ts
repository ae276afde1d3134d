/**
 * The per-protocol request sections of `roce analyze`'s text report (exchange-analysis.ts): per
 * connection, the requests and their latency, the data moved, and what went wrong, named; with
 * `verbose`, a line per request. RPC-over-RDMA, iSER and SMB Direct write theirs with it.
 */
import type { ExchangeRecord, ExchangeReport } from './exchange-analysis';
import { latencyLines } from './command-latency';

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

/**
 * "server 198.18.0.2 QP 0x000012" from a connection's key `address/QPN` (its `side` end, from the
 * RDMA CM); "198.18.0.1 and 198.18.0.2" from an address pair (`A B`), with how the decoder knew it
 * when the key says (`shape A B`: by a message's shape; `decode-as A B`).
 */
export function connectionName(key: string, side: string): string {
  const slash = key.lastIndexOf('/');
  if (slash < 0) {
    const w = key.split(' ');
    if (w.length === 3) return `${w[1]} and ${w[2]} (${w[0] === 'shape' ? 'by shape' : w[0]})`;
    return w.join(' and ');
  }
  const qpn = Number(key.slice(slash + 1));
  return Number.isInteger(qpn) ? `${side} ${key.slice(0, slash)} QP 0x${qpn.toString(16).padStart(6, '0')}` : key;
}

export interface ExchangeSection<R extends ExchangeReport> {
  /** `RPC-over-RDMA calls`. */
  title: string;
  /** The request's noun, singular and plural: `call`, `calls`. */
  noun: [string, string];
  /** What a connection key's address/QPN end is: `server`, `target`. */
  side: string;
  /** The latency's span: `call to reply`. */
  span: string;
  /** What a request's line says of it first (its name and key), and after its frame. */
  what(r: ExchangeRecord): string;
  extra?(r: ExchangeRecord): string;
  /** Words for a request with no answer: `no reply`. */
  unanswered: string;
  /** More lines for a connection, after its counts. */
  more?(c: R): string[];
}

/** The section, ending with a newline; empty when the capture holds no such connection. */
export function exchangeSectionText<R extends ExchangeReport>(s: ExchangeSection<R>, conns: readonly R[], verbose: boolean): string {
  const n = conns.length;
  if (n === 0) return '';
  const line = (r: ExchangeRecord): string => exchangeLine(s.what(r), r, s.unanswered, s.extra?.(r) ?? '');
  const out: string[] = [];
  for (const c of conns) {
    out.push(`  ${connectionName(c.conversation, s.side)}`);
    const errors = c.errors.length > 0 ? ` (${c.errors.length} with an error)` : '';
    out.push(`    ${c.requests} ${c.requests === 1 ? s.noun[0] : s.noun[1]}, ${c.answered} answered${errors}; at most ${c.maxOutstanding} outstanding`);
    out.push(...(s.more?.(c) ?? []));
    out.push(...latencyLines(s.span, c, '    '));
    out.push(`    data: ${c.bytes.sends} B in SENDs, ${c.bytes.rdmaRead} B by RDMA READ, ${c.bytes.rdmaWrite} B by RDMA WRITE`);
    for (const r of c.errors) out.push(`    error: ${line(r)}`);
    for (const r of c.neverAnswered) out.push(`    never answered: ${line(r)}`);
    if (verbose) for (const r of c.list) out.push(`    ${line(r)}`);
  }
  return `\n${s.title} (${n} connection${n === 1 ? '' : 's'}):\n${out.join('\n')}\n`;
}
