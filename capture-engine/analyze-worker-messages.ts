/**
 * What `roce analyze`'s worker thread (capture-engine/analyze-worker.ts) is started with and what it sends
 * back. The command's thread answers each batch by handing it back, to be filled again.
 */
import type { ViewBatch } from '../analysis/view-batch';
import type { WireErrorParts } from '../packets/errors';

/** View batches in existence at most: filled, being read, or handed back. */
export const VIEW_BATCHES_OUT = 4;

export interface AnalyzeWorkerData {
  file: string;
  rocePort: number;
  verifyIcrc: boolean;
  /** Whether the command's thread uses the native addon (the worker loads it only then). */
  native: boolean;
}

export type FromAnalyzeWorker =
  | { type: 'batch'; batch: ViewBatch }
  /** The capture was read to its end (`error` null) or to where it is broken. */
  | { type: 'end'; error: WireErrorParts | null }
  /** Reading failed (the file could not be read): `wire` when the reader's error was a WireError. */
  | { type: 'failed'; message: string; wire: WireErrorParts | null };
