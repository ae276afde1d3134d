/**
 * `roce decode` on worker threads (capture-engine/decode-workers.ts) prints byte for byte what it prints on
 * one thread, with the same closing line and exit status: every bundled capture repeated into
 * thousands of records (many batches, some records cut by the capture, some with a bad ICRC), a
 * record larger than a batch, every output form and filter, and a file that ends inside a record.
 * Also the rules that choose the number of threads.
 *
 * @group long
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { readCapture, PcapWriter } from '../../packets/pcap';
import { repeatedCapture } from '../support/repeated-capture';
import { AUTO_THREADS_MIN_BYTES, MAX_AUTO_THREADS, threadCount, parseThreads } from '../../cli/thread-count';
import { UsageError } from '../../cli/args';
import { BATCH_BYTES, BATCH_RECORDS } from '../../capture-engine/decode-batch-layout';
import { decodeWithWorkers } from '../../capture-engine/decode-workers';
import { recordSource } from '../../capture-engine/batch-source';
import { PcapBlockReader } from '../../capture-engine/pcap-block-reader';
import { DEFAULT_PRINT_SETTINGS, type PrintSettings } from '../../capture-engine/decode-printer';
import { streamCaptureFile } from '../../analysis/capture-stream';
import { jsIcrcBatch } from '../../packets/icrc';

const SETTINGS: PrintSettings = DEFAULT_PRINT_SETTINGS;

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const CAPTURES = path.join(ROOT, 'captures');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-decode-threads-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const repeated = (name: string, min: number): string => repeatedCapture(path.join(CAPTURES, name), min, dir);

function decode(
  threads: number,
  flags: readonly string[],
  file: string,
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [ROCE, 'decode', '--threads', String(threads), ...flags, file], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function expectSame(flags: readonly string[], file: string, threads = 2): ReturnType<typeof decode> {
  const one = decode(1, flags, file);
  const many = decode(threads, flags, file);
  expect({ status: many.status, stderr: many.stderr }).toEqual({ status: one.status, stderr: one.stderr });
  // Compared as a whole, but located on failure: the first line that differs.
  if (many.stdout !== one.stdout) {
    const a = one.stdout.split('\n');
    const b = many.stdout.split('\n');
    const i = a.findIndex((l, k) => l !== b[k]);
    expect({ line: i + 1, threaded: b[i] }).toEqual({ line: i + 1, threaded: a[i] });
  }
  expect(many.stdout).toBe(one.stdout);
  return one;
}

const BUNDLED = [
  'rc-conversation.pcap',
  'rc-conversation-raw.pcap',
  'rc-conversation-sll.pcap',
  'rc-conversation-sll2.pcap',
  'rc-conversation-usec-be.pcap',
  'uc-ud-v6-vlan.pcap',
  'xrc-rd-v1.pcap',
  'malformed.pcap',
  'cm-exchanges.pcap',
];

describe('roce decode --threads prints what one thread prints', () => {
  test.each(BUNDLED)(
    '%s repeated into thousands of records, summary and JSON',
    (name) => {
      const file = repeated(name, 5000);
      const one = expectSame([], file);
      expect(one.status).toBe(0);
      expect(one.stdout.split('\n').length).toBeGreaterThan(1000);
      expect(one.stderr).toMatch(/with a bad ICRC/);
      expectSame(['--json'], file, 1);
    },
    120_000,
  );

  test.each([
    ['-v'],
    ['--time', 'delta'],
    ['--time', 'abs'],
    ['--errors'],
    ['--qpn', '0x11,0x12'],
    ['--opcode', 'ACKNOWLEDGE,SEND_ONLY'],
    ['--frames', '1500-4200'],
    ['--no-icrc'],
  ])(
    'flags %s',
    (...flags) => {
      const file = repeated('rc-conversation.pcap', 5000);
      const one = expectSame(flags, file, 3);
      expect(one.status).toBe(0);
    },
    120_000,
  );

  test('a pcapng capture, and a record larger than a batch', () => {
    expectSame([], path.join(CAPTURES, 'rc-conversation.pcapng'));
    const cap = readCapture(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
    const w = new PcapWriter({ snaplen: 4 * BATCH_BYTES });
    const huge = new Uint8Array(BATCH_BYTES + 1000);
    huge.set(cap.records[0]?.data ?? []);
    for (let i = 0; i < 3000; i++) {
      const r = cap.records[i % cap.records.length];
      if (r === undefined) break;
      w.add(i === 1700 ? huge : r.data, BigInt(i) * 1000n);
    }
    const file = path.join(dir, 'huge.pcap');
    fs.writeFileSync(file, w.toBytes());
    expectSame([], file);
    expectSame(['--json'], file);
  }, 120_000);

  test('with ROCE_NO_NATIVE=1 (no addon on any thread: the TypeScript ICRC)', () => {
    const file = repeated('rc-conversation.pcap', 5000);
    const one = decode(1, [], file);
    const many = decode(2, [], file, { ROCE_NO_NATIVE: '1' });
    expect({ status: many.status, stderr: many.stderr, same: many.stdout === one.stdout }).toEqual({ status: one.status, stderr: one.stderr, same: true });
  }, 120_000);

  test('a file that ends inside a record: the frames before it, the same error, exit status 1', () => {
    const whole = fs.readFileSync(repeated('rc-conversation.pcap', 5000));
    const file = path.join(dir, 'cut.pcap');
    fs.writeFileSync(file, whole.subarray(0, Math.floor(whole.length * 0.7)));
    const one = expectSame([], file);
    expect(one.status).toBe(1);
    expect(one.stderr).toMatch(/truncated|ends/i);
  }, 120_000);
});

test('the batches go to the worker threads, and the output is the same as on one thread', async () => {
  const script = path.join(ROOT, 'dist', 'capture-engine', 'decode-worker.js');
  expect(fs.existsSync(script)).toBe(true); // npm test builds before it runs jest
  const file = repeated('uc-ud-v6-vlan.pcap', 150_000);
  const chunks: Buffer[] = [];
  const r = await decodeWithWorkers(
    PcapBlockReader.open(file) ?? recordSource(streamCaptureFile(file)),
    SETTINGS,
    2,
    script,
    undefined,
    jsIcrcBatch.compute,
    (c) => {
      chunks.push(Buffer.from(c)); // a copy: the chunk itself goes back to be written into again
      return true;
    },
  );
  expect(r.ended).toEqual({ format: 'pcap', error: null });
  expect(r.read).toBeGreaterThanOrEqual(150_000);
  expect(r.workerBatches).toBeGreaterThan(0);
  expect(r.workerBatches + r.localBatches).toBeGreaterThanOrEqual(Math.ceil(r.read / BATCH_RECORDS));
  // The output chunks circulate: a bounded set of buffers is allocated, whatever the number of batches.
  expect(r.workerBatches + r.localBatches).toBeGreaterThan(100);
  expect(r.freshChunks).toBeLessThan(30);
  // So do the record batches: at most 4 a worker out and 4 more waiting to be written, and one filling.
  expect(r.freshBatches).toBeLessThanOrEqual(2 * 4 + 4 + 1);
  const one = decode(1, [], file);
  expect(Buffer.concat(chunks).toString('utf8')).toBe(one.stdout);
  expect(one.stderr).toContain(`${r.read} frames read (pcap), ${r.counts.roce} RoCE, ${r.counts.malformed} malformed, ${r.counts.badIcrc} with a bad ICRC`);
}, 120_000);

describe('how many threads', () => {
  const ctx = { script: '/x/decode-worker.js', fileBytes: AUTO_THREADS_MIN_BYTES, counted: false, cores: 8 };
  test('by default: one per core up to the limit for a large file; none for a small one, with --count, on one core or from sources', () => {
    expect(threadCount(null, ctx)).toBe(MAX_AUTO_THREADS);
    expect(threadCount(null, { ...ctx, cores: 2 })).toBe(2);
    expect(threadCount(null, { ...ctx, fileBytes: AUTO_THREADS_MIN_BYTES - 1 })).toBe(1);
    expect(threadCount(null, { ...ctx, counted: true })).toBe(1);
    expect(threadCount(null, { ...ctx, cores: 1 })).toBe(1);
    expect(threadCount(null, { ...ctx, script: null })).toBe(1);
  });

  test('--threads N is taken as it is, and refused where it cannot be honoured', () => {
    expect(threadCount(parseThreads('3'), { ...ctx, fileBytes: 10 })).toBe(3);
    expect(threadCount(parseThreads('1'), { ...ctx, counted: true, script: null })).toBe(1);
    expect(() => threadCount(parseThreads('2'), { ...ctx, counted: true })).toThrow(UsageError);
    expect(() => threadCount(parseThreads('2'), { ...ctx, script: null })).toThrow(/npm run build/);
    expect(() => parseThreads('0')).toThrow(UsageError);
    expect(() => parseThreads('many')).toThrow(UsageError);
    expect(parseThreads(undefined)).toBeNull();
  });
});
