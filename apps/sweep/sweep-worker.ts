/**
 * A worker thread of the sweep script: draws its share of the cases (every `jobs`-th from its
 * slot on), runs and judges each, and posts each verdict with its case number.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { caseAt } from './case-generator';
import { judgeCase, type CaseVerdict } from './case-verdict';

export interface SweepWorkerData {
  sweepSeed: number;
  from: number;
  count: number;
  jobs: number;
  slot: number;
}

export type SweepWorkerMessage = { index: number; verdict: CaseVerdict } | { done: true };

const port = parentPort;
if (port !== null) {
  const d = workerData as SweepWorkerData;
  for (let i = d.from + d.slot; i < d.from + d.count; i += d.jobs) {
    const message: SweepWorkerMessage = { index: i, verdict: judgeCase(caseAt(d.sweepSeed, i)) };
    port.postMessage(message);
  }
  port.postMessage({ done: true } satisfies SweepWorkerMessage);
}
