/**
 * `roce analyze --json` on captures of growing size: peak RSS and wall time with its long lists
 * (messages, episodes, flagged frames) spooled to a temporary file (the default for a capture of
 * 32 MiB or more) against the same command with them kept in memory (TMPDIR made unusable, which
 * is the command's fallback). Alternating, three runs each, output to /dev/null; the two must
 * print the same.
 *
 *   npm run build && node dist/bench/analyze-json-memory.js [--frames N] [--runs K]
 *
 * The captures are bench/analyze.ts's: two RC QP pairs of 64-byte WRITEs, every 997th request
 * lost and resent, at 1/4, 1 and 3 times N frames (default N = 1 000 000).
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { writeBenchCapture } from './analyze';

const ROCE = path.resolve(__dirname, '..', '..', 'bin', 'roce.js');
const REPORT_RSS = path.join(__dirname, 'report-peak-rss.js');

interface Run {
  seconds: number;
  maxRssMiB: number;
  digest: string;
  outputMiB: number;
}

/** One `roce analyze --json --threads 1 FILE`, its output hashed on the way to a file that is then removed. */
function run(file: string, tmpdir: string, outFile: string): Run {
  const out = fs.openSync(outFile, 'w');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-r', REPORT_RSS, ROCE, 'analyze', '--json', '--threads', '1', file], {
    stdio: ['ignore', out, 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, TMPDIR: tmpdir },
  });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  fs.closeSync(out);
  const rss = /\{"maxRssMiB":(\d+)\}/.exec(r.stderr);
  if (r.status !== 0 || rss === null) throw new Error(`roce analyze --json failed: ${r.stderr}`);
  // Hashed a piece at a time: a child inherits its parent's peak RSS as its own starting maxRSS
  // (Linux keeps the high-water mark across fork and exec), so this process must stay small.
  const hash = crypto.createHash('sha256');
  const piece = Buffer.alloc(1 << 20);
  const fd = fs.openSync(outFile, 'r');
  for (let n: number; (n = fs.readSync(fd, piece, 0, piece.length, null)) > 0; ) hash.update(piece.subarray(0, n));
  fs.closeSync(fd);
  const digest = hash.digest('hex');
  const outputMiB = Math.round(fs.statSync(outFile).size / 1048576);
  fs.rmSync(outFile);
  return { seconds, maxRssMiB: Number(rss[1]), digest, outputMiB };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function main(): void {
  const argv = process.argv.slice(2);
  const fi = argv.indexOf('--frames');
  const big = fi >= 0 ? Number(argv[fi + 1]) : 1_000_000;
  const ri = argv.indexOf('--runs');
  const runs = ri >= 0 ? Number(argv[ri + 1]) : 3;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-json-'));
  const spoolDir = path.join(dir, 'tmp');
  fs.mkdirSync(spoolDir);
  // A file where a directory should be: the command cannot make its spool and keeps the lists.
  const noDir = path.join(dir, 'not-a-directory');
  fs.writeFileSync(noDir, '');
  try {
    process.stdout.write(
      `roce analyze --json FILE > file, --threads 1, node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'}; median of ${runs} alternating runs\n`,
    );
    process.stdout.write('| capture | file | spooled: time, peak RSS | in memory: time, peak RSS | report |\n|---|---|---|---|---|\n');
    for (const n of [Math.round(big / 4), big, 3 * big]) {
      const file = path.join(dir, `bench-${n}.pcap`);
      const frames = writeBenchCapture(file, n);
      const sizeMiB = Math.round(fs.statSync(file).size / 1048576);
      const spooled: Run[] = [];
      const kept: Run[] = [];
      for (let i = 0; i < runs; i++) {
        spooled.push(run(file, spoolDir, path.join(dir, 'out.json')));
        kept.push(run(file, noDir, path.join(dir, 'out.json')));
      }
      if (argv.includes('--verbose'))
        process.stderr.write(
          `${JSON.stringify({ n, spooled: spooled.map((r) => [r.seconds, r.maxRssMiB]), kept: kept.map((r) => [r.seconds, r.maxRssMiB]) })}\n`,
        );
      const digests = new Set([...spooled, ...kept].map((r) => r.digest));
      if (digests.size !== 1) throw new Error(`the spooled and in-memory reports differ on ${frames} frames`);
      const cell = (rs: Run[]): string => `${median(rs.map((r) => r.seconds)).toFixed(2)} s, ${Math.max(...rs.map((r) => r.maxRssMiB))} MiB`;
      process.stdout.write(`| ${frames} frames | ${sizeMiB} MiB | ${cell(spooled)} | ${cell(kept)} | ${spooled[0]!.outputMiB} MiB, the same |\n`);
      fs.rmSync(file);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) main();
