/**
 * The doctor's checks before a live `roce probe` run (--driver xdp|packet): the ones that apply to
 * a run of this stack against a DUT, so that a down link, an interface MTU below the scenario's
 * path MTU, a DUT that does not resolve or a DUT without RoCE is named with its fix before any
 * traffic, instead of showing up as a connect timeout or a confusing verdict.
 *
 * What applies: `interface`, `mtu` (against the scenario's path MTU), `gids`, and with the DUT's
 * address `neighbour` and `roce-port`. `ecn` does not: the switches it reads are the host's kernel
 * RoCE device's (mlx5), and this stack marks and answers per its own settings.
 *
 * `roce-port` is judged by the DUT's role, because what owns UDP 4791 on the DUT differs:
 * - A kernel RoCE device (rxe, a RoCE NIC) owns 4791 whether or not its tool runs: one datagram
 *   from us draws no ICMP port unreachable from its kernel, ever.
 * - A user-space RoCE stack (this one's `roce perftest`) owns it only while its tool runs: on
 *   AF_XDP its XDP program hands 4791 to the socket before the kernel sees it, on AF_PACKET its
 *   guard socket is bound to 4791 (nic-driver/af-packet-driver.ts); before its tool starts (or
 *   after it ends) the DUT's kernel answers ICMP port unreachable, though the setup is correct.
 * So a refusal is a problem only where it is the DUT saying nobody listens at the time the run
 * needs it:
 * - DUT responder (its tool is the server we connect to): the server must be up for the run, but
 *   may start a little after us (our connect is retried until --timeout), so a refusal is asked
 *   again for `settleMs`; still refused then, nothing takes RoCE there while its server should be
 *   running: a problem.
 * - DUT requester (its tool connects to us, started after we print its command): a refusal cannot
 *   tell a host without RoCE from a user-space stack whose tool has not started yet, so it is
 *   `info` with the fix, never a refusal of the run.
 */
import { CheckStatus, type DoctorCheck, ROCE_PORT_FIX, type RocePortAnswer, rocePortAnswer, rocePortCheck, runDoctor } from './doctor-checks';

/** How long the neighbour lookup and each roce-port ask wait, ms (as --doctor's). */
export const PRE_RUN_WAIT_MS = 1000;
/** How many of those a DUT server that answers ICMP port unreachable has to take the port. */
export const PRE_RUN_SETTLE_WAITS = 5;

export type PreRunDutRole = 'requester' | 'responder';

export interface PreRunOptions {
  ifname: string;
  /** The DUT's address, or undefined (DUT requester without --dut): then only the local checks. */
  dut: string | undefined;
  /** The scenario's path MTU. */
  mtu: number;
  dutRole: PreRunDutRole;
  /** Default PRE_RUN_WAIT_MS. */
  waitMs?: number | undefined;
  /** How long a refusing DUT server is asked again, ms (default PRE_RUN_SETTLE_WAITS × waitMs). */
  settleMs?: number | undefined;
}

/**
 * The pause after a refused ask before the next: the kernel's default net.ipv4.icmp_ratelimit.
 * The DUT's kernel sends ICMP port unreachable to one peer from a bucket of 6 tokens refilled one
 * per icmp_ratelimit (icmp_global_allow(), inet_peer_xrlim_allow()): asked faster, it falls
 * silent after 6 answers, and the silence would read as its RoCE having come up.
 */
export const REFUSED_PAUSE_MS = 1000;

function settleOf(o: Pick<PreRunOptions, 'waitMs' | 'settleMs'>): { waitMs: number; settleMs: number } {
  const waitMs = o.waitMs ?? PRE_RUN_WAIT_MS;
  return { waitMs, settleMs: o.settleMs ?? PRE_RUN_SETTLE_WAITS * waitMs };
}

/**
 * The longest the checks can take, from their own timers: the neighbour lookup (its kernel
 * trigger, at least 1 s, then the wait), the asks of a refusing DUT server (the settle time, a
 * pause, then two silent asks), and 2 s for reading the interface and a busy host's scheduling.
 */
export function preRunBoundMs(o: Pick<PreRunOptions, 'waitMs' | 'settleMs'> = {}): number {
  const { waitMs, settleMs } = settleOf(o);
  return Math.max(1000, waitMs) + waitMs + settleMs + REFUSED_PAUSE_MS + 2 * waitMs + 2000;
}

/**
 * The roce-port check of a live run from its asks (`answers`, in order, the last one the verdict;
 * `spanMs` from the first to the last): see the head of this file for the rulings.
 */
export function preRunRocePortCheck(dut: string, role: PreRunDutRole, answers: readonly RocePortAnswer[], spanMs: number, waitMs: number): DoctorCheck {
  const last = answers[answers.length - 1] ?? 'silent';
  const refusals = answers.filter((a) => a === 'refused').length;
  if (last !== 'refused') {
    const plain = rocePortCheck(dut, last, waitMs);
    if (last !== 'silent' || refusals === 0) return plain;
    return {
      ...plain,
      detail: `${dut} answered UDP port 4791 with ICMP port unreachable ${refusals === 1 ? 'once' : `${refusals} times`}, then not (${answers.length} asks over ${spanMs} ms, each waiting ${waitMs} ms): its RoCE came up meanwhile (a user-space stack starting with its tool)`,
    };
  }
  if (role === 'requester')
    return {
      check: 'roce-port',
      status: CheckStatus.INFO,
      detail: `${dut} answered UDP port 4791 with ICMP port unreachable: nothing takes RoCE v2 there now. Not a reason to stop: the DUT's tool connects to us after this command prints it, and a user-space RoCE stack (roce perftest) takes the port only while its tool runs; a kernel RoCE device (rxe, a RoCE NIC) takes it always, so with one this says its RoCE is not loaded`,
      fix: ROCE_PORT_FIX(dut),
    };
  return {
    check: 'roce-port',
    status: CheckStatus.PROBLEM,
    detail: `${dut} answered UDP port 4791 with ICMP port unreachable (${refusals === answers.length ? `all ${refusals} asks` : `${refusals} of ${answers.length} asks, the last too`} over ${spanMs} ms): nothing takes RoCE v2 there, where the DUT's server should be waiting for us`,
    fix: `${ROCE_PORT_FIX(dut)}; a user-space RoCE stack takes the port only while its tool runs: start the DUT's server before this command, or give --no-doctor`,
  };
}

/**
 * Asks the DUT's UDP 4791 once, and while it refuses (DUT responder only) again after
 * REFUSED_PAUSE_MS, until `settleMs` from the first ask has passed. A silence after refusals is
 * asked once more before it counts: one ask that the DUT's ICMP rate limit left unanswered (a
 * bucket emptied by an earlier run) must not pass for its RoCE coming up. `ask` is
 * rocePortAnswer (another for tests).
 */
export async function askRocePort(
  dut: string,
  role: PreRunDutRole,
  o: Pick<PreRunOptions, 'waitMs' | 'settleMs'> = {},
  ask: (dut: string, waitMs: number) => Promise<RocePortAnswer> = rocePortAnswer,
): Promise<DoctorCheck> {
  const { waitMs, settleMs } = settleOf(o);
  const start = Date.now();
  const answers: RocePortAnswer[] = [];
  for (;;) {
    const a = await ask(dut, waitMs);
    answers.push(a);
    if (typeof a !== 'string' || role === 'requester' || Date.now() - start >= settleMs) break;
    if (a === 'silent') {
      const before = answers[answers.length - 2];
      if (!answers.includes('refused') || before === 'silent') break;
    } else await new Promise((r) => setTimeout(r, REFUSED_PAUSE_MS));
  }
  return preRunRocePortCheck(dut, role, answers, Date.now() - start, waitMs);
}

/**
 * The checks that apply before a live run, in --doctor's order. roce-port is asked only when the
 * interface is up and the DUT's address resolved: otherwise our datagram goes nowhere, and the
 * problem found already says why.
 */
export async function preRunChecks(o: PreRunOptions, ask?: (dut: string, waitMs: number) => Promise<RocePortAnswer>): Promise<DoctorCheck[]> {
  const { waitMs } = settleOf(o);
  const checks = await runDoctor({ ifname: o.ifname, dut: o.dut, mtu: o.mtu, waitMs, skip: ['roce-port', 'ecn'] });
  const blocked = checks.some((c) => (c.check === 'interface' || c.check === 'neighbour') && c.status === CheckStatus.PROBLEM);
  if (o.dut !== undefined && !blocked) checks.push(await askRocePort(o.dut, o.dutRole, o, ask));
  return checks;
}

/** The reason to refuse the run, naming each problem and its fix, or null when none is a problem. */
export function preRunRefusal(checks: readonly DoctorCheck[]): string | null {
  const problems = checks.filter((c) => c.status === CheckStatus.PROBLEM);
  if (problems.length === 0) return null;
  const lines = problems.map((c) => `  ${c.check}: ${c.detail}${c.fix === null ? '' : `\n    fix: ${c.fix}`}`);
  return `the checks before the run found ${problems.length === 1 ? 'a problem' : `${problems.length} problems`} (${problems.map((c) => c.check).join(', ')}), so no traffic was sent (roce probe --doctor makes the checks alone; --no-doctor skips them):\n${lines.join('\n')}`;
}
