/**
 * Streaming a capture file from disk: a classic pcap file is read a record at a time and a pcapng
 * file a block at a time (never whole), and each gives exactly what the in-memory reader gives -
 * records, offsets, timestamps, and at any cut or corrupt field the same error. pcapng: several
 * sections, both byte orders, every packet block kind; both: records or blocks that straddle the
 * read chunks and one larger than a chunk. A pipe (standard input, a FIFO) is read forward as its
 * bytes arrive, in pieces of any size: the same records, a record handed on as soon as it is whole,
 * and where it ends inside a record a truncation.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type PipeRead, streamCaptureFile, streamCapturePipe } from '../../analysis/capture-stream';
import { WireErrorCode } from '../../packets/errors';
import { type CaptureRecord, PcapWriter, iterateCapture, writePcap } from '../../packets/pcap';
import { block, concat, epb, i64, idb, obsoletePb, opt, shb, spb } from '../support/pcapng-blocks';

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 131 + i * 7) & 0xff;
  return b;
}

/**
 * The files are read in chunks of 64 KiB (StreamOptions.chunkBytes; 1 MiB in production), so that
 * files of under a megabyte cross many chunk edges and hold a frame larger than a chunk.
 */
const CHUNK = 64 << 10;
/** A frame larger than a read chunk: the streamed reader must grow its buffer for it. */
const BIG = 150_000;

/** A pcapng file of about 0.9 MB: two sections, every kind of packet block, and one frame larger than a read chunk. */
function richPcapng(): Uint8Array {
  const parts: Uint8Array[] = [
    shb(),
    idb(1, [opt(9, Uint8Array.of(9))]),
    idb(101, [opt(9, Uint8Array.of(0x8a)), opt(14, i64(3n))]),
    block(0x0bad, bytes(40, 1)), // unknown: skipped
  ];
  for (let i = 0; i < 1000; i++) parts.push(epb(i % 2, 1_700_000_000_000_000_000n + BigInt(i) * 1000n, bytes(60 + ((i * 37) % 1400), i)));
  parts.push(spb(90, bytes(90, 7)), obsoletePb(0, 1_700_000_000_000_000_000n, bytes(64, 8)));
  parts.push(epb(0, 1_700_000_001_000_000_000n, bytes(BIG, 9)));
  parts.push(shb(false), idb(1, [opt(9, Uint8Array.of(6), false)], false));
  for (let i = 0; i < 400; i++) parts.push(epb(0, 1_700_000_002_000_000n + BigInt(i), bytes(100 + i, 1000 + i), false));
  return concat(parts);
}

/** A classic nanosecond pcap of about 0.9 MB (snaplen 256 KiB): 1400 frames around one larger than a read chunk. */
function richPcap(): Uint8Array {
  const w = new PcapWriter({ snaplen: 256 << 10 });
  for (let i = 0; i < 1000; i++) w.add(bytes(60 + ((i * 37) % 1400), i), 1_700_000_000_000_000_000n + BigInt(i) * 1000n);
  w.add(bytes(BIG, 9), 1_700_000_001_000_000_000n, BIG + 100_000);
  for (let i = 0; i < 400; i++) w.add(bytes(100 + i, 1000 + i), 1_700_000_002_000_000n + BigInt(i));
  return w.toBytes();
}

interface Read {
  records: {
    index: number;
    sec: number;
    nsec: number;
    timeDigits: number;
    timestampNs: bigint;
    linkType: number;
    data: Buffer;
    origLen: number;
    fileOffset: number;
  }[];
  error: { code: string; offset: number; message: string } | null;
}

function keep(r: CaptureRecord): Read['records'][number] {
  return {
    index: r.index,
    sec: r.sec,
    nsec: r.nsec,
    timeDigits: r.timeDigits,
    timestampNs: r.timestampNs,
    linkType: r.linkType,
    data: Buffer.from(r.data),
    origLen: r.origLen,
    fileOffset: r.fileOffset,
  };
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
  const { records, ret } = drain(streamCaptureFile(file, { chunkBytes: CHUNK }));
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

/** Where to cut a rich file: the first 400 bytes, around the read chunks' edges, 60 places through it, one byte short. */
function richCuts(file: Uint8Array): Set<number> {
  const cuts = new Set<number>();
  for (let i = 0; i < 400; i++) cuts.add(i);
  for (const c of [CHUNK, 2 * CHUNK, 4 * CHUNK]) for (let d = -40; d <= 40; d++) cuts.add(c + d);
  for (let i = 0; i < 60; i++) cuts.add(Math.floor((file.length * i) / 60));
  cuts.add(file.length - 1);
  return cuts;
}

/** A small file cut at every length, and with each 32-bit field in turn set to odd values: [file, what]. */
function smallVariants(base: Uint8Array): [Uint8Array, string][] {
  const out: [Uint8Array, string][] = [];
  for (let cut = 0; cut <= base.length; cut++) out.push([base.subarray(0, cut), `cut at ${cut}`]);
  for (let off = 0; off + 4 <= base.length; off += 4) {
    for (const v of [0, 3, 13, 0xffff, 262144, 262145, 0x7fffffff]) {
      const f = base.slice();
      new DataView(f.buffer).setUint32(off, v, true);
      out.push([f, `${v} at byte ${off}`]);
    }
  }
  return out;
}

const SMALL = [
  { name: 'pcapng', small: () => concat([shb(), idb(1, [opt(9, Uint8Array.of(9))]), epb(0, 5n, bytes(100, 1)), epb(0, 6n, bytes(200, 2))]) },
  {
    name: 'pcap',
    small: () =>
      writePcap(
        [
          { data: bytes(100, 1), timestampNs: 5n },
          { data: bytes(200, 2), timestampNs: 6n },
        ],
        { snaplen: 150 },
      ),
  },
];

const FORMATS = [
  { name: 'pcapng', rich: richPcapng, records: 1000 + 2 + 1 + 400 },
  { name: 'pcap', rich: richPcap, records: 1000 + 1 + 400 },
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
    // buffer of a chunk, grown once for the frame larger than a chunk), where the in-memory
    // reader's lie in the file.
    let largest = 0;
    for (const r of streamCaptureFile(p, { chunkBytes: CHUNK })) largest = Math.max(largest, r.data.buffer.byteLength);
    expect(largest).toBeGreaterThanOrEqual(BIG);
    expect(largest).toBeLessThan(file.length / 1.4);
  });

  test('cut anywhere, the streamed file ends with the records and the error the in-memory reader gives', () => {
    const file = rich();
    for (const cut of richCuts(file)) expectSameStreamed(file.subarray(0, cut), `cut at ${cut}`);
  });
});

/** Streams `file` from disk and reads it in memory; the records (with offsets) and the error must agree. */
function expectSameStreamed(file: Uint8Array, what: string): void {
  const p = path.join(dir, 'case.bin');
  fs.writeFileSync(p, file);
  const want = inMemory(file);
  const got = streamed(p);
  if (got.records.length !== want.records.length || JSON.stringify(got.error) !== JSON.stringify(want.error)) {
    throw new Error(
      `${what}: streamed ${got.records.length} records and ${JSON.stringify(got.error)}, in memory ${want.records.length} and ${JSON.stringify(want.error)}`,
    );
  }
  expect(got.records.map((r) => r.fileOffset)).toEqual(want.records.map((r) => r.fileOffset));
}

describe.each(SMALL)('small $name file', ({ small }) => {
  test('cut at every length, and corrupt lengths, options and header fields: streamed and in memory agree', () => {
    for (const [f, what] of smallVariants(small())) expectSameStreamed(f, what);
  });
});

test('junk and an unknown magic give the same error streamed as in memory', () => {
  expectSameStreamed(bytes(5000, 3), 'junk');
  expectSameStreamed(Uint8Array.of(0xd4, 0xc3, 0xb2), 'three bytes');
});

/** A PipeRead over `file` that gives pieces of the sizes `sizes` cycles through; counts its calls. */
function pieces(file: Uint8Array, sizes: readonly number[]): PipeRead & { calls: number } {
  let pos = 0;
  let k = 0;
  const read = (into: Uint8Array, at: number): number => {
    read.calls++;
    const n = Math.min(sizes[k++ % sizes.length] as number, into.length - at, file.length - pos);
    into.set(file.subarray(pos, pos + n), at);
    pos += n;
    return n;
  };
  read.calls = 0;
  return read;
}

function piped(file: Uint8Array, sizes: readonly number[]): Read {
  const { records, ret } = drain(streamCapturePipe(pieces(file, sizes)));
  const e = ret.error;
  return { records, error: e === null ? null : { code: e.code, offset: e.offset, message: e.message } };
}

/** Sizes of the pieces a pipe gives: single bytes, odd sizes, a pipe buffer's 64 KiB. */
const PIECES = [1, 7, 4096, 3, 65536, 1000, 2, 13];

/** Read through a pipe, `file` gives the in-memory reader's records; its error is the same, or where that is a truncation, a truncation at or before it. */
function expectSamePiped(file: Uint8Array, what: string): void {
  const want = inMemory(file);
  const got = piped(file, PIECES);
  const sameError = JSON.stringify(got.error) === JSON.stringify(want.error);
  const earlierCut =
    got.error !== null &&
    want.error !== null &&
    got.error.code === WireErrorCode.Truncated &&
    want.error.code === WireErrorCode.Truncated &&
    got.error.offset <= want.error.offset;
  if (got.records.length !== want.records.length || !(sameError || earlierCut)) {
    throw new Error(
      `${what}: piped ${got.records.length} records and ${JSON.stringify(got.error)}, in memory ${want.records.length} and ${JSON.stringify(want.error)}`,
    );
  }
  expect(got.records.map((r) => r.fileOffset)).toEqual(want.records.map((r) => r.fileOffset));
}

describe.each(FORMATS)('$name through a pipe', ({ rich, records }) => {
  test('the same records as in memory, from pieces of any size', () => {
    const file = rich();
    const whole = inMemory(file);
    for (const sizes of [PIECES, [1], [65536]]) {
      const got = piped(file, sizes);
      expect(got.error).toBeNull();
      expect(got.records).toHaveLength(records);
      expect(got.records.map(({ data: _d, ...m }) => m)).toEqual(whole.records.map(({ data: _d, ...m }) => m));
      got.records.forEach((r, i) => {
        if (!r.data.equals(whole.records[i]!.data)) throw new Error(`record ${r.index}: data differs`);
      });
    }
  });

  test('cut anywhere: the records before the cut, and a truncation unless the cut falls between records', () => {
    const file = rich();
    for (const cut of richCuts(file)) expectSamePiped(file.subarray(0, cut), `cut at ${cut}`);
  });
});

describe.each(SMALL)('small $name through a pipe', ({ small }) => {
  test('cut at every length and corrupt fields: as in memory', () => {
    for (const [f, what] of smallVariants(small())) expectSamePiped(f, what);
  });

  test('live: each record is handed on once it has arrived, before the pipe is read again, and the reader is told before each read', () => {
    const file = small();
    const want = inMemory(file);
    // One piece a read: the header (and for pcapng the interface block), then one record at a time.
    const ends = want.records.map((_r, i) => (i + 1 < want.records.length ? (want.records[i + 1] as { fileOffset: number }).fileOffset : file.length));
    const starts = [want.records[0]!.fileOffset, ...ends.slice(0, -1)];
    const sizes = [starts[0] as number, ...ends.map((e, i) => e - (starts[i] as number))];
    const read = pieces(file, sizes);
    let waits = 0;
    const it = streamCapturePipe(read, () => waits++);
    for (let i = 0; i < want.records.length; i++) {
      const n = it.next();
      expect(n.done).toBe(false);
      expect(read.calls).toBe(i + 2);
      expect(waits).toBe(read.calls);
    }
    const last = it.next();
    expect(last).toEqual({ done: true, value: { format: expect.any(String), error: null } });
  });
});

test('through a pipe: nothing at all, junk, three bytes', () => {
  expect(piped(new Uint8Array(0), PIECES).error).toEqual({
    code: WireErrorCode.Truncated,
    offset: 0,
    message: 'capture magic needs 4 bytes but only 0 remain (at byte 0)',
  });
  expectSamePiped(new Uint8Array(0), 'empty');
  expectSamePiped(bytes(5000, 3), 'junk');
  expectSamePiped(Uint8Array.of(0xd4, 0xc3, 0xb2), 'three bytes');
  expect(piped(Uint8Array.of(0xd4, 0xc3, 0xb2), PIECES).error?.message).toBe('the input ended after 3 of the 4 bytes that start there (at byte 0)');
});
