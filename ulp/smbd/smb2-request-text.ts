/** The "SMB Direct requests" section of `roce analyze`'s text report (smb2-request-analysis.ts), as every protocol's (ulp/exchange-text.ts). */
import type { SmbdAnalysis } from './smb2-request-analysis';
import { exchangeSectionText } from '../exchange-text';

/** The section, ending with a newline; empty when the capture holds no SMB Direct connection. */
export function smbdRequestText(a: SmbdAnalysis, verbose: boolean): string {
  return exchangeSectionText(
    {
      title: 'SMB Direct requests',
      noun: ['request', 'requests'],
      side: 'server',
      span: 'request to response',
      what: (r) => (r.key === 'negotiate' ? r.name : `${r.name} mid ${r.key}`),
      unanswered: 'no response',
    },
    a.connections,
    verbose,
  );
}
