/**
 * `npm run fuzz -- [--seconds N] [--target NAME ...] [--json] [--keep-corpus]`: runs every fuzz
 * target (fuzz/targets.ts) under Jazzer.js, one after the other, each for its share of N seconds
 * (default 60 in all). Each run starts from the target's seed corpus (test/fuzz/corpus/<name>/,
 * read only) and a scratch corpus it may grow; with --keep-corpus the inputs it found are added to
 * the seed corpus. A crash leaves its input in fuzz-findings/ and fails the run (exit 1). The
 * figures (executions, coverage, features, corpus size) are printed per target, as in
 * docs/reliability.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { FUZZ_TARGETS } from './targets';

const ROOT = path.resolve(__dirname, '..', '..');
const CORPUS = path.join(ROOT, 'test', 'fuzz', 'corpus');
const FINDINGS = path.join(ROOT, 'fuzz-findings');
const JAZZER = path.join(ROOT, 'node_modules', '@jazzer.js', 'core', 'dist', 'cli.js');

export interface TargetRun {
  target: string;
  seconds: number;
  executions: number;
  execPerSec: number;
  /** libFuzzer's coverage (edges) and features at the end of the run. */
  cov: number;
  ft: number;
  corpusEntries: number;
  crash: string | null;
}

/** Reads libFuzzer's status lines ("#12345 ... cov: 321 ft: 654 corp: 40/2Kb ...", "Done 12345 runs in 6 second(s)"). */
export function parseLibFuzzerOutput(text: string): { executions: number; cov: number; ft: number; corpus: number } {
  let executions = 0;
  let cov = 0;
  let ft = 0;
  let corpus = 0;
  for (const line of text.split('\n')) {
    const st = /^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)/.exec(line);
    if (st !== null) {
      executions = Math.max(executions, Number(st[1]));
      cov = Math.max(cov, Number(st[2]));
      ft = Math.max(ft, Number(st[3]));
      corpus = Number(st[4]);
    }
    const done = /^Done (\d+) runs in/.exec(line);
    if (done !== null) executions = Math.max(executions, Number(done[1]));
  }
  return { executions, cov, ft, corpus };
}

function runTarget(t: (typeof FUZZ_TARGETS)[number], seconds: number, keep: boolean): TargetRun {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `roce-fuzz-${t.name}-`));
  const seeds = path.join(CORPUS, t.name);
  fs.mkdirSync(FINDINGS, { recursive: true });
  const args = [
    JAZZER,
    path.join(__dirname, t.module),
    scratch,
    seeds,
    '--sync',
    '-i',
    path.join(__dirname, '..') + path.sep,
    '-e',
    'node_modules',
    '--',
    `-max_total_time=${seconds}`,
    `-max_len=${t.maxLen}`,
    `-artifact_prefix=${path.join(FINDINGS, `${t.name}-`)}`,
    '-print_final_stats=1',
  ];
  const started = Date.now();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: (seconds + 120) * 1000, maxBuffer: 64 << 20 });
  const wall = (Date.now() - started) / 1000;
  const out = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  const p = parseLibFuzzerOutput(out);
  let crash: string | null = null;
  if (r.status !== 0) {
    const art = /Test unit written to (\S+)/.exec(out)?.[1] ?? null;
    const why = out.split('\n').find((l) => /Error|Exception|==\d+== ERROR/.test(l)) ?? `exit ${String(r.status)} ${String(r.signal ?? '')}`;
    crash = `${why.trim()}${art !== null ? ` (input: ${path.relative(ROOT, art)})` : ''}`;
  }
  if (keep) for (const f of fs.readdirSync(scratch)) fs.copyFileSync(path.join(scratch, f), path.join(seeds, f));
  fs.rmSync(scratch, { recursive: true, force: true });
  return {
    target: t.name,
    seconds: Math.round(wall * 10) / 10,
    executions: p.executions,
    execPerSec: Math.round(p.executions / Math.max(wall, 0.001)),
    cov: p.cov,
    ft: p.ft,
    corpusEntries: p.corpus,
    crash,
  };
}

function main(): number {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--seconds');
  const total = at >= 0 ? Number(argv[at + 1]) : 60;
  if (!Number.isFinite(total) || total < 1) {
    process.stderr.write('npm run fuzz: --seconds must be a number of seconds, at least 1\n');
    return 2;
  }
  const names = argv.flatMap((a, i) => (argv[i - 1] === '--target' ? [a] : []));
  const unknown = names.filter((n) => !FUZZ_TARGETS.some((t) => t.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`npm run fuzz: unknown target ${unknown.join(', ')}; known: ${FUZZ_TARGETS.map((t) => t.name).join(', ')}\n`);
    return 2;
  }
  if (!fs.existsSync(JAZZER)) {
    process.stderr.write('npm run fuzz: Jazzer.js is not installed (it is a dev dependency): run npm install\n');
    return 2;
  }
  const targets = names.length > 0 ? FUZZ_TARGETS.filter((t) => names.includes(t.name)) : FUZZ_TARGETS;
  const each = Math.max(1, Math.floor(total / targets.length));
  const runs: TargetRun[] = [];
  for (const t of targets) {
    const r = runTarget(t, each, argv.includes('--keep-corpus'));
    runs.push(r);
    if (!argv.includes('--json')) {
      process.stdout.write(
        `${t.name.padEnd(18)} ${String(r.executions).padStart(10)} runs in ${r.seconds} s (${r.execPerSec}/s), cov ${r.cov}, ft ${r.ft}, corpus ${r.corpusEntries}${r.crash !== null ? `  CRASH: ${r.crash}` : ''}\n`,
      );
    }
  }
  const crashes = runs.filter((r) => r.crash !== null).length;
  const executions = runs.reduce((s, r) => s + r.executions, 0);
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({ ok: crashes === 0, executions, crashes, targets: runs })}\n`);
  else process.stdout.write(`${crashes === 0 ? 'ok' : 'FAILED'}: ${executions} executions over ${runs.length} targets, ${crashes} crashing\n`);
  return crashes === 0 ? 0 : 1;
}

if (require.main === module) process.exitCode = main();
