/**
 * How many threads `roce decode` and `roce analyze` work on, their own included
 * (capture-engine/decode-workers.ts and capture-engine/analyze-workers.ts start the others as worker threads). By
 * default: their own only for a small file, where starting a worker costs more than it saves, and
 * for `roce decode --count`, which stops early; else one per core up to the command's most
 * (`MAX_AUTO_THREADS` for decode, 2 for analyze). `--threads N` says how many; 1 is the command's
 * own thread only.
 */
import { UsageError, intValue } from './args';

/** Threads at most unless `--threads` asks for more (the reading thread would not keep more busy). */
export const MAX_AUTO_THREADS = 4;
/** Files smaller than this are decoded on the command's own thread unless `--threads` says otherwise. */
export const AUTO_THREADS_MIN_BYTES = 16 << 20;
/** `--threads` at most. */
export const MAX_THREADS = 64;

/** `--threads`' value, at most `max`: a count, or null when the option was not given (choose by the file). */
export function parseThreads(text: string | undefined, max = MAX_THREADS): number | null {
  return text === undefined ? null : intValue(text, 'threads', 1, max);
}

export interface ThreadsContext {
  /** The worker's compiled script, or null when running from the TypeScript sources. */
  script: string | null;
  fileBytes: number;
  /** `--count` was given: decoding stops after N frames printed, on the command's thread. */
  counted: boolean;
  cores: number;
  /** Threads at most by default (`MAX_AUTO_THREADS` when not given). */
  maxAuto?: number;
  /** Files smaller than this stay on one thread by default (`AUTO_THREADS_MIN_BYTES` when not given). */
  minAutoBytes?: number;
}

export function threadCount(requested: number | null, c: ThreadsContext): number {
  if (requested === 1) return 1;
  if (requested !== null) {
    if (c.counted) throw new UsageError("--threads above 1 cannot be combined with --count: --count stops after N frames, on the command's own thread");
    if (c.script === null)
      throw new UsageError('--threads above 1 needs the compiled command (npm run build): a worker thread runs a script in dist/capture-engine/');
    return requested;
  }
  if (c.script === null || c.counted || c.cores < 2 || c.fileBytes < (c.minAutoBytes ?? AUTO_THREADS_MIN_BYTES)) return 1;
  return Math.min(c.maxAuto ?? MAX_AUTO_THREADS, c.cores);
}
