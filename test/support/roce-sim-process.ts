/**
 * `roce sim ... --json` in a child process of the built CLI (`npm test` builds first), for the sim
 * runs that are too slow inside the test runner's module sandbox (several times slower there).
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';

const ROCE = path.join(__dirname, '..', '..', 'bin', 'roce.js');

/** Runs `roce sim ARGS --json`: its exit status (0 ok, 1 not ok) and its JSON; any other ending rejects. */
export function roceSimJson<T>(args: readonly string[], timeoutMs: number): Promise<{ code: number; json: T }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [ROCE, 'sim', ...args, '--json'], { maxBuffer: 64 << 20, timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      if (code !== 0 && code !== 1) return reject(new Error(`roce sim ${args.join(' ')}: exit ${code}: ${err?.message ?? ''} ${stderr}`));
      resolve({ code, json: JSON.parse(stdout) as T });
    });
  });
}
