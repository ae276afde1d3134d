/**
 * Where a worker thread's script is: worker_threads loads it by path at run time, so it is the
 * compiled module beside this one (dist/capture-engine/decode-worker.js, analyze-worker.js).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The compiled worker script `name`.js beside this module (dist/capture-engine/), or null when the command runs from its TypeScript sources. */
export function compiledWorkerScript(name: string): string | null {
  const file = path.join(__dirname, `${name}.js`);
  return fs.existsSync(file) ? file : null;
}
