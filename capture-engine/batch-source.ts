/**
 * Where the records of a batch come from (`roce decode`'s command thread, capture-engine/decode-workers.ts, and
 * `roce analyze`'s worker, capture-engine/analyze-worker.ts): a source fills an empty batch with the next
 * records in capture order. `recordSource` copies them in one by one from
 * any capture reader (a pipe, standard input); capture-engine/pcap-block-reader.ts and
 * capture-engine/pcapng-block-reader.ts read a capture file straight into the batch.
 */
import type { CaptureRecord } from '../packets/pcap';
import type { StreamResult } from '../analysis/capture-stream';
import type { RecordBatch } from './decode-batch';

/**
 * What a batch's time fields hold (capture-engine/decode-batch-layout.ts): whole seconds since the epoch and
 * the nanoseconds past them, exact (`roce decode`); or nanoseconds after the capture's first
 * record, as `Number` of the difference of the record reader's BigInt timestamps (`roce analyze`,
 * exact below 2^53 ns). Either way with the timestamp's decimals.
 */
export type BatchTimes = 'epoch' | 'ns-after-first';

export interface BatchSource {
  /**
   * Fills the empty `batch` with the next records and returns how many it added. 0 means either
   * that the capture has no more (`ended` then says how reading ended) or, with `need` above 0, that
   * the next record alone needs a batch of at least `need` bytes.
   */
  fill(batch: RecordBatch): number;
  readonly need: number;
  /** The first record's timestamp in nanoseconds since the epoch, once it has been read. */
  readonly firstTimestampNs: bigint | null;
  /** How reading ended, once `fill` has returned 0 with `need` 0. */
  readonly ended: StreamResult | null;
  /** Stops reading (early, or at the end) and lets go of the file. */
  close(): void;
}

/** A source over a capture reader's records, each copied into the batch. */
export function recordSource(records: Generator<CaptureRecord, StreamResult>, times: BatchTimes = 'epoch'): BatchSource {
  /** A record read that did not fit in the last batch: it starts the next one. */
  let pending: CaptureRecord | null = null;
  let need = 0;
  let ended: StreamResult | null = null;
  let firstNs: bigint | null = null;
  return {
    get need(): number {
      return need;
    },
    get firstTimestampNs(): bigint | null {
      return firstNs;
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
          firstNs ??= rec.timestampNs;
        }
        const n = rec.data.length;
        if (!batch.fits(n)) {
          pending = rec;
          if (batch.count === 0) need = n;
          return batch.count;
        }
        if (times === 'epoch') batch.add(rec.index, rec.sec, rec.linkType, rec.origLen, rec.data, rec.nsec, rec.timeDigits);
        else batch.add(rec.index, Number(rec.timestampNs - (firstNs ?? rec.timestampNs)), rec.linkType, rec.origLen, rec.data, 0, rec.timeDigits);
      }
    },
    close(): void {
      if (ended === null) records.return({ format: 'pcap', error: null });
    },
  };
}
