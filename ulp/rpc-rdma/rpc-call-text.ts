/**
 * The "RPC-over-RDMA calls" section of `roce analyze`'s text report (rpc-call-analysis.ts), as
 * every protocol's (ulp/exchange-text.ts), with each connection's credits.
 */
import type { RpcConversationReport, RpcRdmaAnalysis } from './rpc-call-analysis';
import { exchangeSectionText } from '../exchange-text';

/** The section, ending with a newline; empty when the capture holds no RPC-over-RDMA connection. */
export function rpcCallText(a: RpcRdmaAnalysis, verbose: boolean): string {
  return exchangeSectionText<RpcConversationReport>(
    {
      title: 'RPC-over-RDMA calls',
      noun: ['call', 'calls'],
      side: 'server',
      span: 'call to reply',
      what: (r) => `${r.name} xid ${r.key}`,
      extra: (r) => (r.via === 'read-chunk' ? ' (call in a read chunk)' : ''),
      unanswered: 'no reply',
      more: (c) => {
        const k = c.credits;
        const lines = [
          `    credits: requested ${k.requested ?? '?'}, granted ${k.granted ?? '?'}${k.overGrant > 0 ? `; ${k.overGrant} call${k.overGrant === 1 ? '' : 's'} beyond the grant` : ''}`,
        ];
        const i = c.inline;
        if (i !== null && (i.client.sentRecord || i.server.sentRecord || i.overInline > 0)) {
          const side = (s: typeof i.client) =>
            `send ${s.send}, receive ${s.receive}${s.remoteInvalidate ? ', remote invalidation' : ''}${s.sentRecord ? '' : ' (default)'}`;
          lines.push(
            `    inline: client ${side(i.client)}; server ${side(i.server)}${i.overInline > 0 ? `; ${i.overInline} message${i.overInline === 1 ? '' : 's'} beyond the receiver's size` : ''}`,
          );
        }
        return lines;
      },
    },
    a.conversations,
    verbose,
  );
}
