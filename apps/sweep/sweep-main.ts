/**
 * The sweep script: `npm run sweep -- --cases 20000 [--jobs 2]` runs N cases of the
 * self-consistency sweep (in worker threads with --jobs) and writes its findings to
 * docs/sweep-results.md; `--capture FILE|DIR...` judges capture files too; `--case 'LINE'`
 * reproduces one case in full (with `--pcap FILE`, its capture). Exit status 0 when nothing
 * disagrees, 1 on a finding, 2 on a usage error.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { caseAt } from './case-generator';
import { caseFailed, judgeCase, verdictOf } from './case-verdict';
import { runCase } from './case-run';
import { caseDetail } from './case-detail';
import { captureFileFindings, captureFiles, judgeCaptureFile, type CaptureFileVerdict } from './capture-files';
import { parseCase } from './sweep-case';
import { SweepError, SweepErrorCode } from './sweep-error';
import { findingsTable, sweepMarkdown } from './sweep-report';
import { addVerdict, emptyTotals, type SweepTotals } from './sweep-totals';
import type { SweepWorkerData, SweepWorkerMessage } from './sweep-worker';

const USAGE = `usage: npm run sweep -- [--cases N] [--from K] [--seed S] [--jobs J] [--capture FILE|DIR ...] [--out FILE|-]
       npm run sweep -- --case 'seed=7 loss=1% ...' [--pcap FILE]

Runs N cases (default 500) of the self-consistency sweep: the engine on the in-memory link with
seeded faults, its capture judged by roce analyze and roce replay (both roles), and the
loss-recovery counts of the engine, roce demo and roce analyze compared. Writes the findings to
docs/sweep-results.md (--out). --capture judges capture files (a folder: every .pcap/.pcapng in
it). --case runs one case and prints everything about it.

  --cases N      cases to run (0 with --capture: only the files)
  --from K       first case number (default 0)
  --seed S       sweep seed: which cases (default 1)
  --jobs J       worker threads (default 1)
  --capture F    capture file or folder to judge (repeatable)
  --out FILE     where to write the markdown (default docs/sweep-results.md; - for stdout)
  --case LINE    one case, as its one-line form
  --pcap FILE    with --case: write its capture there

Exit status: 0 when nothing disagrees, 1 on a finding, 2 on a usage error.`;

const DEFAULT_OUT = path.resolve(__dirname, '..', '..', '..', 'docs', 'sweep-results.md');

interface Options {
  cases: number;
  from: number;
  seed: number;
  jobs: number;
  captures: string[];
  out: string;
  caseLine: string | null;
  pcap: string | null;
}

function intOption(name: string, text: string | undefined, min: number, max: number): number {
  const v = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(v) || v < min || v > max)
    throw new SweepError(`--${name} must be an integer ${min}..${max}, not ${JSON.stringify(text ?? '')}`, SweepErrorCode.USAGE);
  return v;
}

function parseOptions(argv: readonly string[]): Options | null {
  const o: Options = { cases: 500, from: 0, seed: 1, jobs: 1, captures: [], out: DEFAULT_OUT, caseLine: null, pcap: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') ? a.slice(2, eq > 0 ? eq : undefined) : a;
    const inline = a.startsWith('--') && eq > 0 ? a.slice(eq + 1) : undefined;
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new SweepError(`--${name} needs a value`, SweepErrorCode.USAGE);
      return v;
    };
    switch (name) {
      case 'help':
      case '-h':
        return null;
      case 'cases':
        o.cases = intOption(name, value(), 0, 10_000_000);
        break;
      case 'from':
        o.from = intOption(name, value(), 0, 2 ** 31);
        break;
      case 'seed':
        o.seed = intOption(name, value(), 0, 0xffffffff);
        break;
      case 'jobs':
        o.jobs = intOption(name, value(), 1, 64);
        break;
      case 'capture':
        o.captures.push(value());
        // Further operands up to the next option are capture files too (--capture a.pcap b.pcap).
        while (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('--')) o.captures.push(argv[++i] as string);
        break;
      case 'out':
        o.out = value();
        break;
      case 'case':
        o.caseLine = value();
        break;
      case 'pcap':
        o.pcap = value();
        break;
      default:
        throw new SweepError(`unknown option ${JSON.stringify(a)}`, SweepErrorCode.USAGE);
    }
  }
  if (o.pcap !== null && o.caseLine === null) throw new SweepError('--pcap goes with --case', SweepErrorCode.USAGE);
  return o;
}

function quote(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Where the script prints: the process's streams, or a test's buffers. */
export interface SweepIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

const PROCESS_IO: SweepIo = { stdout: (t) => void process.stdout.write(t), stderr: (t) => void process.stderr.write(t) };

function progress(io: SweepIo, t: SweepTotals, total: number, t0: number): void {
  io.stderr(`sweep: ${t.cases}/${total} cases, ${t.failedCases} with a finding, ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}

/** Runs the cases, in this thread (jobs 1) or in worker threads. */
async function runCases(o: Options, io: SweepIo): Promise<SweepTotals> {
  const t = emptyTotals();
  const t0 = Date.now();
  const every = Math.max(100, Math.ceil(o.cases / 20));
  const add = (index: number, v: Parameters<typeof addVerdict>[2]): void => {
    addVerdict(t, index, v);
    if (t.cases % every === 0) progress(io, t, o.cases, t0);
  };
  if (o.jobs === 1) {
    for (let i = o.from; i < o.from + o.cases; i++) add(i, judgeCase(caseAt(o.seed, i)));
    return t;
  }
  const script = path.join(__dirname, 'sweep-worker.js');
  await Promise.all(
    Array.from({ length: Math.min(o.jobs, Math.max(1, o.cases)) }, (_, slot) => {
      const data: SweepWorkerData = { sweepSeed: o.seed, from: o.from, count: o.cases, jobs: o.jobs, slot };
      return new Promise<void>((resolve, reject) => {
        const w = new Worker(script, { workerData: data });
        let done = false;
        w.on('message', (m: SweepWorkerMessage) => {
          if ('done' in m) done = true;
          else add(m.index, m.verdict);
        });
        w.on('error', reject);
        w.on('exit', (code) =>
          done && code === 0 ? resolve() : reject(new SweepError(`sweep worker ${slot} stopped (exit ${code}) before its last case`, SweepErrorCode.WORKER)),
        );
      });
    }),
  );
  return t;
}

export async function sweepMain(argv: readonly string[], io: SweepIo = PROCESS_IO): Promise<number> {
  let o: Options | null;
  try {
    o = parseOptions(argv);
    if (o?.caseLine != null) parseCase(o.caseLine);
  } catch (e) {
    if (!(e instanceof SweepError)) throw e;
    io.stderr(`sweep: ${e.message}\n${USAGE}\n`);
    return 2;
  }
  if (o === null) {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  if (o.caseLine !== null) {
    const c = parseCase(o.caseLine);
    const run = runCase(c);
    if (o.pcap !== null) fs.writeFileSync(o.pcap, run.capture);
    const v = verdictOf(c, run);
    io.stdout(caseDetail(v, o.pcap));
    return caseFailed(v) ? 1 : 0;
  }
  let files: string[];
  try {
    files = captureFiles(o.captures);
  } catch (e) {
    if (!(e instanceof SweepError)) throw e;
    io.stderr(`sweep: ${e.message}\n`);
    return 2;
  }
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const totals = await runCases(o, io);
  let judged: CaptureFileVerdict[];
  try {
    judged = files.map(judgeCaptureFile);
  } catch (e) {
    if (!(e instanceof SweepError)) throw e;
    io.stderr(`sweep: ${e.message}\n`);
    return 2;
  }
  const cpu = process.cpuUsage(cpu0);
  const wallMs = Date.now() - t0;
  // Worker threads' CPU time is the process's: cpuUsage counts every thread.
  const md = sweepMarkdown(
    totals,
    {
      command: `npm run sweep -- ${argv.map(quote).join(' ')}`.trimEnd(),
      sweepSeed: o.seed,
      from: o.from,
      jobs: o.jobs,
      wallMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      cpus: os.cpus().length,
      node: process.version,
    },
    judged,
  );
  if (o.out === '-') io.stdout(md);
  else {
    fs.mkdirSync(path.dirname(o.out), { recursive: true });
    fs.writeFileSync(o.out, md);
  }
  const table = findingsTable(totals);
  const fileFindings = judged.filter((f) => captureFileFindings(f).length > 0);
  io.stderr(
    `sweep: ${totals.cases} cases, ${totals.failedCases} with a finding; ${judged.length} capture files, ${fileFindings.length} with a violation; ${(wallMs / 1000).toFixed(1)} s${o.out === '-' ? '' : `; written to ${path.relative(process.cwd(), o.out) || o.out}`}\n`,
  );
  if (table !== '') io.stderr(`${table}\n`);
  for (const f of fileFindings) io.stderr(`${f.file}: ${captureFileFindings(f).join('; ')}\n`);
  return totals.failedCases > 0 || fileFindings.length > 0 ? 1 : 0;
}

if (require.main === module) {
  sweepMain(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`sweep: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
