/**
 * Holds a block reader (capture-engine/pcap-block-reader.ts, capture-engine/pcapng-block-reader.ts) to the
 * record-by-record reader: the same records, numbers, times, lengths and bytes, and the same end
 * (the error, its offset and its words), at any batch size, with times as seconds and nanoseconds
 * since the epoch or as nanoseconds after the first record, and the timestamps' decimals.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RecordBatch } from '../../capture-engine/decode-batch';
import { BATCH_RECORDS, META_FIELDS } from '../../capture-engine/decode-batch-layout';
import type { BatchSource, BatchTimes } from '../../capture-engine/batch-source';
import { streamCaptureFile, type StreamResult } from '../../analysis/capture-stream';

/** Opens a file with a block reader, or null when the reader leaves it to the record reader. */
export type OpenBlocks = (file: string, times: BatchTimes) => BatchSource | null;

export interface Read {
  /** `time` and `nsec` as a batch holds them (capture-engine/decode-batch-layout.ts). */
  records: { index: number; time: number; nsec: number; digits: number; linkType: number; origLen: number; data: Buffer }[];
  ended: unknown;
}

function endedView(e: StreamResult | null): unknown {
  return e === null ? null : { format: e.format, error: e.error === null ? null : { code: e.error.code, offset: e.error.offset, message: e.error.message } };
}

/** What the record-by-record reader gives; with `ns`, times in nanoseconds after the first record's (roce analyze's). */
export function byRecords(file: string, ns = false): Read & { firstTimestampNs: bigint | null } {
  const records: Read['records'] = [];
  const it = streamCaptureFile(file);
  let t0: bigint | null = null;
  for (;;) {
    const next = it.next();
    if (next.done === true) return { records, ended: endedView(next.value), firstTimestampNs: t0 };
    const r = next.value;
    t0 ??= r.timestampNs;
    // The record's seconds and nanoseconds are its BigInt timestamp's.
    expect(BigInt(r.sec) * 1_000_000_000n + BigInt(r.nsec)).toBe(r.timestampNs);
    const time = ns ? Number(r.timestampNs - t0) : r.sec;
    records.push({ index: r.index, time, nsec: ns ? 0 : r.nsec, digits: r.timeDigits, linkType: r.linkType, origLen: r.origLen, data: Buffer.from(r.data) });
  }
}

/** What the block reader gives with batches of `capacity` bytes (a larger one when a record needs it). */
export function byBlocks(open: OpenBlocks, file: string, capacity: number, ns = false): Read & { grown: number; firstTimestampNs: bigint | null } {
  const reader = open(file, ns ? 'ns-after-first' : 'epoch');
  if (reader === null) throw new Error(`${file}: the block reader refused it`);
  const records: Read['records'] = [];
  const standard = (): RecordBatch => new RecordBatch(new ArrayBuffer(capacity), new ArrayBuffer(BATCH_RECORDS * META_FIELDS * 8));
  let batch = standard();
  let grown = 0;
  try {
    for (let fills = 0; fills < 1_000_000; fills++) {
      const n = reader.fill(batch);
      if (n === 0) {
        if (reader.need === 0) return { records, ended: endedView(reader.ended), grown, firstTimestampNs: reader.firstTimestampNs };
        expect(reader.need).toBeGreaterThan(capacity);
        batch = RecordBatch.fresh(reader.need);
        grown++;
        continue;
      }
      const meta = new Float64Array(batch.meta);
      for (let i = 0; i < n; i++) {
        const k = i * META_FIELDS;
        records.push({
          index: meta[k]!,
          time: meta[k + 1]!,
          nsec: meta[k + 6]!,
          digits: meta[k + 7]!,
          linkType: meta[k + 2]!,
          origLen: meta[k + 3]!,
          data: Buffer.from(batch.buffer.subarray(meta[k + 4]!, meta[k + 5]!)),
        });
      }
      batch = standard();
    }
    throw new Error('the block reader did not end');
  } finally {
    reader.close();
  }
}

/** The block reader reads `file` as the record reader does, at each batch size (and, with `ns`, in ns after the first). */
export function expectSameAsRecords(open: OpenBlocks, file: string, capacities: readonly number[] = [200, 1500, 64 * 1024], ns = true): Read {
  const { firstTimestampNs, ...want } = byRecords(file);
  for (const c of capacities) {
    const got = byBlocks(open, file, c);
    expect({ records: got.records, ended: got.ended }).toEqual(want);
    expect(got.firstTimestampNs).toBe(firstTimestampNs);
  }
  if (ns) {
    const got = byBlocks(open, file, capacities[0] ?? 200, true);
    const { firstTimestampNs: _, ...wantNs } = byRecords(file, true);
    expect({ records: got.records, ended: got.ended }).toEqual(wantNs);
  }
  return want;
}

/** A temporary folder for the test file's captures, made before its tests and removed after: `write` puts one there. */
export function captureFolder(prefix: string): (name: string, bytes: Uint8Array) => string {
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return (name, bytes) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, bytes);
    return file;
  };
}
