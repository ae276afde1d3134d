/**
 * `roce verbs-check`: the memory-protection verbs (memory windows of both types, SEND with
 * invalidate, LOCAL_INV, FLUSH, ATOMIC WRITE and their failures) against scripts/rxe-lab/verbs-check.c
 * on rdma_rxe, or another roce-ts; apps/verbs-check/verbs-check.ts holds the cases and the protocol.
 */
import { type OptionSpec, UsageError, formatOptions } from './args';
import { type CommandContext, parseCommand } from './command';
import { type HostTestNames, PCAP_OPTIONS, SHARED_OPTIONS, hostTestArgs } from './host-run-options';
import { runHostTest } from './host-run';
import type { Output } from './output';
import { VERBS_CHECK_PORT, type VerbsCheckConfig, type VerbsCheckResult, runVerbsCheck, verbsCheckLines } from '../apps/verbs-check/verbs-check';

export const VERBS_CHECK_OPTIONS: readonly OptionSpec[] = [
  { name: 'role', short: 'r', kind: 'string', value: 'requester|responder', help: 'which end of the verbs this side plays (required)' },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `TCP port of the exchange (default ${VERBS_CHECK_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface to run RoCE on' },
  { name: 'gid-idx', short: 'g', kind: 'string', value: 'N', help: 'source GID index (default: the first IPv4-mapped GID)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.bind,
  { name: 'timeout', kind: 'string', value: 'SECONDS', help: 'how long one case waits for its completion (default 20)' },
  SHARED_OPTIONS.json,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const VERBS_CHECK_USAGE = `usage: roce verbs-check [PEER] --dev IFACE --role requester|responder [options]

Runs the memory-protection cases (type 1 and type 2 memory windows, a type 2
window from another QP, SEND with invalidate, LOCAL_INV, a window after its
invalidation, ATOMIC WRITE, FLUSH, FLUSH without the flush right) against
scripts/rxe-lab/verbs-check.c or another roce-ts. Without PEER it waits for
the peer to connect. One line per case (VC role=... case=...).

${formatOptions(VERBS_CHECK_OPTIONS)}

Exit status: 0 when every case ran (its outcome is in the lines), 1 when the
exchange failed, 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'verbs-check', server: 'PEER', dev: '-d/--dev', defaultTimeoutS: 20 };

export async function verbsCheckCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'verbs-check', options: VERBS_CHECK_OPTIONS, usage: VERBS_CHECK_USAGE, operands: 'any' });
  if (args === null) return 0;
  const role = args.values.get('role');
  if (role !== 'requester' && role !== 'responder') throw new UsageError('--role must be requester or responder');
  if (!args.values.has('port')) args.values.set('port', String(VERBS_CHECK_PORT));
  const a = hostTestArgs(args, args.positionals, NAMES);
  const cfg: VerbsCheckConfig = {
    role: a.role,
    verbsRole: role,
    port: a.port,
    caseTimeoutMs: a.timeoutS * 1000,
    connectTimeoutMs: a.server === undefined ? 300_000 : 30_000,
  };
  if (a.server !== undefined) cfg.server = a.server;
  if (a.bind !== undefined) cfg.bindHost = a.bind;
  const g = a.num('gid-idx', 0, 255);
  if (g !== undefined) cfg.gidIndex = g;
  return runHostTest(out, ctx, a, NAMES, {
    test: 'verbs-check',
    exchange: 'verbs-check exchange',
    run: (device, hooks) => runVerbsCheck(device, { ...cfg, ...hooks }),
    summary: (r, host) => ({ ...r, device: host.ifname, driver: host.driver }),
    report,
    errorFields: { ok: false, test: 'verbs-check', role },
  });
}

function report(out: Output, r: VerbsCheckResult): void {
  for (const l of verbsCheckLines(r)) out.stdout(`${l}\n`);
}
