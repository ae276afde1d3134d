/**
 * `roce decode` memory: peak RSS of `roce decode --json` (and of the summary lines and `-v`) on
 * generated captures of N/4 and N frames, each in a fresh child process writing to /dev/null. The
 * reference, measured in the same run on the same files, is a whole-file read (`readFileSync` +
 * `readCapture`, then the same decode and output): its RSS grows with the file, the streaming
 * decoder's must not.
 *
 *   npm run build && node dist/bench/decode-memory.js [--frames N] [--json]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { writeBenchCapture } from './analyze';
import { readCapture } from '../packets/pcap';
import { decodeAt } from '../packets/decode';
import { frameToJson } from '../packets/json';
import { frameTimeOf } from '../base/exact-time';

type Mode = 'json' | 'summary' | 'verbose' | 'whole-file-json';
const MODES: readonly Mode[] = ['whole-file-json', 'json', 'summary', 'verbose'];
const ROCE = path.resolve(__dirname, '..', '..', 'bin', 'roce.js');

/** In the child (the reference only): decode `file` the old way, output to stdout (/dev/null). */
async function child(mode: Mode, file: string): Promise<void> {
  if (mode === 'whole-file-json') {
    // The reference: the whole file in memory, every record materialised, then the same JSON.
    const bytes = fs.readFileSync(file);
    const cap = readCapture(bytes);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let out = '';
    const first = cap.records[0];
    const t0 = { sec: first?.sec ?? 0, nsec: first?.nsec ?? 0, digits: first?.timeDigits ?? 6 };
    for (const rec of cap.records) {
      const start = rec.data.byteOffset - bytes.byteOffset;
      const time = frameTimeOf({ sec: rec.sec, nsec: rec.nsec, digits: rec.timeDigits }, t0);
      out += `${JSON.stringify(frameToJson(rec.index, time, decodeAt(view, bytes, start, start + rec.data.byteLength, rec.linkType, {}, rec.origLen)))}\n`;
      if (out.length >= 1 << 16) {
        fs.writeSync(1, out);
        out = '';
      }
    }
    fs.writeSync(1, out);
  }
}

function measure(mode: Mode, file: string): number {
  const devnull = fs.openSync('/dev/null', 'w');
  try {
    // The real command, as users run it, with a preload that reports the peak RSS at exit.
    const argv =
      mode === 'whole-file-json'
        ? [__filename, '--child', mode, file]
        : [ROCE, 'decode', ...(mode === 'json' ? ['--json'] : mode === 'verbose' ? ['-v'] : []), file];
    const r = spawnSync(process.execPath, ['-r', path.join(__dirname, 'report-peak-rss.js'), ...argv], {
      stdio: ['ignore', devnull, 'pipe'],
      encoding: 'utf8',
      timeout: 600_000,
    });
    const last = (r.stderr ?? '').trim().split('\n').pop() ?? '';
    if (r.status !== 0) throw new Error(`child ${mode} failed (${r.status}): ${r.stderr}`);
    return (JSON.parse(last) as { maxRssMiB: number }).maxRssMiB;
  } finally {
    fs.closeSync(devnull);
  }
}

function main(): void {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') {
    void child(argv[1] as Mode, argv[2] ?? '').catch((e: unknown) => {
      process.stderr.write(`${String(e)}\n`);
      process.exitCode = 1;
    });
    return;
  }
  const fi = argv.indexOf('--frames');
  const big = fi >= 0 ? Number(argv[fi + 1]) : 400_000;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-decode-mem-'));
  try {
    const rows: { frames: number; sizeMiB: number; rss: Record<Mode, number> }[] = [];
    for (const n of [Math.round(big / 4), big]) {
      const file = path.join(dir, `bench-${n}.pcap`);
      const frames = writeBenchCapture(file, n);
      const rss = {} as Record<Mode, number>;
      for (const m of MODES) rss[m] = measure(m, file);
      rows.push({ frames, sizeMiB: Math.round(fs.statSync(file).size / 1048576), rss });
    }
    if (argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return;
    }
    process.stdout.write(`roce decode peak RSS (MiB), output to /dev/null, node ${process.version}\n`);
    process.stdout.write(
      `| capture | file | ${MODES.map((m) => (m === 'whole-file-json' ? 'reference: whole-file read, --json' : m === 'json' ? '`--json`' : m === 'verbose' ? '`-v`' : 'summary lines')).join(' | ')} |\n|---|---|${MODES.map(() => '---').join('|')}|\n`,
    );
    for (const r of rows)
      process.stdout.write(`| ${r.frames.toLocaleString('en-US')} frames | ${r.sizeMiB} MiB | ${MODES.map((m) => r.rss[m]).join(' | ')} |\n`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) main();
