/**
 * How `roce decode` hands records to a worker thread and gets its output back: the records' bytes
 * copied one after another into one buffer, six numbers per record beside them, and the messages
 * both ways. Every buffer is transferred (not copied) to the other thread and back, and reused.
 */
import type { DecodeCounts, PrintSettings } from './decode-printer';
import type { ExactTime } from '../base/exact-time';

/**
 * Numbers per record in `meta`: index, time, linkType, origLen, start, end, nsec, digits. The time
 * is whole seconds since the epoch with `nsec` the nanoseconds past them, or nanoseconds after the
 * capture's first record with `nsec` 0 (capture-engine/batch-source.ts `BatchTimes`); `digits` are the
 * timestamp's decimals (base/exact-time.ts).
 */
export const META_FIELDS = 8;
/** Bytes of records per batch (a larger record gets a batch of its own size). */
export const BATCH_BYTES = 256 * 1024;
/** Records per batch at most. */
export const BATCH_RECORDS = 1024;
/** Output chunk size in a worker (a batch's output usually fits in one). */
export const OUT_CHUNK = 1 << 20;
/** What a worker thread is started with. */
export interface DecodeWorkerData {
  settings: PrintSettings;
  /** Whether the command's thread uses the native addon (a worker loads it only then). */
  native: boolean;
}

export interface BatchMessage {
  seq: number;
  count: number;
  /** Time of the file's first record. */
  first: ExactTime;
  /** Time of the record before this batch's first (the `delta` column's reference), or null before the file's first. */
  prev: ExactTime | null;
  data: ArrayBuffer;
  meta: ArrayBuffer;
  /** Output chunks written out and handed back, for the printer to write into again. */
  spare: ArrayBuffer[];
  /**
   * Each registered protocol's state (ulp/protocols.ts, in its order) as the records before this
   * batch left it (capture-engine/ulp-decoding.ts), null where there is none; absent: none at all.
   */
  ulpStates?: (unknown | null)[];
}

export interface BatchResult {
  seq: number;
  /** The batch's output, in order. */
  out: Uint8Array[];
  counts: DecodeCounts;
  /** Output chunks the printer had to allocate for this batch (none while chunks come back to it). */
  freshChunks: number;
  /** The batch's buffers, handed back for reuse. */
  data: ArrayBuffer;
  meta: ArrayBuffer;
}
