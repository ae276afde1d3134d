import * as fs from 'node:fs';
import fc from 'fast-check';
import { WireError, WireErrorCode } from '../../packets/errors';
import {
  LinkType,
  PcapWriter,
  describeCaptureError,
  iterateCapture,
  readCapture,
  writePcap,
  writePcapng,
  type CaptureReadResult,
  type CaptureRecord,
} from '../../packets/pcap';
import { noPublicCaptures, publicCapture, testUnless } from '../support/skip';
import { block, concat, epb, i64, idb, obsoletePb, opt, shb, spb } from '../support/pcapng-blocks';

// ---------------------------------------------------------------- helpers

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

const SAMPLE = [
  { data: bytes(60, 1), timestampNs: 1_700_000_000_123_456_789n },
  { data: bytes(0, 2), timestampNs: 1_700_000_001_000_000_001n },
  { data: bytes(1, 3), timestampNs: 1_700_000_002_999_999_999n },
  { data: bytes(1500, 4), timestampNs: 1_700_000_003_000_000_000n },
];

/** Classic big-endian pcap built field by field (draft-ietf-opsawg-pcap §4, §5). */
function bigEndianPcap(recs: { data: Uint8Array; sec: number; frac: number; orig?: number }[], nano: boolean, linkType: number): Uint8Array {
  const parts: Uint8Array[] = [];
  const h = new Uint8Array(24);
  const hv = new DataView(h.buffer);
  hv.setUint32(0, nano ? 0xa1b23c4d : 0xa1b2c3d4, false);
  hv.setUint16(4, 2, false);
  hv.setUint16(6, 4, false);
  hv.setUint32(16, 65535, false);
  hv.setUint32(20, linkType, false);
  parts.push(h);
  for (const r of recs) {
    const rh = new Uint8Array(16);
    const rv = new DataView(rh.buffer);
    rv.setUint32(0, r.sec, false);
    rv.setUint32(4, r.frac, false);
    rv.setUint32(8, r.data.length, false);
    rv.setUint32(12, r.orig ?? r.data.length, false);
    parts.push(rh, r.data);
  }
  return concat(parts);
}

function expectClean(r: CaptureReadResult): void {
  if (r.error !== null) throw new Error(describeCaptureError(r));
}

function expectSameRecords(got: CaptureRecord[], want: { data: Uint8Array; timestampNs: bigint }[]): void {
  expect(got.length).toBe(want.length);
  got.forEach((r, i) => {
    const w = want[i]!;
    expect(r.index).toBe(i + 1);
    expect(Buffer.from(r.data).equals(Buffer.from(w.data))).toBe(true);
    expect(r.timestampNs).toBe(w.timestampNs);
    expect(r.origLen).toBe(w.data.length);
  });
}

function u32At(file: Uint8Array, off: number, value: number): Uint8Array {
  const c = file.slice();
  new DataView(c.buffer).setUint32(off, value, true);
  return c;
}

// ---------------------------------------------------------------- classic pcap

describe('classic pcap writer and reader', () => {
  test('nanosecond round trip keeps bytes, timestamps, link type and offsets', () => {
    const file = writePcap(SAMPLE);
    const r = readCapture(file);
    expectClean(r);
    expect(r.format).toBe('pcap');
    expect(r.nanosecond).toBe(true);
    expectSameRecords(r.records, SAMPLE);
    let off = 24;
    for (const rec of r.records) {
      expect(rec.linkType).toBe(LinkType.Ethernet);
      expect(rec.fileOffset).toBe(off);
      // The data is a view into the file, not a copy.
      expect(rec.data.buffer).toBe(file.buffer);
      expect(rec.data.byteOffset).toBe(file.byteOffset + off + 16);
      off += 16 + rec.data.length;
    }
    expect(r.records[0]).toMatchObject({ sec: 1_700_000_000, nsec: 123_456_789, timeDigits: 9 });
    expect(off).toBe(file.length);
  });

  test('microsecond files truncate timestamps to microseconds', () => {
    const file = writePcap(SAMPLE, { nanosecond: false });
    expect(new DataView(file.buffer).getUint32(0, true)).toBe(0xa1b2c3d4);
    const r = readCapture(file);
    expectClean(r);
    expect(r.nanosecond).toBe(false);
    expectSameRecords(
      r.records,
      SAMPLE.map((s) => ({ data: s.data, timestampNs: (s.timestampNs / 1000n) * 1000n })),
    );
    expect(r.records[2]!.timestampNs).toBe(1_700_000_002_999_999_000n);
    expect(r.records[0]).toMatchObject({ sec: 1_700_000_000, nsec: 123_456_000, timeDigits: 6 });
  });

  test('link type and snaplen options; frames longer than snaplen are cut with origLen kept', () => {
    const w = new PcapWriter({ linkType: LinkType.LinuxSll2, snaplen: 64 });
    w.add(bytes(100, 9), 5n);
    w.add(bytes(10, 8), 6n, 900);
    const r = readCapture(w.toBytes());
    expectClean(r);
    expect(r.records.map((x) => x.linkType)).toEqual([276, 276]);
    expect(r.records[0]!.data.length).toBe(64);
    expect(r.records[0]!.origLen).toBe(100);
    expect(Buffer.from(r.records[0]!.data).equals(Buffer.from(bytes(100, 9).subarray(0, 64)))).toBe(true);
    expect(r.records[1]!.origLen).toBe(900);
    expect(r.records[1]!.timestampNs).toBe(6n);
  });

  test('writer rejects values that do not fit', () => {
    const w = new PcapWriter();
    expect(() => w.add(bytes(4, 1), -1n)).toThrow(WireError);
    expect(() => w.add(bytes(4, 1), 0x1_0000_0000n * 1_000_000_000n)).toThrow(WireError);
    expect(() => w.add(bytes(4, 1), 0n, 3)).toThrow(WireError);
    expect(() => new PcapWriter({ linkType: 0x10000 })).toThrow(WireError);
    // Nothing half-written by the rejected calls.
    expect(readCapture(w.toBytes()).records).toHaveLength(0);
  });

  test('writer grows its buffer past the initial size', () => {
    const recs = Array.from({ length: 200 }, (_, i) => ({ data: bytes(1000 + i, i), timestampNs: BigInt(i) * 1_000_000_007n }));
    const r = readCapture(writePcap(recs));
    expectClean(r);
    expectSameRecords(r.records, recs);
  });

  test.each([false, true])('big-endian file built by hand reads correctly (nanosecond=%s)', (nano) => {
    const recs = [
      { data: bytes(42, 1), sec: 1_600_000_000, frac: nano ? 123_456_789 : 123_456 },
      { data: bytes(7, 2), sec: 1_600_000_001, frac: nano ? 999_999_999 : 999_999, orig: 1000 },
    ];
    const r = readCapture(bigEndianPcap(recs, nano, LinkType.LinuxSll));
    expectClean(r);
    expect(r.format).toBe('pcap');
    expect(r.nanosecond).toBe(nano);
    expect(r.records).toHaveLength(2);
    const mul = nano ? 1n : 1000n;
    r.records.forEach((rec, i) => {
      const w = recs[i]!;
      expect(rec.linkType).toBe(113);
      expect(rec.timestampNs).toBe(BigInt(w.sec) * 1_000_000_000n + BigInt(w.frac) * mul);
      expect(Buffer.from(rec.data).equals(Buffer.from(w.data))).toBe(true);
      expect(rec.origLen).toBe(w.orig ?? w.data.length);
    });
  });

  test('iterateCapture streams records and returns null at a clean end', () => {
    const it = iterateCapture(writePcap(SAMPLE));
    const seen: number[] = [];
    let step = it.next();
    while (step.done !== true) {
      seen.push(step.value.index);
      step = it.next();
    }
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(step.value).toBeNull();
  });
});

// ---------------------------------------------------------------- pcapng

describe('pcapng reader', () => {
  test('writePcapng round trip (ns resolution)', () => {
    const file = writePcapng(SAMPLE, { linkType: LinkType.Ipv4 });
    const r = readCapture(file);
    expectClean(r);
    expect(r.format).toBe('pcapng');
    expect(r.nanosecond).toBe(true);
    expectSameRecords(r.records, SAMPLE);
    expect(r.records.every((x) => x.linkType === 228)).toBe(true);
    expect(r.records[0]!.fileOffset).toBe(28 + 32);
    expect(r.records[0]!.data.buffer).toBe(file.buffer);
  });

  test('default resolution is microseconds', () => {
    const r = readCapture(concat([shb(), idb(1), epb(0, 1_700_000_000_123_456n, bytes(10, 1))]));
    expectClean(r);
    expect(r.records[0]!.timestampNs).toBe(1_700_000_000_123_456_000n);
  });

  test('if_tsresol power of 10, power of 2, and if_tsoffset', () => {
    const file = concat([
      shb(),
      idb(1, [opt(9, Uint8Array.of(3))]), // milliseconds
      idb(1, [opt(9, Uint8Array.of(0x80 | 20))]), // 2^-20 s
      idb(1, [opt(9, Uint8Array.of(9)), opt(14, i64(1_000_000_000n))]), // ns + 1e9 s offset
      idb(1, [opt(14, i64(-5n))]), // default µs, offset -5 s
      idb(1, [opt(9, Uint8Array.of(12))]), // picoseconds: truncated to ns
      epb(0, 1_700_000_000_123n, bytes(4, 1)),
      epb(1, (5n << 20n) | (1n << 19n), bytes(4, 2)), // 5.5 s
      epb(2, 700_000_000_000_000_001n, bytes(4, 3)),
      epb(3, 10_000_001n, bytes(4, 4)),
      epb(4, 1_234_567_890_123_456n, bytes(4, 5)),
    ]);
    const r = readCapture(file);
    expectClean(r);
    expect(r.records.map((x) => x.timestampNs)).toEqual([
      1_700_000_000_123_000_000n,
      5_500_000_000n,
      1_700_000_000_000_000_001n,
      5_000_001_000n,
      1_234_567_890_123n,
    ]);
    expect(r.records[1]).toMatchObject({ sec: 5, nsec: 500_000_000 });
    expect(r.records.map((x) => BigInt(x.sec) * 1_000_000_000n + BigInt(x.nsec))).toEqual(r.records.map((x) => x.timestampNs));
  });

  test('two interfaces with different link types; unknown and non-packet blocks are skipped', () => {
    const file = concat([
      shb(),
      idb(LinkType.Ethernet),
      block(0x00000bad, bytes(13, 1)), // unknown type
      idb(LinkType.LinuxSll),
      block(4, bytes(8, 2)), // Name Resolution Block
      epb(1, 2n, bytes(20, 1)),
      block(5, bytes(12, 3)), // Interface Statistics Block
      epb(0, 3n, bytes(30, 2)),
      block(0x40000bad, bytes(3, 4)), // custom block
    ]);
    const r = readCapture(file);
    expectClean(r);
    expect(r.records.map((x) => [x.index, x.linkType, x.data.length])).toEqual([
      [1, 113, 20],
      [2, 1, 30],
    ]);
  });

  test('big-endian sections and multiple sections (interfaces reset per section)', () => {
    const file = concat([
      shb(false),
      idb(LinkType.Raw, [opt(9, Uint8Array.of(9), false)], false),
      epb(0, 11n, bytes(5, 1), false),
      shb(true),
      idb(LinkType.Ethernet),
      epb(0, 22n, bytes(6, 2)),
      epb(1, 33n, bytes(7, 3)), // interface 1 of the first section does not exist in this one
    ]);
    const r = readCapture(file);
    expect(r.records.map((x) => [x.linkType, x.timestampNs, x.data.length])).toEqual([
      [101, 11n, 5],
      [1, 22_000n, 6],
    ]);
    expect(r.error?.code).toBe(WireErrorCode.BadCapture);
    expect(r.error?.offset).toBe(file.length - epb(1, 33n, bytes(7, 3)).length + 8);
    expect(r.error?.message).toMatch(/undefined interface 1/);
  });

  test('simple packet blocks and obsolete packet blocks', () => {
    const file = concat([
      shb(),
      idb(LinkType.Ethernet, [], true, 8),
      spb(10, bytes(10, 1)), // cut to snaplen 8
      spb(3, bytes(3, 2)),
      obsoletePb(0, 7n, bytes(9, 3)),
    ]);
    const r = readCapture(file);
    expectClean(r);
    expect(r.records.map((x) => [x.data.length, x.origLen, x.timestampNs])).toEqual([
      [8, 10, 0n],
      [3, 3, 0n],
      [9, 9, 7_000n],
    ]);
  });
});

// ---------------------------------------------------------------- bad input

describe('bad input', () => {
  function expectError(file: Uint8Array, code: string, offset: number, records = 0): CaptureReadResult {
    const r = readCapture(file);
    expect(r.error).toBeInstanceOf(WireError);
    expect(r.error?.code).toBe(code);
    expect(r.error?.offset).toBe(offset);
    expect(r.records).toHaveLength(records);
    return r;
  }

  test('unknown magic, empty and short files', () => {
    expectError(bytes(100, 1), WireErrorCode.BadCapture, 0);
    expectError(new Uint8Array(0), WireErrorCode.Truncated, 0);
    expectError(Uint8Array.of(0xd4, 0xc3), WireErrorCode.Truncated, 0);
    expectError(writePcap([]).subarray(0, 20), WireErrorCode.Truncated, 0);
    expectError(shb().subarray(0, 10), WireErrorCode.Truncated, 0);
    expect(readCapture(bytes(100, 1)).error?.message).toMatch(/unknown capture magic/);
  });

  test('unsupported versions', () => {
    const p = writePcap(SAMPLE);
    const v = p.slice();
    new DataView(v.buffer).setUint16(4, 3, true);
    expectError(v, WireErrorCode.BadCapture, 4);
    const n = shb().slice();
    new DataView(n.buffer).setUint16(12, 2, true);
    expectError(n, WireErrorCode.BadCapture, 12);
  });

  test('classic record lengths are accepted up to max(snaplen, 262144) bytes, at most 256 MiB', () => {
    const file = writePcap(SAMPLE); // snaplen 262144
    const second = 24 + 16 + 60;
    expectError(u32At(file, second + 8, 0x7fffffff), WireErrorCode.BadCapture, second + 8, 1);
    expectError(u32At(file, second + 8, 300 * 1024 * 1024), WireErrorCode.BadCapture, second + 8, 1);
    // Within the limit but beyond the file.
    expectError(u32At(file, second + 8, 262144), WireErrorCode.Truncated, second + 16, 1);
    // One byte above it.
    const over = expectError(u32At(file, second + 8, 262145), WireErrorCode.BadCapture, second + 8, 1);
    expect(describeCaptureError(over)).toBe(
      `capture malformed at byte ${second + 8} after 1 complete frame: record captured length 262145 is above the 262144-byte limit (snaplen 262144)`,
    );
    // Records longer than the file's snaplen, as some tools write them, read in full ...
    const small = u32At(file, 16, 100);
    const r = readCapture(small);
    expectClean(r);
    expectSameRecords(r.records, SAMPLE);
    // ... and a small snaplen does not lower the limit below 262144.
    expectError(u32At(small, 24 + 8, 262144), WireErrorCode.Truncated, 24 + 16, 0);
    expectError(u32At(small, 24 + 8, 262145), WireErrorCode.BadCapture, 24 + 8, 0);
    // A larger snaplen raises it: what the writer writes with it reads back.
    const big = writePcap([{ data: bytes(300_000, 5), timestampNs: 1n }], { snaplen: 1 << 20 });
    expectClean(readCapture(big));
    expect(readCapture(big).records[0]!.data.length).toBe(300_000);
    expectError(u32At(big, 24 + 8, 1 << 20), WireErrorCode.Truncated, 24 + 16, 0);
    expectError(u32At(big, 24 + 8, (1 << 20) + 1), WireErrorCode.BadCapture, 24 + 8, 0);
    // Never above 256 MiB, whatever the snaplen says.
    const huge = u32At(file, 16, 0xffffffff);
    expectError(u32At(huge, second + 8, 256 * 1024 * 1024), WireErrorCode.Truncated, second + 16, 1);
    expectError(u32At(huge, second + 8, 256 * 1024 * 1024 + 1), WireErrorCode.BadCapture, second + 8, 1);
  });

  test('corrupt pcapng block lengths', () => {
    const file = writePcapng(SAMPLE);
    const epb1 = 28 + 32;
    expectError(u32At(file, epb1 + 4, 8), WireErrorCode.BadCapture, epb1 + 4, 0);
    expectError(u32At(file, epb1 + 4, 0), WireErrorCode.BadCapture, epb1 + 4, 0);
    expectError(u32At(file, epb1 + 4, 94), WireErrorCode.BadCapture, epb1 + 4, 0);
    expectError(u32At(file, epb1 + 4, 0x1000000), WireErrorCode.Truncated, epb1, 0);
    expectError(u32At(file, epb1 + 4, 0xfffffffc), WireErrorCode.BadCapture, epb1 + 4, 0);
    // Trailing copy differs.
    expectError(u32At(file, epb1 + 92 - 4, 96), WireErrorCode.BadCapture, epb1 + 88, 0);
    // Captured length beyond the block body.
    expectError(u32At(file, epb1 + 20, 61), WireErrorCode.BadCapture, epb1 + 20, 0);
    // Bad byte-order magic.
    expectError(u32At(file, 8, 0x12345678), WireErrorCode.BadCapture, 8, 0);
    // EPB before any IDB, and a file whose first block is not an SHB.
    expectError(concat([shb(), epb(0, 1n, bytes(4, 1))]), WireErrorCode.BadCapture, 28 + 8, 0);
    expectError(concat([Uint8Array.of(0x0a, 0x0d, 0x0d, 0x0a), idb(1).subarray(4)]), WireErrorCode.BadCapture, 8, 0);
    // IDB option running past its block.
    const badOpt = concat([shb(), idb(1, [opt(9, Uint8Array.of(6))])]);
    new DataView(badOpt.buffer).setUint16(28 + 16 + 2, 200, true);
    expectError(badOpt, WireErrorCode.BadCapture, 28 + 18, 0);
  });

  test('every truncation point of a classic pcap gives a clean result or a Truncated error', () => {
    for (const nanosecond of [true, false]) {
      const file = writePcap(SAMPLE, { nanosecond });
      const full = readCapture(file).records;
      const ends = full.map((r) => r.fileOffset + 16 + r.data.length);
      const boundaries = new Set([24, ...ends]);
      for (let len = 0; len <= file.length; len++) {
        const r = readCapture(file.subarray(0, len));
        const complete = ends.filter((e) => e <= len).length;
        expect(r.records).toHaveLength(complete);
        if (boundaries.has(len)) {
          expect(r.error).toBeNull();
        } else {
          expect(r.error?.code).toBe(WireErrorCode.Truncated);
          expect(r.error!.offset).toBeGreaterThanOrEqual(0);
          expect(r.error!.offset).toBeLessThanOrEqual(len);
        }
      }
    }
  });

  test('every truncation point of a pcapng file gives a clean result or a Truncated error', () => {
    const file = concat([
      shb(),
      idb(1, [opt(9, Uint8Array.of(9))]),
      epb(0, 1n, bytes(13, 1)),
      block(0xbad, bytes(5, 1)),
      spb(6, bytes(6, 2)),
      epb(0, 2n, bytes(0, 2)),
      shb(false),
      idb(113, [], false),
      epb(0, 3n, bytes(21, 3), false),
    ]);
    const full = readCapture(file);
    expectClean(full);
    expect(full.records).toHaveLength(4);
    // Block ends, walked with the block lengths (each block here is written in its own section's order).
    const blockEnds: number[] = [];
    const recordEnds: number[] = [];
    const v = new DataView(file.buffer);
    let le = true;
    for (let off = 0; off < file.length; ) {
      if (v.getUint32(off, true) === 0x0a0d0d0a) le = v.getUint32(off + 8, true) === 0x1a2b3c4d;
      const t = v.getUint32(off, le);
      const total = v.getUint32(off + 4, le);
      off += total;
      blockEnds.push(off);
      if (t === 6 || t === 3) recordEnds.push(off);
    }
    for (let len = 0; len <= file.length; len++) {
      const r = readCapture(file.subarray(0, len));
      expect(r.records).toHaveLength(recordEnds.filter((e) => e <= len).length);
      if (blockEnds.includes(len)) {
        expect(r.error).toBeNull();
      } else {
        expect(r.error?.code).toBe(WireErrorCode.Truncated);
        expect(r.error!.offset).toBeGreaterThanOrEqual(0);
        expect(r.error!.offset).toBeLessThanOrEqual(len);
      }
    }
  });

  test('describeCaptureError names the place, the frames read and the reason', () => {
    const file = writePcap(SAMPLE);
    const cut = readCapture(file.subarray(0, file.length - 1500 - 13));
    expect(describeCaptureError(cut)).toBe(
      `capture truncated at byte ${file.length - 1500 - 16} after 3 complete frames: record header needs 16 bytes but only 3 remain`,
    );
    expect(describeCaptureError(readCapture(bytes(30, 2)))).toMatch(/^capture malformed at byte 0 after 0 complete frames: unknown capture magic/);
    expect(describeCaptureError(readCapture(file))).toBe('pcap capture read completely: 4 complete frames');
  });

  test('corrupting any 32-bit field of a small file never throws', () => {
    const files = [writePcap(SAMPLE.slice(0, 3)), writePcapng(SAMPLE.slice(0, 3))];
    const values = [0, 1, 3, 11, 12, 13, 0x7fffffff, 0xffffffff, 0xfffffff0, 0x0a0d0d0a, 0x1a2b3c4d];
    for (const f of files) {
      for (let off = 0; off + 4 <= f.length; off += 4) {
        for (const val of values) {
          const r = readCapture(u32At(f, off, val));
          if (r.error !== null) {
            expect([WireErrorCode.BadCapture, WireErrorCode.Truncated]).toContain(r.error.code);
            expect(r.error.offset).toBeLessThanOrEqual(f.length);
          }
        }
      }
    }
  });

  test('random bytes never throw (fast-check)', () => {
    const check = (file: Uint8Array): void => {
      const r = readCapture(file);
      if (r.error !== null) {
        expect(r.error).toBeInstanceOf(WireError);
        expect(r.error.offset).toBeGreaterThanOrEqual(0);
        expect(r.error.offset).toBeLessThanOrEqual(file.length);
      }
      for (const rec of r.records) expect(rec.fileOffset + rec.data.length).toBeLessThanOrEqual(file.length);
    };
    const pcapHead = writePcap([]);
    const ngHead = concat([shb(), idb(1)]);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.constantFrom(0, 1, 2, 3), (tail, kind) => {
        const prefix = kind === 0 ? new Uint8Array(0) : kind === 1 ? pcapHead : kind === 2 ? ngHead : Uint8Array.of(0x0a, 0x0d, 0x0d, 0x0a);
        check(concat([prefix, tail]));
      }),
      { numRuns: 3000 },
    );
  });

  test('random mutations of valid files never throw (fast-check)', () => {
    const bases = [writePcap(SAMPLE.slice(0, 3)), writePcapng(SAMPLE.slice(0, 3))];
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        (which, edits, cut) => {
          const f = bases[which]!.slice();
          for (const [pos, val] of edits) f[pos % f.length] = val;
          const r = readCapture(f.subarray(0, cut % (f.length + 1)));
          if (r.error !== null) expect(r.error.offset).toBeLessThanOrEqual(f.length);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

// ---------------------------------------------------------------- real captures

describe('public captures', () => {
  const t = testUnless(noPublicCaptures);
  const read = (rel: string): CaptureReadResult => readCapture(new Uint8Array(fs.readFileSync(publicCapture(rel))));

  // Expected first-record timestamps come from
  //   tshark -r FILE -T fields -e frame.time_epoch -c 1   (TShark 4.0.17, Debian 12)
  t('huawei-hiroce-proxy/roce.pcap: 123 Ethernet records', () => {
    const r = read('huawei-hiroce-proxy/roce.pcap');
    expectClean(r);
    expect(r.format).toBe('pcap');
    expect(r.nanosecond).toBe(false);
    expect(r.records).toHaveLength(123);
    expect(r.records.every((x) => x.linkType === LinkType.Ethernet)).toBe(true);
    expect(r.records[0]!.timestampNs).toBe(1650970174_376937000n); // tshark: 1650970174.376937000
    expect(r.records[0]).toMatchObject({ sec: 1650970174, nsec: 376937000, timeDigits: 6 });
    expect(r.records[0]!.data.length).toBe(90);
    // tshark, last frame: 1650970195.676615000, 62 bytes
    expect(r.records[122]!.timestampNs).toBe(1650970195_676615000n);
    expect(r.records[122]!.data.length).toBe(62);
  });

  t('endace-ib-erf/infiniband.pcap: 43 ERF records (link type 197, not decoded)', () => {
    const r = read('endace-ib-erf/infiniband.pcap');
    expectClean(r);
    expect(r.records).toHaveLength(43);
    expect(r.records.every((x) => x.linkType === 197)).toBe(true);
    // tshark prints 1210794479.499693535: the time of the ERF header inside the frame (32.32 fixed
    // point, to the ns), which the reader takes too; the pcap record header holds it to the µs.
    expect(r.records[0]!.timestampNs).toBe(1210794479_499693535n);
    expect(r.records[0]).toMatchObject({ sec: 1210794479, nsec: 499693535, timeDigits: 9 });
    // tshark's frame.cap_len (290 first, 134 last) leaves out the 16-byte ERF header; incl_len keeps it.
    expect(r.records[0]!.data.length).toBe(290 + 16);
    expect(r.records[42]!.data.length).toBe(134 + 16);
  });

  for (const rel of [
    'scapy-roce-uts/cnp_connectx4lx.pcap',
    'scapy-roce-uts/rocev1_rc_ack.pcap',
    'scapy-roce-uts/rocev1_rc_rdma_write_only.pcap',
    'pcpp-pr1603-rxe/rc_read_request_vmware.pcap',
  ]) {
    t(`${rel}: one Ethernet record at time 0`, () => {
      const r = read(rel);
      expectClean(r);
      expect(r.records).toHaveLength(1);
      expect(r.records[0]!.linkType).toBe(LinkType.Ethernet);
      expect(r.records[0]!.timestampNs).toBe(0n); // tshark: 0.000000000
      expect(r.records[0]!.data.length).toBe(rel.includes('write_only') ? 94 : 74); // tshark frame.cap_len
    });
  }
});
