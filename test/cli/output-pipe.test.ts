/**
 * cli/output.ts on a pipe whose reader is slow: the command's writes wait for the reader, so what
 * it writes does not pile up in the process's memory (Node queues a pipe's unwritten data
 * otherwise). A child writes 32 MiB through `processOutput` into a pipe that this test starts
 * reading only after 300 ms; the child reports the most stdout ever held queued.
 */
import * as path from 'node:path';
import { spawn } from 'node:child_process';

const OUTPUT = path.resolve(__dirname, '..', '..', 'dist', 'cli', 'output.js');

const CHILD = `
const { processOutput } = require(${JSON.stringify(OUTPUT)});
const out = processOutput();
const line = 'y'.repeat(1023) + '\\n';
let most = 0;
for (let i = 0; i < 32 * 1024; i++) {
  out.stdout(line);
  most = Math.max(most, process.stdout.writableLength);
}
out.flush().then(() => process.stderr.write(JSON.stringify({ most })));
`;

test('a slow reader holds the writer back: nothing queues in memory', async () => {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  let bytes = 0;
  child.stdout.pause();
  await new Promise((r) => setTimeout(r, 300));
  child.stdout.on('data', (d: Buffer) => (bytes += d.length));
  child.stdout.resume();
  const code = await new Promise<number | null>((r) => child.on('close', r));
  expect(code).toBe(0);
  expect(bytes).toBe(32 * 1024 * 1024);
  const { most } = JSON.parse(err) as { most: number };
  expect(most).toBe(0);
}, 60_000);
