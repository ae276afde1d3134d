/** What the benchmarks that time whole commands share: a median, a command timed, whether tshark is installed. */
import { execFileSync, spawnSync } from 'node:child_process';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** The median wall time (s) of `runs` runs of `cmd ARGS`, its output discarded; throws when it fails. */
export function timeCommand(cmd: string, args: string[], runs = 3): number {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    const res = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'], timeout: 600_000 });
    if (res.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${res.status}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return median(times);
}

export function hasTshark(): boolean {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
