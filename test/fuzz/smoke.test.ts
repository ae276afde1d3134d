/**
 * The fuzzing smoke run of CI: `npm run fuzz -- --seconds 32` (the compiled runner,
 * Jazzer.js with libFuzzer), every target for its share of the time, coverage-guided from its seed
 * corpus. It must find no crash, and each target must really have been fuzzed: executions counted,
 * coverage reached. (What a longer campaign reached is in docs/reliability.md.)
 *
 * @group long
 */
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { FUZZ_TARGETS } from '../../fuzz/targets';
import { parseLibFuzzerOutput } from '../../fuzz/run';

const RUNNER = path.resolve(__dirname, '..', '..', 'dist', 'fuzz', 'run.js');

test('libFuzzer status lines are read: executions, coverage, features, corpus', () => {
  const text = [
    'INFO: Seed: 1',
    '#2\tINITED cov: 58 ft: 95 corp: 12/3059b exec/s: 0 rss: 75Mb',
    '#8192\tpulse  cov: 61 ft: 101 corp: 13/3312b lim: 256 exec/s: 4096 rss: 76Mb',
    'Done 75833 runs in 7 second(s)',
  ].join('\n');
  expect(parseLibFuzzerOutput(text)).toEqual({ executions: 75833, cov: 61, ft: 101, corpus: 13 });
});

test('every fuzz target runs under Jazzer.js for a few seconds and nothing crashes', () => {
  const r = spawnSync(process.execPath, [RUNNER, '--seconds', String(4 * FUZZ_TARGETS.length), '--json'], { encoding: 'utf8', timeout: 400_000 });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  expect({ status: r.status, stderr: r.stderr.slice(-2000), last: last.slice(0, 2000) }).toMatchObject({ status: 0 });
  const s = JSON.parse(last) as { ok: boolean; crashes: number; targets: { target: string; executions: number; cov: number; crash: string | null }[] };
  expect(s.ok).toBe(true);
  expect(s.targets.map((t) => t.target)).toEqual(FUZZ_TARGETS.map((t) => t.name));
  for (const t of s.targets) {
    expect({ target: t.target, crash: t.crash }).toEqual({ target: t.target, crash: null });
    expect(t.executions).toBeGreaterThan(0);
    expect(t.cov).toBeGreaterThan(0);
  }
}, 420_000);
