/**
 * `roce probe --doctor`: the local configuration checks of apps/doctor/ on --dev (and towards
 * --dut), printed one line each with ok, problem or info and the fix; exit 1 when one is a problem.
 */
import { PATH_MTUS, doctorText, runDoctor } from '../apps/doctor/doctor-checks';
import { UsageError, intValue } from './args';
import type { Output } from './output';

export interface ProbeDoctorArgs {
  ifname: string | undefined;
  dut: string | undefined;
  /** --mtu, or the scenario's path MTU, or undefined (1024). */
  mtu: number | undefined;
  json: boolean;
}

/** --mtu N as a path MTU (256..4096, a power of two), or undefined when not given. */
export function pathMtuOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = intValue(text, 'mtu', 256, 4096);
  if (!(PATH_MTUS as readonly number[]).includes(n)) throw new UsageError(`--mtu must be one of ${PATH_MTUS.join(', ')}, not ${n}`);
  return n;
}

export async function runProbeDoctor(out: Output, a: ProbeDoctorArgs): Promise<number> {
  if (a.ifname === undefined) throw new UsageError('--doctor needs --dev IFACE (the interface RoCE runs on)');
  const checks = await runDoctor({ ifname: a.ifname, dut: a.dut, mtu: a.mtu });
  const problems = checks.filter((c) => c.status === 'problem').length;
  if (a.json) out.stdout(`${JSON.stringify({ ok: problems === 0, checks })}\n`);
  else {
    out.stdout(doctorText(checks));
    out.stdout(problems === 0 ? 'no problem found\n' : `${problems} problem(s)\n`);
  }
  return problems === 0 ? 0 : 1;
}
