/**
 * Issue 15 finding 5: `roce decode` streams. It read the whole file and materialised every record
 * first, so its memory grew with the file (RSS 85 MB at 9 k frames, 185 MB at 44 k). Now it reads a
 * chunk at a time and prints each frame as it goes: a 150 000-frame capture (21 MB) decodes in a V8
 * old space limited to 24 MiB, where the whole-file decoder aborts out of memory. (The figures, RSS
 * against file size, are in docs/performance.md: `node dist/bench/decode-memory.js`.)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { writeBenchCapture } from '../../bench/analyze';

const ROCE = path.resolve(__dirname, '..', '..', 'bin', 'roce.js');
let dir: string;
let file: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-decode-stream-'));
  file = path.join(dir, 'big.pcap');
  expect(writeBenchCapture(file, 150_000)).toBeGreaterThanOrEqual(150_000);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test.each([
  ['--json', ['--json']],
  ['-v', ['-v']],
  ['(summary lines)', []],
] as const)(
  'roce decode %s of 150 000 frames fits in a 24 MiB old space',
  (_name, flags: readonly string[]) => {
    const out = path.join(dir, 'out.txt');
    const fd = fs.openSync(out, 'w');
    try {
      const r = spawnSync(process.execPath, ['--max-old-space-size=24', ROCE, 'decode', ...flags, file], {
        stdio: ['ignore', fd, 'pipe'],
        encoding: 'utf8',
        timeout: 240_000,
      });
      expect({ status: r.status, signal: r.signal, stderr: r.stderr.slice(-400) }).toMatchObject({ status: 0, signal: null });
      if (!flags.includes('--json')) expect(r.stderr).toMatch(/^150\d{3} frames read \(pcap\), 150\d{3} RoCE, 0 malformed, 0 with a bad ICRC\n$/);
    } finally {
      fs.closeSync(fd);
    }
    // Every frame was printed: one JSON line, one summary line, or one field tree each.
    const text = fs.readFileSync(out, 'utf8');
    const n = flags.includes('-v') ? text.split('\n\n').filter((b) => b.trim() !== '').length : text.split('\n').filter((l) => l !== '').length;
    expect(n).toBeGreaterThanOrEqual(150_000);
    if (flags.includes('--json')) expect(JSON.parse(text.slice(0, text.indexOf('\n')))).toMatchObject({ frame: 1 });
  },
  300_000,
);
