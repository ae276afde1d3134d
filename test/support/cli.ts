/** Runs a `roce` command in this process, as `bin/roce.js` would, capturing what it prints. */
import { run } from '../../cli/main';
import { commandContext } from '../../cli/command';
import { memoryOutput } from '../../cli/output';

/**
 * One context for the commands a test file runs, as for the commands of one process: `--driver
 * memory` ends share one testbed. Standard input counts as a terminal: a capture command run in the
 * test's process never reads the test runner's own standard input (a forgotten FILE is a usage error).
 */
const context = commandContext(process.env, true);

export async function roce(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await run(argv, o, context);
  return { code, out: o.out, err: o.err };
}

/** A `roce` of its own context on `env` (its own testbed): for a test that runs commands with other settings. */
export function roceWith(env: NodeJS.ProcessEnv): (...argv: string[]) => Promise<{ code: number; out: string; err: string }> {
  const ctx = commandContext(env, true);
  return async (...argv) => {
    const o = memoryOutput();
    const code = await run(argv, o, ctx);
    return { code, out: o.out, err: o.err };
  };
}
