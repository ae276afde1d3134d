/**
 * `roce decode`'s and `roce analyze`'s pcapng block reader (capture-engine/pcapng-block-reader.ts) reads a
 * pcapng file into batches with the records, numbers, times, lengths and bytes of the
 * record-by-record reader, and ends the same way (the same error at the same offset), whatever the
 * batch size, with times in seconds or in nanoseconds after the first record: on the bundled
 * pcapng and on every bundled pcap written as pcapng; on sections of either byte order, interfaces
 * of every timestamp resolution and offset, simple and obsolete packet blocks and blocks of unknown
 * types; on files cut at every point of their last blocks and on broken blocks; and on blocks
 * larger than a batch, or a batch's worth of blocks with no packet in them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PcapngBlockReader } from '../../capture-engine/pcapng-block-reader';
import { type OpenBlocks, captureFolder, byBlocks, byRecords, expectSameAsRecords } from '../support/block-reader-check';
import { block, concat, epb, i64, idb, obsoletePb, opt, shb, spb } from '../support/pcapng-blocks';
import { LinkType, microsSec, readCapture, writePcapng } from '../../packets/pcap';
import { WireErrorCode } from '../../packets/errors';

const CAPTURES = path.join(__dirname, '..', '..', 'captures');
const open: OpenBlocks = (file, times) => PcapngBlockReader.open(file, times);

const write = captureFolder('roce-pcapng-reader-');

/** The frames of a bundled capture. */
function frames(name: string): Uint8Array[] {
  return readCapture(fs.readFileSync(path.join(CAPTURES, name))).records.map((r) => r.data);
}

/** if_tsresol (option 9) of one byte. */
const tsresol = (r: number): Uint8Array => opt(9, Uint8Array.of(r));
/** if_tsoffset (option 14) in seconds. */
const tsoffset = (sec: bigint): Uint8Array => opt(14, i64(sec));

test('the bundled pcapng: the same records and the same end, at any batch size', () => {
  const want = expectSameAsRecords(open, path.join(CAPTURES, 'rc-conversation.pcapng'));
  expect(want.records.length).toBeGreaterThan(0);
});

const bundledPcaps = fs.readdirSync(CAPTURES).filter((f) => f.endsWith('.pcap'));

test.each(bundledPcaps)('%s written as pcapng (ns timestamps): the same records', (name) => {
  const cap = readCapture(fs.readFileSync(path.join(CAPTURES, name)));
  const file = write(
    `${name}ng`,
    writePcapng(
      cap.records.map((r) => ({ data: r.data, timestampNs: r.timestampNs })),
      { linkType: cap.records[0]?.linkType ?? LinkType.Ethernet },
    ),
  );
  const want = expectSameAsRecords(open, file, [300, 64 * 1024]);
  expect(want.records.length).toBe(cap.records.length);
});

test('microsecond timestamps (the default resolution) take the exact path: the same times as the BigInt one', () => {
  const data = frames('rc-conversation.pcap');
  // Steps of microseconds to years, forwards and back, so that the ns after the first pass 2^53.
  const steps = [0n, 1n, 999_999n, 1_000_000n, 26_000_000_000n, 9_100_000_000_123n, -9_100_000_000_777n, 25_920_000_000_001n, -3n];
  let t = 1_700_000_000_000_000n;
  const file = write(
    'us.pcapng',
    concat([
      shb(),
      idb(LinkType.Ethernet),
      ...data.map((d, i) => {
        t += steps[i % steps.length]! + BigInt(i) * 999n;
        return epb(0, t, d);
      }),
    ]),
  );
  const want = expectSameAsRecords(open, file, [200, 4096]);
  expect(byRecords(file, true).records.some((r) => Math.abs(r.time) > 2 ** 53)).toBe(true);
  expect(want.records[0]).toMatchObject({ time: 1_700_000_000, nsec: 0, digits: 6 });
});

test('sections of both byte orders, interfaces of every resolution and offset, simple, obsolete and unknown blocks', () => {
  const data = frames('rc-conversation.pcap');
  const d = (i: number): Uint8Array => data[i % data.length]!;
  const parts: Uint8Array[] = [
    shb(),
    idb(LinkType.Ethernet), // µs
    idb(LinkType.Ethernet, [tsresol(9)]), // ns
    idb(LinkType.Ethernet, [tsresol(0x80 | 20)]), // 2^-20 s
    idb(LinkType.Ethernet, [tsoffset(1_000_000n)]), // µs from an offset
    idb(LinkType.Ethernet, [tsresol(3), tsoffset(-5n)]), // ms, before the epoch's offset
    block(0x0bad, new Uint8Array(40)), // unknown: skipped
    epb(0, 1_700_000_000_123_456n, d(0)),
    epb(1, 1_700_000_000_123_456_789n, d(1)),
    epb(2, 1_700_000_000n << 20n, d(2)),
    epb(3, 123_456n, d(3)),
    epb(4, 1_700_000_000_123n, d(4)),
    obsoletePb(0, 1_700_000_001_000_000n, d(5)),
    spb(d(6).length, d(6)),
    epb(0, (1n << 53n) + 17n, d(7)), // µs past 2^53: the BigInt path
    // A second section, big-endian, with its own interfaces.
    shb(false),
    idb(LinkType.Ethernet, [], false),
    epb(0, 1_700_000_002_000_000n, d(8), false),
    epb(0, 1_700_000_002_000_001n, d(9), false, d(9).length + 100),
  ];
  const file = write('mixed.pcapng', concat(parts));
  const want = expectSameAsRecords(open, file, [100, 700, 64 * 1024]);
  expect(want.records).toHaveLength(10);
  expect(want.ended).toEqual({ format: 'pcapng', error: null });
});

test('a batch of blocks without a packet is read past, and a block larger than the batch asks for more', () => {
  const data = frames('rc-conversation.pcap');
  const skips = Array.from({ length: 50 }, () => block(0x0bad, new Uint8Array(100)));
  const big = new Uint8Array(5000).fill(7);
  const file = write('sparse.pcapng', concat([shb(), idb(LinkType.Ethernet), ...skips, epb(0, 1n, data[0]!), ...skips, epb(0, 2n, big), ...skips, ...skips]));
  const want = expectSameAsRecords(open, file, [300, 1200]);
  expect(want.records).toHaveLength(2);
  expect(byBlocks(open, file, 1200).grown).toBeGreaterThan(0);
});

test('a file cut anywhere in its last blocks ends as the record reader ends it', () => {
  // Short frames (ACKs), so that every cut of the last two blocks is tried.
  const data = frames('rc-conversation.pcap')
    .filter((d) => d.length < 100)
    .slice(0, 6);
  const blocks = data.map((d, i) => epb(0, 1_700_000_000_000_000n + BigInt(i), d));
  const whole = concat([shb(), idb(LinkType.Ethernet), ...blocks]);
  const last = whole.length - (blocks.at(-1)?.length ?? 0) - (blocks.at(-2)?.length ?? 0);
  const ends = new Set<string>();
  for (let cut = last; cut <= whole.length; cut++) {
    const want = expectSameAsRecords(open, write('cut.pcapng', whole.subarray(0, cut)), [300, 64 * 1024], cut % 7 === 0);
    ends.add(JSON.stringify(want.ended).replace(/\d+/g, 'N'));
  }
  // A clean end, a cut block header and a cut block body were all met.
  expect(ends.size).toBeGreaterThanOrEqual(3);
});

test('broken blocks end reading with the record reader’s error, at its offset', () => {
  const data = frames('rc-conversation.pcap');
  const good = concat([shb(), idb(LinkType.Ethernet), epb(0, 1n, data[0]!)]);
  const cases: [string, Uint8Array, string][] = [];
  // An undefined interface.
  cases.push(['no-iface', concat([good, epb(3, 2n, data[1]!)]), WireErrorCode.BadCapture]);
  // A trailing length that differs from the leading one.
  const badTrailer = epb(0, 2n, data[1]!);
  new DataView(badTrailer.buffer).setUint32(badTrailer.length - 4, 12, true);
  cases.push(['trailer', concat([good, badTrailer]), WireErrorCode.BadCapture]);
  // A total length that is not a multiple of 4, and one that is absurd.
  for (const [name, total] of [
    ['odd', 33],
    ['absurd', 0x7fffffff],
  ] as const) {
    const b = epb(0, 2n, data[1]!);
    new DataView(b.buffer).setUint32(4, total, true);
    cases.push([name, concat([good, b]), WireErrorCode.BadCapture]);
  }
  // A captured length past the block's body.
  const long = epb(0, 2n, data[1]!);
  new DataView(long.buffer).setUint32(20, 60_000, true);
  cases.push(['caplen', concat([good, long]), WireErrorCode.BadCapture]);
  // A bad byte-order magic in a second section, and a first block that is not a section header.
  const badShb = shb();
  new DataView(badShb.buffer).setUint32(8, 0x12345678, true);
  cases.push(['bom', concat([good, badShb]), WireErrorCode.BadCapture]);
  // A simple packet block before any interface.
  cases.push(['spb-first', concat([shb(), spb(data[0]!.length, data[0]!)]), WireErrorCode.BadCapture]);
  for (const [name, bytes, code] of cases) {
    const want = expectSameAsRecords(open, write(`${name}.pcapng`, bytes), [200, 64 * 1024]);
    expect(want.ended).toMatchObject({ format: 'pcapng', error: { code } });
  }
});

test('whole seconds of whole microseconds: what the BigInt division gives, at every kind of value', () => {
  const values: number[] = [0, 1, 999_999, 1_000_000, 1_000_001, 2 ** 53 - 1, 2 ** 53 - 1_000_000, 9_007_199_254_000_000, 1_700_000_000_999_999];
  for (let k = 1; k < 2000; k++) {
    const sec = Math.floor((2 ** 53 / 1e6) * (k / 2000));
    values.push(sec * 1e6, sec * 1e6 - 1, sec * 1e6 + 1, sec * 1e6 + 999_999);
  }
  for (const us of values) if (us >= 0 && us < 2 ** 53) expect(microsSec(us)).toBe(Number(BigInt(us) / 1_000_000n));
});

test('classic pcap, a file that is no capture, a short file and standard input are left to the other readers', () => {
  expect(PcapngBlockReader.open(path.join(CAPTURES, 'rc-conversation.pcap'))).toBeNull();
  expect(PcapngBlockReader.open(write('text.pcapng', new TextEncoder().encode('not a capture at all, but long enough')))).toBeNull();
  expect(PcapngBlockReader.open(write('short.pcapng', shb().subarray(0, 8)))).toBeNull();
  expect(PcapngBlockReader.open('-')).toBeNull();
});
