/**
 * `roce analyze` with its reading and decoding on a worker thread (capture-engine/analyze-workers.ts) prints
 * what it prints on one thread, with the same exit status and messages: bundled captures repeated
 * into thousands of records (many batches, records cut by the capture, bad ICRCs, CM MADs, TCP
 * SYNs), every output form, `--no-icrc`, `ROCE_NO_NATIVE=1`, a record larger than a batch and a
 * file that ends inside a record. Also that the work does go to the worker, and the usage rules.
 *
 * @group long
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { readCapture, PcapWriter } from '../../packets/pcap';
import { BATCH_BYTES } from '../../capture-engine/decode-batch-layout';
import { AUTO_THREADS_MIN_BYTES, threadCount } from '../../cli/thread-count';
import { ANALYZE_AUTO_THREADS_MIN_BYTES } from '../../cli/analyze-command';
import { analyzeWithWorker } from '../../capture-engine/analyze-workers';
import { analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { VIEW_BATCH_RECORDS } from '../../analysis/view-batch';
import { repeatedCapture } from '../support/repeated-capture';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const CAPTURES = path.join(ROOT, 'captures');
/** The compiled worker (`npm test` builds first). */
const SCRIPT = path.join(ROOT, 'dist', 'capture-engine', 'analyze-worker.js');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-analyze-threads-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function analyze(
  threads: number,
  flags: readonly string[],
  file: string,
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [ROCE, 'analyze', '--threads', String(threads), ...flags, file], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function expectSame(flags: readonly string[], file: string, env: NodeJS.ProcessEnv = {}): ReturnType<typeof analyze> {
  const one = analyze(1, flags, file, env);
  const two = analyze(2, flags, file, env);
  expect({ status: two.status, stderr: two.stderr }).toEqual({ status: one.status, stderr: one.stderr });
  expect(two.stdout).toBe(one.stdout);
  return one;
}

describe('roce analyze --threads 2', () => {
  // Captures in the repository (captures/interop's are written by the interop tests, later).
  const names = [
    'rc-conversation.pcap',
    'rc-conversation.pcapng',
    'cm-exchanges.pcap',
    'uc-ud-v6-vlan.pcap',
    'malformed.pcap',
    'xrc-rd-v1.pcap',
    'rxe/rping-req-retries.pcap',
    'rxe/udaddy-sidr-req.pcap',
  ];

  test.each(names)(
    '%s repeated: the same JSON and text as one thread',
    (name) => {
      // Twice over at least, so that the second round brings cut records and bad ICRCs.
      const file = repeatedCapture(path.join(CAPTURES, name), 3 * VIEW_BATCH_RECORDS, dir);
      const json = expectSame(['--json', '--all-frames'], file);
      expect(json.status).toBe(0);
      const doc = JSON.parse(json.stdout) as { frameCounts: { total: number; icrcBad: number } };
      expect(doc.frameCounts.total).toBeGreaterThanOrEqual(3 * VIEW_BATCH_RECORDS);
      expect(doc.frameCounts.icrcBad).toBeGreaterThan(0);
      expectSame(['-v'], file);
      expectSame([], file);
      expectSame(['--follow'], file);
      expectSame(['--follow', '--fail-on', 'any'], file);
      expectSame(['--follow', '--json'], file);
      expectSame(['--no-icrc'], file);
      expectSame(['--json'], file, { ROCE_NO_NATIVE: '1' });
    },
    120_000,
  );

  test('a record larger than a batch, and a file that ends inside a record', () => {
    const cap = readCapture(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
    const w = new PcapWriter({ snaplen: 4 * BATCH_BYTES });
    let t = 1_700_000_000_000_000_000n;
    for (let round = 0; round < 40; round++) {
      for (const r of cap.records) w.add(r.data, (t += 1000n), r.origLen);
      if (round === 20) w.add(new Uint8Array(BATCH_BYTES + 1000).fill(0x42), (t += 1000n));
    }
    const big = path.join(dir, 'big-record.pcap');
    const bytes = w.toBytes();
    fs.writeFileSync(big, bytes);
    expect(expectSame(['--json', '--all-frames'], big).status).toBe(0);
    const cut = path.join(dir, 'cut.pcap');
    fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 30));
    const r = expectSame(['--json'], cut);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/capture ends early at byte \d+/);
  }, 60_000);

  test("the frames go through the worker: batches come back, the analysis is analyzeFile's", async () => {
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 5 * VIEW_BATCH_RECORDS, dir);
    const w = await analyzeWithWorker(file, { allFrames: true }, { rocePort: 4791, verifyIcrc: true, native: false }, SCRIPT);
    expect(w.batches).toBeGreaterThanOrEqual(5);
    expect(analysisDocument(w.result, file)).toEqual(analysisDocument(analyzeFile(file, { allFrames: true }), file));
  }, 60_000);

  test('by default two threads for a file of 32 MiB or more on two cores or more', () => {
    const ctx = {
      script: SCRIPT,
      fileBytes: ANALYZE_AUTO_THREADS_MIN_BYTES,
      counted: false,
      cores: 8,
      maxAuto: 2,
      minAutoBytes: ANALYZE_AUTO_THREADS_MIN_BYTES,
    };
    expect(ANALYZE_AUTO_THREADS_MIN_BYTES).toBe(32 << 20);
    expect(threadCount(null, ctx)).toBe(2);
    expect(threadCount(null, { ...ctx, cores: 1 })).toBe(1);
    expect(threadCount(null, { ...ctx, fileBytes: ANALYZE_AUTO_THREADS_MIN_BYTES - 1 })).toBe(1);
    expect(threadCount(null, { script: SCRIPT, fileBytes: AUTO_THREADS_MIN_BYTES, counted: false, cores: 8, maxAuto: 2 })).toBe(2);
    expect(threadCount(null, { ...ctx, script: null })).toBe(1);
  });

  test('usage: --threads is 1 or 2', () => {
    const r = analyze(3, [], path.join(CAPTURES, 'rc-conversation.pcap'));
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/threads/);
  });
});
