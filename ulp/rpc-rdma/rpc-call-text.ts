/**
 * The "RPC-over-RDMA calls" section of `roce analyze`'s text report (rpc-call-analysis.ts): per
 * connection, the calls and their latency, the data moved, the credits, and what went wrong, named;
 * with `verbose`, a line per call.
 */
import type { RpcCallRecord, RpcConversationReport, RpcRdmaAnalysis } from './rpc-call-analysis';
import { latencyLines } from '../command-latency';

const hex32 = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;

/** "server 198.18.0.2 QP 0x000012" from a CM connection's key `address/QPN`; "198.18.0.1 and 198.18.0.2" from an address pair. */
function conversationName(key: string): string {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return key.replace(' ', ' and ');
  return `server ${key.slice(0, slash)} QP 0x${Number(key.slice(slash + 1))
    .toString(16)
    .padStart(6, '0')}`;
}

function callLine(c: RpcCallRecord): string {
  const done = c.reply === null ? 'no reply' : `${(c.reply.latencyNs / 1000).toFixed(3)} µs, ${c.reply.status} (frame ${c.reply.frame})`;
  const r = c.rdma;
  const rdma =
    r.reads + r.writes + r.packets === 0
      ? ''
      : `; RDMA ${[r.reads > 0 ? `${r.reads} READ${r.reads > 1 ? 's' : ''}` : '', r.writes > 0 ? `${r.writes} WRITE${r.writes > 1 ? 's' : ''}` : '']
          .filter((x) => x !== '')
          .join(' and ')}, ${r.packets} packets, ${r.bytes} B${r.resent > 0 ? `, ${r.resent} sent again` : ''}`;
  const via = c.callIn === 'read-chunk' ? ' (call in a read chunk)' : '';
  return `${c.name} xid ${hex32(c.xid)} (frame ${c.frame})${via}: ${done}${rdma}`;
}

function conversationText(c: RpcConversationReport, verbose: boolean): string[] {
  const out: string[] = [`  ${conversationName(c.conversation)}`];
  const errors = c.errors.length > 0 ? ` (${c.errors.length} with an error)` : '';
  out.push(`    ${c.calls} call${c.calls === 1 ? '' : 's'}, ${c.answered} answered${errors}; at most ${c.maxOutstanding} outstanding`);
  const k = c.credits;
  out.push(
    `    credits: requested ${k.requested ?? '?'}, granted ${k.granted ?? '?'}${k.overGrant > 0 ? `; ${k.overGrant} call${k.overGrant === 1 ? '' : 's'} beyond the grant` : ''}`,
  );
  out.push(...latencyLines('call to reply', c, '    '));
  out.push(`    data: ${c.bytes.sends} B in SENDs, ${c.bytes.rdmaRead} B by RDMA READ, ${c.bytes.rdmaWrite} B by RDMA WRITE`);
  for (const r of c.errors) out.push(`    error: ${callLine(r)}`);
  for (const r of c.neverAnswered) out.push(`    never answered: ${callLine(r)}`);
  if (verbose) for (const r of c.list) out.push(`    ${callLine(r)}`);
  return out;
}

/** The section, ending with a newline; empty when the capture holds no RPC-over-RDMA connection. */
export function rpcCallText(a: RpcRdmaAnalysis, verbose: boolean): string {
  const n = a.conversations.length;
  if (n === 0) return '';
  return `\nRPC-over-RDMA calls (${n} connection${n === 1 ? '' : 's'}):\n${a.conversations.flatMap((c) => conversationText(c, verbose)).join('\n')}\n`;
}
