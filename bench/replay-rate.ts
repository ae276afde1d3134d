/**
 * `roce replay` benchmark: the whole program in both roles on captures of two sizes, one four times
 * the other, to show the time per frame stays flat as the capture grows (replay looks captured
 * packets and answers up by PSN, so a longer conversation costs no more per frame). The
 * reference, in the same run on the same files: `roce analyze --threads 1`, which reads and
 * decodes every frame once.
 *
 *   npm run build && node dist/bench/replay-rate.js [--bytes 16M] [--loss 1%] [--repeat 3] [--roce FILE]
 *
 * The captures are `roce demo`'s (four RC QP pairs: SEND, WRITE with immediate, READ and atomics,
 * seed 1) of --bytes and four times --bytes, without loss unless --loss is given. Each command runs
 * --repeat times, the commands alternating; the median wall time from spawn to exit is reported,
 * node's start-up included, with the peak RSS. `--roce FILE` times another build's `bin/roce.js`
 * (the captures are made by this one), to compare two builds on the same files.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';

const OWN_ROCE = path.resolve(__dirname, '..', '..', 'bin', 'roce.js');
const REPORT_RSS = path.join(__dirname, 'report-peak-rss.js');

interface Run {
  seconds: number;
  maxRssMiB: number;
}

function timed(roce: string, args: readonly string[], okStatus: readonly number[]): Run {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-r', REPORT_RSS, roce, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const rss = /\{"maxRssMiB":(\d+)\}/.exec(r.stderr);
  if (r.status === null || !okStatus.includes(r.status) || rss === null)
    throw new Error(`roce ${args.join(' ')} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return { seconds, maxRssMiB: Number(rss[1]) };
}

function parseBytes(s: string): number {
  const m = /^(\d+)([KM]?)$/i.exec(s);
  if (m === null) throw new Error(`--bytes: not a size: ${s}`);
  return Number(m[1]) * (m[2]?.toUpperCase() === 'M' ? 1 << 20 : m[2]?.toUpperCase() === 'K' ? 1 << 10 : 1);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const COMMANDS = [
  { name: 'replay --role responder', args: (f: string) => ['replay', f, '--role', 'responder', '--json'], ok: [0, 1] },
  { name: 'replay --role requester', args: (f: string) => ['replay', f, '--role', 'requester', '--json'], ok: [0, 1] },
  { name: 'analyze --threads 1 (reference)', args: (f: string) => ['analyze', '--threads', '1', f], ok: [0, 1] },
] as const;

function main(): void {
  const argv = process.argv.slice(2);
  const opt = (name: string, def: string): string => {
    const i = argv.indexOf(name);
    return i >= 0 ? (argv[i + 1] ?? def) : def;
  };
  const bytes = parseBytes(opt('--bytes', '16M'));
  const loss = opt('--loss', '0');
  const repeat = Number(opt('--repeat', '3'));
  const roce = path.resolve(opt('--roce', OWN_ROCE));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-replay-'));
  try {
    const files: { file: string; frames: number; mib: number }[] = [];
    for (const b of [bytes, 4 * bytes]) {
      const file = path.join(dir, `demo-${b}.pcap`);
      const r = spawnSync(process.execPath, [OWN_ROCE, 'demo', '--bytes', String(b), '--loss', loss, '--seed', '1', '--trace', '0', '--pcap', file, '--json'], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      });
      if (r.status !== 0) throw new Error(`roce demo failed: ${r.stderr}`);
      const frames = (JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { pcapFrames: number }).pcapFrames;
      files.push({ file, frames, mib: Math.round((fs.statSync(file).size / 1048576) * 10) / 10 });
    }
    process.stdout.write(
      `${roce}: roce replay, node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'}, ${os.cpus().length} cores; roce demo --loss ${loss}; median of ${repeat} alternating runs\n`,
    );
    process.stdout.write('| capture | command | time | µs a frame | peak RSS |\n|---|---|---|---|---|\n');
    const perFrame = new Map<string, number[]>();
    for (const f of files) {
      const times = COMMANDS.map(() => [] as number[]);
      const rss = COMMANDS.map(() => 0);
      for (let i = 0; i < repeat; i++) {
        COMMANDS.forEach((c, k) => {
          const r = timed(roce, c.args(f.file), c.ok);
          (times[k] as number[]).push(r.seconds);
          rss[k] = Math.max(rss[k] as number, r.maxRssMiB);
        });
      }
      COMMANDS.forEach((c, k) => {
        const s = median(times[k] as number[]);
        const us = (s / f.frames) * 1e6;
        perFrame.set(c.name, [...(perFrame.get(c.name) ?? []), us]);
        process.stdout.write(`| ${f.frames} frames, ${f.mib} MiB | ${c.name} | ${s.toFixed(2)} s | ${us.toFixed(1)} | ${rss[k]} MiB |\n`);
      });
    }
    process.stdout.write('\ntime a frame on the file four times larger, against the smaller (1.00 = linear; start-up weighs more on the smaller)\n');
    for (const [name, us] of perFrame) process.stdout.write(`- ${name}: ${((us[1] ?? 0) / (us[0] ?? 1)).toFixed(2)}\n`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) main();
