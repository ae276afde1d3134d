/**
 * `roce decode`'s block reader (cli/pcap-block-reader.ts) reads a classic pcap file into batches
 * with the records, numbers, times, lengths and bytes of the record-by-record reader, and ends the
 * same way (the same error at the same offset), whatever the batch size: on every bundled pcap, on
 * nanosecond and big-endian files, on files cut at every point of their last records, on a record
 * above the size limit, and on records larger than a batch. It leaves to that reader what it cannot
 * take: pcapng, a file that is not a capture, and standard input.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PcapBlockReader } from '../../cli/pcap-block-reader';
import { RecordBatch } from '../../cli/decode-batch';
import { BATCH_RECORDS, META_FIELDS } from '../../cli/decode-batch-layout';
import { streamCaptureFile, type StreamResult } from '../../analysis/capture-stream';
import { PcapWriter, readCapture } from '../../packets/pcap';
import { WireErrorCode } from '../../packets/errors';

const CAPTURES = path.join(__dirname, '..', '..', 'captures');

interface Read {
  records: { index: number; timeSec: number; linkType: number; origLen: number; data: Buffer }[];
  ended: unknown;
}

function endedView(e: StreamResult | null): unknown {
  return e === null ? null : { format: e.format, error: e.error === null ? null : { code: e.error.code, offset: e.error.offset, message: e.error.message } };
}

/** What the record-by-record reader gives. */
function byRecords(file: string): Read {
  const records: Read['records'] = [];
  const it = streamCaptureFile(file);
  for (;;) {
    const next = it.next();
    if (next.done === true) return { records, ended: endedView(next.value) };
    const r = next.value;
    records.push({ index: r.index, timeSec: r.timeSec, linkType: r.linkType, origLen: r.origLen, data: Buffer.from(r.data) });
  }
}

/** What the block reader gives with batches of `capacity` bytes (a larger one when a record needs it). */
function byBlocks(file: string, capacity: number): Read & { grown: number } {
  const reader = PcapBlockReader.open(file);
  if (reader === null) throw new Error(`${file}: the block reader refused it`);
  const records: Read['records'] = [];
  const standard = (): RecordBatch => new RecordBatch(new ArrayBuffer(capacity), new ArrayBuffer(BATCH_RECORDS * META_FIELDS * 8));
  let batch = standard();
  let grown = 0;
  try {
    for (let fills = 0; fills < 1_000_000; fills++) {
      const n = reader.fill(batch);
      if (n === 0) {
        if (reader.need === 0) return { records, ended: endedView(reader.ended), grown };
        expect(reader.need).toBeGreaterThan(capacity);
        batch = RecordBatch.fresh(reader.need);
        grown++;
        continue;
      }
      const meta = new Float64Array(batch.meta);
      for (let i = 0; i < n; i++) {
        const k = i * META_FIELDS;
        records.push({ index: meta[k]!, timeSec: meta[k + 1]!, linkType: meta[k + 2]!, origLen: meta[k + 3]!, data: Buffer.from(batch.buffer.subarray(meta[k + 4]!, meta[k + 5]!)) });
      }
      batch = standard();
    }
    throw new Error('the block reader did not end');
  } finally {
    reader.close();
  }
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-block-reader-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(name: string, bytes: Uint8Array): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

function expectSame(file: string, capacities: readonly number[] = [200, 1500, 64 * 1024]): Read {
  const want = byRecords(file);
  for (const c of capacities) {
    const got = byBlocks(file, c);
    expect({ records: got.records, ended: got.ended }).toEqual(want);
  }
  return want;
}

const bundled = fs.readdirSync(CAPTURES).filter((f) => f.endsWith('.pcap'));

test.each(bundled)('%s: the same records and the same end, at any batch size', (name) => {
  const want = expectSame(path.join(CAPTURES, name));
  expect(want.records.length).toBeGreaterThan(0);
});

test('nanosecond timestamps, and records larger than the batch', () => {
  const cap = readCapture(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
  const w = new PcapWriter({ nanosecond: true });
  cap.records.forEach((r, i) => w.add(r.data, 1_700_000_000_123_456_789n + BigInt(i) * 1_234_567n));
  const file = write('ns.pcap', w.toBytes());
  const want = expectSame(file, [120, 4096]);
  expect(want.records[0]?.timeSec).toBe(1_700_000_000 + 123_456_789 / 1e9);
  const small = byBlocks(file, 120);
  expect(small.grown).toBeGreaterThan(0);
});

test('a file cut anywhere in its last record ends as the record reader ends it', () => {
  const whole = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
  const last = readCapture(whole).records.at(-1)?.fileOffset ?? 24;
  const ends = new Set<string>();
  for (let cut = last; cut <= whole.length; cut++) {
    const want = expectSame(write('cut.pcap', whole.subarray(0, cut)), [300, 64 * 1024]);
    ends.add(JSON.stringify(want.ended).replace(/\d+/g, 'N'));
  }
  // A clean end, a cut record header and a cut record body were all met.
  expect(ends.size).toBeGreaterThanOrEqual(3);
});

test('a record above the size limit ends reading with BadCapture at its length field', () => {
  const bytes = new Uint8Array(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The third record's captured length, little-endian, past 256 KiB and past the file.
  let off = 24;
  for (let i = 0; i < 2; i++) off += 16 + view.getUint32(off + 8, true);
  view.setUint32(off + 8, 300_000, true);
  const want = expectSame(write('huge-len.pcap', bytes));
  expect(want.records).toHaveLength(2);
  expect(want.ended).toMatchObject({ error: { code: WireErrorCode.BadCapture, offset: off + 8 } });
});

test('pcapng, a file that is no capture, and standard input are left to the record reader', () => {
  expect(PcapBlockReader.open(path.join(CAPTURES, 'rc-conversation.pcapng'))).toBeNull();
  expect(PcapBlockReader.open(write('text.pcap', new TextEncoder().encode('not a capture at all, but long enough')))).toBeNull();
  expect(PcapBlockReader.open(write('short.pcap', new Uint8Array(10)))).toBeNull();
  expect(PcapBlockReader.open('-')).toBeNull();
});
