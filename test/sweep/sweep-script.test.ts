/**
 * The sweep script (`npm run sweep`): its options, one case reproduced in full, the markdown page it
 * writes, capture files judged, and worker threads that find exactly what one thread finds.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { sweepMain } from '../../apps/sweep/sweep-main';
import { readCapture } from '../../packets/pcap';

const ROOT = path.resolve(__dirname, '..', '..');
let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sweep-script-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function sweep(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await sweepMain(argv, { stdout: (t) => void (out += t), stderr: (t) => void (err += t) });
  return { code, out, err };
}

test.each([
  [['--cases', 'many'], /--cases must be an integer 0\.\.10000000, not "many"/],
  [['--jobs', '0'], /--jobs must be an integer 1\.\.64/],
  [['--frobnicate'], /unknown option "--frobnicate"/],
  [['--pcap', 'x.pcap'], /--pcap goes with --case/],
  [['--case', 'mtu=100'], /mtu must be one of 256, 512, 1024, 2048, 4096/],
  [['--cases', '0', '--capture', '/nonexistent/roce-sweep'], /--capture \/nonexistent\/roce-sweep: ENOENT/],
])('%j is a usage error, exit 2', async (argv, message) => {
  const r = await sweep(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(message as RegExp);
});

test('--case prints the case in full and writes its capture', async () => {
  const pcap = path.join(dir, 'case.pcap');
  const r = await sweep('--case', 'seed=3 loss=2% mtu=1024 qps=1 mix=send-rnr bytes=16K at=host-a', '--pcap', pcap);
  expect(r.out).toMatch(/^case: seed=3 loss=2% burst=off reorder=off dup=0% mtu=1024 qps=1 mix=send-rnr bytes=16K at=host-a$/m);
  expect(r.out).toMatch(/^workload: completed, every byte verified$/m);
  expect(r.out).toMatch(/^replay --role responder: 1 conversations, \d+ violations/m);
  expect(r.out).toMatch(/^ {2}rnr +\d+ +\d+ +\d+ +\d+/m);
  const frames = Number(/capture: (\d+) frames/.exec(r.out)?.[1]);
  expect(readCapture(fs.readFileSync(pcap)).records.length).toBe(frames);
  expect(r.code).toBe(/differ|[1-9]\d* violations/.test(r.out) ? 1 : 0);
});

test('a run writes its page: the command, coverage, each judge, the episode table, and the capture files judged', async () => {
  const out = path.join(dir, 'results.md');
  const r = await sweep('--cases', '6', '--capture', path.join(ROOT, 'captures', 'rxe'), '--out', out);
  const md = fs.readFileSync(out, 'utf8');
  expect(md).toContain(`Command: \`npm run sweep -- --cases 6 --capture ${path.join(ROOT, 'captures', 'rxe')} --out ${out}\``);
  expect(md).toMatch(/Cases 0\.\.5 of sweep seed 1: 6 cases, \d+ with a finding/);
  for (const heading of [
    '## Dimensions covered',
    '## `roce analyze`: go-back-N rule violations',
    '## `roce replay`: violations',
    '## Loss-recovery episodes',
    '## Capture files judged',
  ])
    expect(md).toContain(heading);
  expect(md).toContain('captures/rxe/rping-req-retries.pcap | 16 | unknown | 0 | 0 / 0 |');
  // rxe's own choices are counted apart, never as violations; the loss capture is judged as sent (its record says so) and not replayed.
  expect(md).toMatch(
    /captures\/rxe\/send-bw-rnr-late\.pcap \| 537 \| unknown \| 0 \| 0 \/ 0 \| 0 \| {2}\| sendsDuringRnrWait 1, seqNakAfterRnrNak 16, retryFromStaleCompleterPsn 1 \|/,
  );
  expect(md).toMatch(/captures\/rxe\/read-write-loss\.pcap \| 357 \| sent \| 0 \| not replayed \|/);
  expect(md).toContain('captures/rxe/nvmf-linux.pcap | 972 | unknown | 0 | 0 / 0 |');
  const m = /sweep: 6 cases, (\d+) with a finding; 6 capture files, 0 with a violation/.exec(r.err);
  expect(m).not.toBeNull();
  expect(r.code).toBe(Number(m?.[1]) > 0 ? 1 : 0);
});

test('worker threads (--jobs 2, the built script) find what one thread finds', () => {
  const page = (jobs: string): string => {
    const out = path.join(dir, `jobs-${jobs}.md`);
    const r = spawnSync(
      process.execPath,
      [path.join(ROOT, 'dist', 'apps', 'sweep', 'sweep-main.js'), '--cases', '8', '--from', '40', '--jobs', jobs, '--out', out],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(r.stderr).toMatch(/sweep: 8 cases/);
    // The command and the times differ; the findings must not.
    return fs
      .readFileSync(out, 'utf8')
      .replace(/^Command: .*$/m, '')
      .replace(/\d+\.\d s wall time, \d+\.\d s CPU time in \d job\(s\)/, '');
  };
  expect(page('2')).toBe(page('1'));
}, 180_000);
