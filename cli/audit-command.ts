/**
 * `roce audit SERVER_IP --dev IFACE`: how guessable are the names a peer hands out? Opens --runs
 * perftest connections to a peer serving `ib_write_bw` (or `roce perftest write`), restarted after
 * each run, collects the R_Key, buffer address, QP numbers and starting PSNs of each exchange, and
 * judges them as `roce analyze --audit` judges a capture's (apps/audit/peer-audit.ts,
 * analysis/guessability.ts; docs/security.md).
 */
import { type OptionSpec, UsageError, formatOptions } from './args';
import { type CommandContext, parseCommand } from './command';
import { type HostTestNames, SHARED_OPTIONS, hostTestArgs } from './host-run-options';
import { runHostTest } from './host-run';
import type { Output } from './output';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { type PeerAuditResult, auditPeer } from '../apps/audit/peer-audit';
import type { HostDevice } from '../apps/host/host-device';
import { guessReportText } from '../analysis/guessability-text';
import { liveChecksText } from '../apps/audit/live-checks-text';
import { MIN_VALUES_FOR_VERDICT } from '../analysis/guessability';

export const AUDIT_OPTIONS: readonly OptionSpec[] = [
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface to run RoCE on' },
  SHARED_OPTIONS.driver,
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `the peer's perftest port (default ${PINGPONG_DEFAULT_PORT})` },
  {
    name: 'runs',
    kind: 'string',
    value: 'N',
    help: `perftest runs (connections) to make, ${MIN_VALUES_FOR_VERDICT}..1000 (default 8): each gives an R_Key and an address; a verdict needs ${MIN_VALUES_FOR_VERDICT} values`,
  },
  {
    name: 'qp',
    kind: 'string',
    value: 'N',
    help: 'QPs per run (perftest -q; default 1): each gives a QP number and a starting PSN; the peer must be started with the same -q',
  },
  { name: 'rdma_cm', short: 'R', kind: 'flag', help: "connect through the RDMA CM, as perftest -R (the peer's port in the CM's TCP port space)" },
  { name: 'restart-wait', kind: 'string', value: 'SECONDS', help: 'how long to wait for the peer to listen again before each run (default 10)' },
  {
    name: 'live-checks',
    kind: 'flag',
    help: 'after the runs, one more connection on which the peer is sent one frame injected from another source address and one WRITE with a wrong R_Key (only for peers you own: the second tears the connection down)',
  },
  SHARED_OPTIONS.json,
  SHARED_OPTIONS.help,
];

export const AUDIT_USAGE = `usage: roce audit SERVER_IP --dev IFACE [options]

Audits how guessable the names a peer hands out are (ReDMArk, USENIX Security
2021): makes --runs short perftest WRITE runs (64-byte messages) against a peer
that serves them, restarted after each run (e.g. \`while ib_write_bw; do :; done\`
or \`while roce perftest write --dev IFACE; do :; done\`), collects the R_Key,
buffer address, QP numbers and starting PSNs each exchange hands out, and
prints, per kind of value, its step pattern, its distinct low bytes, its
estimated entropy and a verdict (predictable, weak, unpredictable), as
\`roce analyze --audit\` does for a capture. See docs/security.md.

Each run ends within the bounds of perftest's own timers (out-of-band steps
10 s; the QP's retry and RNR timers); a peer that does not come back within
--restart-wait ends the audit with the values collected so far and the reason.

--live-checks (off by default) then makes one more connection and tests the
peer on it: does it accept a WRITE with its QPN and expected PSN from another
source IP and MAC (ReDMArk A1), and does one WRITE with a wrong R_Key move its
QP to the error state (ReDMArk A2; IBTA §9.9.3 class C)? Each ends within the
QP's own retry bound and is reported as measured: accepted, rejected, qp-error
or no-answer.

${formatOptions(AUDIT_OPTIONS)}

Exit status: 0 when every run completed (whatever the verdict), 1 when a run
failed or the peer was lost (the reason is printed), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'audit', server: 'SERVER_IP', dev: '--dev', defaultTimeoutS: 300 };

export async function auditCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'audit', options: AUDIT_OPTIONS, usage: AUDIT_USAGE, operands: 'any' });
  if (args === null) return 0;
  const a = hostTestArgs(args, args.positionals, NAMES);
  if (a.server === undefined) throw new UsageError('audit needs SERVER_IP, the peer to audit');
  const runs = a.num('runs', MIN_VALUES_FOR_VERDICT, 1000) ?? 8;
  const qps = a.num('qp', 1, 16384);
  const rdmaCm = args.flags.has('rdma_cm');
  if (rdmaCm && qps !== undefined && qps > 1) throw new UsageError('--qp more than 1 with -R is not implemented');
  if (rdmaCm && !/^\d{1,3}(\.\d{1,3}){3}$/.test(a.server)) throw new UsageError(`-R needs SERVER_IP as an IPv4 address, not ${JSON.stringify(a.server)}`);
  const restartWaitS = a.num('restart-wait', 1, 3600) ?? 10;
  const liveChecks = args.flags.has('live-checks');
  if (rdmaCm && liveChecks) throw new UsageError('--live-checks with -R is not implemented (the checks run on a connection made over TCP)');
  const server = a.server;
  const progress = (text: string): void => {
    if (!a.json) out.stdout(text);
  };
  return runHostTest(out, ctx, a, NAMES, {
    test: 'audit',
    exchange: rdmaCm ? 'RDMA CM connection' : 'out-of-band exchange',
    run: (device, hooks) =>
      auditPeer(device, {
        server,
        port: a.port,
        runs,
        ...(qps !== undefined ? { qps } : {}),
        rdmaCm,
        restartWaitMs: restartWaitS * 1000,
        beforeConnect: hooks.beforeConnect,
        idleWait: hooks.idleWait,
        liveChecks,
        onRun: (r) =>
          progress(
            `run ${r.run}: R_Key 0x${r.rkey.toString(16).padStart(8, '0')} VA ${r.vaddr} QPN ${r.qpns.map((q) => `0x${q.toString(16)}`).join(',')} PSN ${r.psns.map((p) => `0x${p.toString(16)}`).join(',')}\n`,
          ),
      }),
    summary: (r: PeerAuditResult, host: HostDevice) => ({ ...r, device: host.ifname, driver: host.driver }),
    report: (o: Output, r: PeerAuditResult) => {
      o.stdout(guessReportText(r.report));
      if (r.live !== null) o.stdout(liveChecksText(r.live));
      if (r.stopped !== null) o.stdout(`stopped after ${r.runs.length} run(s): ${r.stopped}\n`);
    },
    errorFields: { ok: false, test: 'audit', server },
  });
}
