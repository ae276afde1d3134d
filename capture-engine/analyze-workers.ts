/**
 * `roce analyze` on two threads: a worker thread (capture-engine/analyze-worker.ts) reads the capture and
 * decodes it, and the command's thread analyses the decoded frames (analysis/view-batch.ts). The
 * analysis itself stays on one thread, in capture order, so it is the one `analyzeFile` makes:
 * the same views reach the same `Analyzer`. Each batch goes back to the worker once read, so at
 * most `VIEW_BATCHES_OUT` exist.
 */
import { Worker } from 'node:worker_threads';
import { compiledWorkerScript } from './worker-script';
import { type AnalysisResult, Analyzer, type AnalyzerOptions } from '../analysis/analyzer';
import { type ViewBatch, ViewBatchReader } from '../analysis/view-batch';
import { wireErrorFromParts } from '../packets/errors';
import { internalError } from '../base/programming-error';
import type { AnalyzeWorkerData, FromAnalyzeWorker } from './analyze-worker-messages';

/** The worker's compiled script, or null when the command runs from its TypeScript sources. */
export function analyzeWorkerScript(): string | null {
  return compiledWorkerScript('analyze-worker');
}

export interface WorkerAnalysis {
  result: AnalysisResult;
  /** Batches the worker sent. */
  batches: number;
}

/**
 * Analyses the capture at `file` with its reading and decoding on a worker thread. `opts` are the
 * analyzer's (no `onFrame`: the packets stay on the worker); `decode` gives the port and whether
 * ICRCs are checked, and `native` whether the worker may use the addon.
 */
export async function analyzeWithWorker(
  file: string,
  opts: Omit<AnalyzerOptions, 'onFrame' | 'decode'>,
  decode: { rocePort: number; verifyIcrc: boolean; native: boolean },
  script: string,
): Promise<WorkerAnalysis> {
  // The analyzer knows how the frames were decoded (whether ICRCs were checked, for the capture
  // quality), and the reader decodes CM MADs again as the worker did.
  const decodeOpts = { rocePort: decode.rocePort, verifyIcrc: decode.verifyIcrc };
  const analyzer = new Analyzer({ ...opts, decode: decodeOpts });
  const reader = new ViewBatchReader(analyzer, decodeOpts);
  const data: AnalyzeWorkerData = { file, ...decode };
  const worker = new Worker(script, { workerData: data });
  let batches = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const fail = (e: Error): void => {
        if (done) return;
        done = true;
        reject(e);
      };
      worker.on('message', (m: FromAnalyzeWorker) => {
        if (done) return;
        try {
          if (m.type === 'batch') {
            const more = reader.read(m.batch);
            batches++;
            if (!more) {
              // The analysis asked to stop (--follow --fail-on): the rest is left unread.
              done = true;
              resolve();
              return;
            }
            const b: ViewBatch = m.batch;
            worker.postMessage(b, [b.slots.buffer as ArrayBuffer, b.raw.buffer as ArrayBuffer]);
          } else if (m.type === 'end') {
            analyzer.captureError = m.error === null ? null : wireErrorFromParts(m.error);
            done = true;
            resolve();
          } else fail(m.wire !== null ? wireErrorFromParts(m.wire) : internalError(`the analysis worker could not read ${file}: ${m.message}`));
        } catch (e) {
          fail(e instanceof Error ? e : internalError(String(e)));
        }
      });
      worker.on('error', (e: Error) => fail(internalError(`the analysis worker thread failed: ${e.message}`)));
      worker.on('exit', (code: number) => fail(internalError(`the analysis worker thread exited (code ${code}) before the capture was read`)));
    });
  } finally {
    await worker.terminate();
  }
  return { result: analyzer.finish(), batches };
}
