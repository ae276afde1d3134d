/**
 * `roce decode`'s block reader (capture-engine/pcap-block-reader.ts) reads a classic pcap file into batches
 * with the records, numbers, times, lengths and bytes of the record-by-record reader, and ends the
 * same way (the same error at the same offset), whatever the batch size, with times in seconds or in
 * nanoseconds after the first record (`roce analyze`'s): on every bundled pcap, on
 * nanosecond and big-endian files, on files cut at every point of their last records, on a record
 * above the size limit, and on records larger than a batch. It leaves to that reader what it cannot
 * take: pcapng, a file that is not a capture, and standard input.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PcapBlockReader } from '../../capture-engine/pcap-block-reader';
import { type OpenBlocks, captureFolder, type Read, byBlocks, byRecords, expectSameAsRecords } from '../support/block-reader-check';
import { PcapWriter, readCapture } from '../../packets/pcap';
import { WireErrorCode } from '../../packets/errors';

const CAPTURES = path.join(__dirname, '..', '..', 'captures');

const open: OpenBlocks = (file, times) => PcapBlockReader.open(file, times);

const write = captureFolder('roce-block-reader-');

function expectSame(file: string, capacities?: readonly number[], ns?: boolean): Read {
  return expectSameAsRecords(open, file, capacities, ns);
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
  expect(want.records[0]).toMatchObject({ time: 1_700_000_000, nsec: 123_456_789, digits: 9 });
  const small = byBlocks(open, file, 120);
  expect(small.grown).toBeGreaterThan(0);
});

test('nanoseconds after the first record, exact across spans of years, backwards too, in µs and ns files', () => {
  const cap = readCapture(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
  // 2^53 ns is 104 days: steps of 0.3 to 300 days, forwards and back, with odd fractions.
  const steps = [0n, 1n, 26_000_000_000_000n, 9_000_000_000_000_000n, 9_100_000_000_000_123n, -9_100_000_000_000_777n, 25_920_000_000_000_001n, -3n];
  for (const nanosecond of [false, true]) {
    const w = new PcapWriter({ nanosecond });
    let t = 1_000_000_000_000_000_000n;
    cap.records.forEach((r, i) => {
      t += steps[i % steps.length]! + BigInt(i) * 999_999n;
      w.add(r.data, t);
    });
    const file = write(nanosecond ? 'span-ns.pcap' : 'span-us.pcap', w.toBytes());
    const times = byRecords(file, true).records.map((r) => r.time);
    expect(times.some((x) => Math.abs(x) > 2 ** 53)).toBe(true);
    expectSame(file, [300]);
  }
});

test('a file cut anywhere in its last record ends as the record reader ends it', () => {
  const whole = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
  const last = readCapture(whole).records.at(-1)?.fileOffset ?? 24;
  const ends = new Set<string>();
  for (let cut = last; cut <= whole.length; cut++) {
    const want = expectSame(write('cut.pcap', whole.subarray(0, cut)), [300, 64 * 1024], cut % 7 === 0);
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
