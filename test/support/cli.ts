/** Runs a `roce` command in this process, as `bin/roce.js` would, capturing what it prints. */
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';

export async function roce(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await run(argv, o);
  return { code, out: o.out, err: o.err };
}
