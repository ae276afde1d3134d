/**
 * Where the records of a batch come from (`roce decode`'s command thread, cli/decode-workers.ts, and
 * `roce analyze`'s worker, cli/analyze-worker.ts): a source fills an empty batch with the next
 * records in capture order. `recordSource` copies them in one by one from
 * any capture reader (a pipe, standard input); cli/pcap-block-reader.ts and
 * cli/pcapng-block-reader.ts read a capture file straight into the batch.
 */
import type { CaptureRecord } from '../packets/pcap';
import type { StreamResult } from '../analysis/capture-stream';
import type { RecordBatch } from './decode-batch';

/**
 * What a batch's time field holds: seconds since the epoch (`roce decode`), or nanoseconds after the
 * capture's first record, exactly as the record reader's BigInt timestamps give them (`roce analyze`).
 */
export type BatchTimes = 'seconds' | 'ns-after-first';

export interface BatchSource {
  /**
   * Fills the empty `batch` with the next records and returns how many it added. 0 means either
   * that the capture has no more (`ended` then says how reading ended) or, with `need` above 0, that
   * the next record alone needs a batch of at least `need` bytes.
   */
  fill(batch: RecordBatch): number;
  readonly need: number;
  /** The first record's time in seconds since the epoch, once it has been read. */
  readonly firstTimeSec: number | null;
  /** How reading ended, once `fill` has returned 0 with `need` 0. */
  readonly ended: StreamResult | null;
  /** Stops reading (early, or at the end) and lets go of the file. */
  close(): void;
}

/** A source over a capture reader's records, each copied into the batch. */
export function recordSource(records: Generator<CaptureRecord, StreamResult>, times: BatchTimes = 'seconds'): BatchSource {
  /** A record read that did not fit in the last batch: it starts the next one. */
  let pending: CaptureRecord | null = null;
  let need = 0;
  let ended: StreamResult | null = null;
  let firstSec: number | null = null;
  let firstNs = 0n;
  return {
    get need(): number {
      return need;
    },
    get firstTimeSec(): number | null {
      return firstSec;
    },
    get ended(): StreamResult | null {
      return ended;
    },
    fill(batch: RecordBatch): number {
      need = 0;
      for (;;) {
        // A pending record's bytes stay valid: the reader is not asked for the next one before it is copied.
        let rec = pending;
        pending = null;
        if (rec === null) {
          if (ended !== null) return batch.count;
          const next = records.next();
          if (next.done === true) {
            ended = next.value;
            return batch.count;
          }
          rec = next.value;
          if (firstSec === null) {
            firstSec = rec.timeSec;
            firstNs = rec.timestampNs;
          }
        }
        const n = rec.data.length;
        if (!batch.fits(n)) {
          pending = rec;
          if (batch.count === 0) need = n;
          return batch.count;
        }
        batch.add(rec.index, times === 'seconds' ? rec.timeSec : Number(rec.timestampNs - firstNs), rec.linkType, rec.origLen, rec.data);
      }
    },
    close(): void {
      if (ended === null) records.return({ format: 'pcap', error: null });
    },
  };
}
