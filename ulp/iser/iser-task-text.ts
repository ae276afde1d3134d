/** The "iSER tasks" section of `roce analyze`'s text report (iser-task-analysis.ts), as every protocol's (ulp/exchange-text.ts). */
import type { IserAnalysis } from './iser-task-analysis';
import { exchangeSectionText } from '../exchange-text';

/** The section, ending with a newline; empty when the capture holds no iSER connection. */
export function iserTaskText(a: IserAnalysis, verbose: boolean): string {
  return exchangeSectionText(
    {
      title: 'iSER tasks',
      noun: ['task', 'tasks'],
      side: 'target',
      span: 'request to response',
      what: (r) => `${r.name} itt ${r.key}`,
      unanswered: 'no response',
    },
    a.connections,
    verbose,
  );
}
