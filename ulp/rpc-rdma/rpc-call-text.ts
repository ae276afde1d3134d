/**
 * The "RPC-over-RDMA calls" section of `roce analyze`'s text report (rpc-call-analysis.ts): per
 * connection, the calls and their latency, the data moved, the credits, and what went wrong, named;
 * with `verbose`, a line per call.
 */
import type { RpcConversationReport, RpcRdmaAnalysis } from './rpc-call-analysis';
import type { ExchangeRecord } from '../exchange-analysis';
import { latencyLines } from '../command-latency';
import { exchangeLine } from '../exchange-text';

/** "server 198.18.0.2 QP 0x000012" from a CM connection's key `address/QPN`; "198.18.0.1 and 198.18.0.2" from an address pair. */
function conversationName(key: string): string {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return key.replace(' ', ' and ');
  return `server ${key.slice(0, slash)} QP 0x${Number(key.slice(slash + 1))
    .toString(16)
    .padStart(6, '0')}`;
}

function callLine(c: ExchangeRecord): string {
  const via = c.via === 'read-chunk' ? ' (call in a read chunk)' : '';
  return exchangeLine(`${c.name} xid ${c.key}`, c, 'no reply', via);
}

function conversationText(c: RpcConversationReport, verbose: boolean): string[] {
  const out: string[] = [`  ${conversationName(c.conversation)}`];
  const errors = c.errors.length > 0 ? ` (${c.errors.length} with an error)` : '';
  out.push(`    ${c.requests} call${c.requests === 1 ? '' : 's'}, ${c.answered} answered${errors}; at most ${c.maxOutstanding} outstanding`);
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
