/**
 * Streaming a capture file from disk: a classic pcap file is read a record at a time and a pcapng
 * file a block at a time (never whole), and each gives exactly what the in-memory reader gives -
 * records, offsets, timestamps, and at any cut or corrupt field the same error. pcapng: several
 * sections, both byte orders, every packet block kind; both: records or blocks that straddle the
 * read chunks and one larger than a chunk.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { streamCaptureFile } from '../../analysis/capture-stream';
import { type CaptureRecord, PcapWriter, iterateCapture, writePcap } from '../../packets/pcap';
import { block, concat, epb, i64, idb, obsoletePb, opt, shb, spb } from '../support/pcapng-blocks';

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 131 + i * 7) & 0xff;
  return b;
}

/** A pcapng file of about 3.1 MB: two sections, every kind of packet block, and one 1.5 MB frame. */
function richPcapng(): Uint8Array {
  const parts: Uint8Array[] = [
    shb(),
    idb(1, [opt(9, Uint8Array.of(9))]),
    idb(101, [opt(9, Uint8Array.of(0x8a)), opt(14, i64(3n))]),
    block(0x0bad, bytes(40, 1)), // unknown: skipped
  ];
  for (let i = 0; i < 2000; i++) parts.push(epb(i % 2, 1_700_000_000_000_000_000n + BigInt(i) * 1000n, bytes(60 + ((i * 37) % 1400), i)));
  parts.push(spb(90, bytes(90, 7)), obsoletePb(0, 1_700_000_000_000_000_000n, bytes(64, 8)));
  parts.push(epb(0, 1_700_000_001_000_000_000n, bytes(1_500_000, 9)));
  parts.push(shb(false), idb(1, [opt(9, Uint8Array.of(6), false)], false));
  for (let i = 0; i < 400; i++) parts.push(epb(0, 1_700_000_002_000_000n + BigInt(i), bytes(100 + i, 1000 + i), false));
  return concat(parts);
}

/** A classic nanosecond pcap of about 3.2 MB (snaplen 2 MiB): 2400 frames around one of 1.5 MB. */
function richPcap(): Uint8Array {
  const w = new PcapWriter({ snaplen: 2 << 20 });
  for (let i = 0; i < 2000; i++) w.add(bytes(60 + ((i * 37) % 1400), i), 1_700_000_000_000_000_000n + BigInt(i) * 1000n);
  w.add(bytes(1_500_000, 9), 1_700_000_001_000_000_000n, 1_600_000);
  for (let i = 0; i < 400; i++) w.add(bytes(100 + i, 1000 + i), 1_700_000_002_000_000n + BigInt(i));
  return w.toBytes();
}

interface Read {
  records: { index: number; timeSec: number; timestampNs: bigint; linkType: number; data: Buffer; origLen: number; fileOffset: number }[];
  error: { code: string; offset: number; message: string } | null;
}

function keep(r: CaptureRecord): Read['records'][number] {
  return { index: r.index, timeSec: r.timeSec, timestampNs: r.timestampNs, linkType: r.linkType, data: Buffer.from(r.data), origLen: r.origLen, fileOffset: r.fileOffset };
}

function drain<R>(it: Generator<CaptureRecord, R>): { records: Read['records']; ret: R } {
  const records: Read['records'] = [];
  for (;;) {
    const n = it.next();
    if (n.done === true) return { records, ret: n.value };
    records.push(keep(n.value)); // copied: a streamed record is valid only until the next one
  }
}

function inMemory(file: Uint8Array): Read {
  const { records, ret } = drain(iterateCapture(file));
  return { records, error: ret === null ? null : { code: ret.code, offset: ret.offset, message: ret.message } };
}

function streamed(file: string): Read {
  const { records, ret } = drain(streamCaptureFile(file));
  const e = ret.error;
  return { records, error: e === null ? null : { code: e.code, offset: e.offset, message: e.message } };
}

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-stream-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const FORMATS = [
  { name: 'pcapng', rich: richPcapng, records: 2000 + 2 + 1 + 400 },
  { name: 'pcap', rich: richPcap, records: 2000 + 1 + 400 },
];

describe.each(FORMATS)('$name', ({ name, rich, records }) => {
  test('streams to the same records as the in-memory reader, read in pieces, never whole', () => {
    const file = rich();
    const p = path.join(dir, `rich.${name}`);
    fs.writeFileSync(p, file);
    const whole = inMemory(file);
    expect(whole.error).toBeNull();
    expect(whole.records).toHaveLength(records);
    const got = streamed(p);
    const meta = (r: Read): unknown => ({ error: r.error, records: r.records.map(({ data: _d, ...m }) => m) });
    expect(meta(got)).toEqual(meta(whole));
    got.records.forEach((r, i) => {
      if (!r.data.equals(whole.records[i]!.data)) throw new Error(`record ${r.index}: data differs`);
    });
    // Never whole: every streamed record lies in a buffer smaller than the file (a reused read
    // buffer of 1 MiB, grown once for the 1.5 MB frame), where the in-memory reader's lie in the file.
    let largest = 0;
    for (const r of streamCaptureFile(p)) largest = Math.max(largest, r.data.buffer.byteLength);
    expect(largest).toBeGreaterThanOrEqual(1_500_000);
    expect(largest).toBeLessThan(file.length / 1.4);
  });

  test('cut anywhere, the streamed file ends with the records and the error the in-memory reader gives', () => {
    const file = rich();
    const cuts = new Set<number>();
    for (let i = 0; i < 400; i++) cuts.add(i);
    for (const c of [1 << 20, 2 << 20]) for (let d = -40; d <= 40; d++) cuts.add(c + d);
    for (let i = 0; i < 60; i++) cuts.add(Math.floor((file.length * i) / 60));
    cuts.add(file.length - 1);
    for (const cut of cuts) expectSameStreamed(file.subarray(0, cut), `cut at ${cut}`);
  });
});

/** Streams `file` from disk and reads it in memory; the records (with offsets) and the error must agree. */
function expectSameStreamed(file: Uint8Array, what: string): void {
  const p = path.join(dir, 'case.bin');
  fs.writeFileSync(p, file);
  const want = inMemory(file);
  const got = streamed(p);
  if (got.records.length !== want.records.length || JSON.stringify(got.error) !== JSON.stringify(want.error)) {
    throw new Error(`${what}: streamed ${got.records.length} records and ${JSON.stringify(got.error)}, in memory ${want.records.length} and ${JSON.stringify(want.error)}`);
  }
  expect(got.records.map((r) => r.fileOffset)).toEqual(want.records.map((r) => r.fileOffset));
}

describe.each([
  { name: 'pcapng', small: () => concat([shb(), idb(1, [opt(9, Uint8Array.of(9))]), epb(0, 5n, bytes(100, 1)), epb(0, 6n, bytes(200, 2))]) },
  { name: 'pcap', small: () => writePcap([{ data: bytes(100, 1), timestampNs: 5n }, { data: bytes(200, 2), timestampNs: 6n }], { snaplen: 150 }) },
])('small $name file', ({ small }) => {
  test('cut at every length, streamed and in memory agree', () => {
    const file = small();
    for (let cut = 0; cut <= file.length; cut++) expectSameStreamed(file.subarray(0, cut), `cut at ${cut}`);
  });

  test('corrupt lengths, options and header fields give the same error streamed as in memory', () => {
    const base = small();
    for (let off = 0; off + 4 <= base.length; off += 4) {
      for (const v of [0, 3, 13, 0xffff, 262144, 262145, 0x7fffffff]) {
        const f = base.slice();
        new DataView(f.buffer).setUint32(off, v, true);
        expectSameStreamed(f, `${v} at byte ${off}`);
      }
    }
  });
});

test('junk and an unknown magic give the same error streamed as in memory', () => {
  expectSameStreamed(bytes(5000, 3), 'junk');
  expectSameStreamed(Uint8Array.of(0xd4, 0xc3, 0xb2), 'three bytes');
});
