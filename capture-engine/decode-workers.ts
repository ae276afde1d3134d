/**
 * `roce decode` on several threads. The command's thread fills batches with the capture's records,
 * in order (capture-engine/batch-source.ts: a classic pcap file is read straight into them). A full batch goes
 * to a worker thread (capture-engine/decode-worker.ts) that has room, else the command's thread decodes and
 * prints it itself, so that no core waits. Output is written in the order of the batches.
 *
 * The output is byte for byte what one thread prints: the records, their numbers and times are the
 * same, and each batch carries the time of the record before it for `--time delta`. At most
 * `OUT_PER_WORKER` batches per worker are out at once and `LOCAL_AHEAD` more wait to be written,
 * and the batches' buffers and output chunks go round, so memory stays flat whatever the file's size.
 */
import { Worker } from 'node:worker_threads';
import { compiledWorkerScript } from './worker-script';
import type { StreamResult } from '../analysis/capture-stream';
import type { DecodeOptions } from '../packets/decode';
import { internalError } from '../base/programming-error';
import { BatchPrinter, RecordBatch } from './decode-batch';
import type { BatchSource } from './batch-source';
import type { BatchMessage, BatchResult, DecodeWorkerData } from './decode-batch-layout';
import type { IcrcBurst } from './batch-icrc';
import type { ExactTime } from '../base/exact-time';
import { addCounts, type DecodeCounts, type PrintSettings, zeroCounts } from './decode-printer';
import { UlpPass } from './ulp-decoding';

/** Batches out per worker at most. */
const OUT_PER_WORKER = 4;
/**
 * Batches the command's thread decodes itself ahead of the oldest one not yet written, at most. Its
 * results wait for the workers' earlier ones, each holding its records and an output chunk: without
 * a bound a fast reader piled up dozens (memory then grew with the file).
 */
const LOCAL_AHEAD = 4;
/** Written output chunks handed back with a batch, at most: a batch's output usually fills one. */
const SPARES_PER_BATCH = 1;

/** The worker's compiled script, or null when the command runs from its TypeScript sources. */
export function decodeWorkerScript(): string | null {
  return compiledWorkerScript('decode-worker');
}

export interface WorkersResult {
  counts: DecodeCounts;
  /** Records read. */
  read: number;
  /** How reading ended; null when `stop` ended it first. */
  ended: StreamResult | null;
  /** Batches decoded by the worker threads, and by the command's own. */
  workerBatches: number;
  localBatches: number;
  /** Output chunks allocated over the run: a few, then the same ones go round. */
  freshChunks: number;
  /** Record batches allocated over the run: as many as may be out at once, then they go round. */
  freshBatches: number;
}

export async function decodeWithWorkers(
  source: BatchSource,
  settings: PrintSettings,
  workers: number,
  script: string,
  icrcV2: DecodeOptions['icrcV2'],
  burst: IcrcBurst | null,
  write: (chunk: Uint8Array) => boolean,
  /** True when reading should end early (the output's reader has gone). */
  stop: () => boolean = () => false,
): Promise<WorkersResult> {
  const local = new BatchPrinter(settings, icrcV2, burst);
  /** Batches out, per worker. */
  const out: number[] = Array.from({ length: workers }, () => 0);
  const threads: Worker[] = [];
  const results = new Map<number, BatchResult>();
  let failure: Error | null = null;
  let closing = false;
  let wake: (() => void) | null = null;
  const poke = (): void => {
    const w = wake;
    wake = null;
    w?.();
  };
  for (let i = 0; i < workers; i++) {
    const data: DecodeWorkerData = { settings, native: burst !== null };
    const w = new Worker(script, { workerData: data });
    w.on('message', (r: BatchResult) => {
      results.set(r.seq, r);
      out[i] = (out[i] as number) - 1;
      poke();
    });
    w.on('error', (e: Error) => {
      failure ??= internalError(`a decode worker thread failed: ${e.message}`);
      poke();
    });
    w.on('exit', (code: number) => {
      if (!closing) failure ??= internalError(`a decode worker thread exited (code ${code}) before its work was done`);
      poke();
    });
    threads.push(w);
  }

  const counts = zeroCounts();
  const pool: RecordBatch[] = [];
  /** Output chunks written out, to hand back to a printer (at most `SPARES_PER_BATCH` a batch). */
  const freeOut: ArrayBuffer[] = [];
  let sent = 0;
  let written = 0;
  let freshChunks = 0;
  let freshBatches = 0;
  let workerBatches = 0;
  let localBatches = 0;
  const drain = (): void => {
    for (let r = results.get(written); r !== undefined; r = results.get(written)) {
      results.delete(written);
      for (const chunk of r.out) if (write(chunk)) freeOut.push(chunk.buffer as ArrayBuffer);
      addCounts(counts, r.counts);
      freshChunks += r.freshChunks;
      pool.push(new RecordBatch(r.data, r.meta));
      written++;
    }
  };
  /** Waits until fewer than `limit` batches are out. */
  const settle = async (limit: number): Promise<void> => {
    for (;;) {
      drain();
      if (failure !== null) throw failure;
      if (sent - written < limit) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  };
  const take = (minBytes: number): RecordBatch => {
    const i = pool.findIndex((b) => b.data.byteLength >= minBytes);
    if (i < 0) {
      freshBatches++;
      return RecordBatch.fresh(minBytes);
    }
    const [b] = pool.splice(i, 1);
    return b as RecordBatch;
  };

  let batch = take(0);
  let first: ExactTime | null = null;
  let prev: ExactTime | null = null;
  let batchPrev: ExactTime | null = null;
  let read = 0;
  let ended: StreamResult | null = null;
  // Upper-layer protocols learn from earlier frames: their state goes forward with the batches.
  const ulp = new UlpPass(settings.ulp, settings.rocePort);
  const send = async (ulpStates: (unknown | null)[]): Promise<void> => {
    const spare = freeOut.splice(0, SPARES_PER_BATCH);
    const msg: BatchMessage = {
      seq: sent,
      count: batch.count,
      first: first ?? batch.timeAt(0),
      prev: batchPrev,
      data: batch.data,
      meta: batch.meta,
      spare,
      ulpStates,
    };
    let w = 0;
    for (let i = 1; i < workers; i++) if ((out[i] as number) < (out[w] as number)) w = i;
    if ((out[w] as number) < OUT_PER_WORKER) {
      (threads[w] as Worker).postMessage(msg, [batch.data, batch.meta, ...spare]);
      out[w] = (out[w] as number) + 1;
      workerBatches++;
    } else {
      results.set(sent, local.print(msg));
      localBatches++;
    }
    sent++;
    drain();
    if (failure !== null) throw failure;
    // A turn of the event loop takes in what the workers have sent back.
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  try {
    const most = workers * OUT_PER_WORKER + LOCAL_AHEAD;
    for (;;) {
      if (stop()) break;
      if (sent - written >= most) await settle(most);
      const n = source.fill(batch);
      if (n === 0) {
        if (source.need === 0) {
          ended = source.ended;
          break;
        }
        // The next record alone needs a larger batch.
        pool.push(batch);
        batch = take(source.need);
        continue;
      }
      read += n;
      first ??= batch.timeAt(0);
      batchPrev = prev;
      prev = batch.timeAt(n - 1);
      const ulpStates = ulp.snapshot();
      ulp.scan(batch.data, batch.meta, batch.count);
      await send(ulpStates);
      batch = take(0);
    }
    await settle(1);
  } finally {
    closing = true;
    source.close();
    await Promise.all(threads.map((w) => w.terminate()));
  }
  return { counts, read, ended, workerBatches, localBatches, freshChunks, freshBatches };
}
