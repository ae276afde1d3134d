/**
 * `roce pingpong`: ibv_rc_pingpong's exchange and traffic, with its flags, so
 * either end may be the unmodified rdma-core tool.
 */
import { VirtualClock } from '../base/clock';
import { type OptionSpec, type ParsedArgs, UsageError, formatOptions } from './args';
import { type CommandContext, parseCommand } from './command';
import { CC_OPTIONS } from './cc-args';
import { type SrqPingpongConfig, type SrqPingpongResult, runSrqPingpong } from '../apps/pingpong/srq-pingpong';
import { type HostTestArgs, type HostTestNames, PCAP_OPTIONS, TCLASS_OPTIONS, trafficClassArg, SHARED_OPTIONS, hostTestArgs } from './host-run-options';
import { runHostTest } from './host-run';
import type { Output } from './output';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { type PingpongConfig, type PingpongResult, type PingpongType, runPingpong } from '../apps/pingpong/pingpong';
import { histogramText } from './histogram-text';
import { warmUpPingpong } from '../apps/host/jit-warm-up';

export const PINGPONG_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'srq',
    kind: 'flag',
    help: 'play ibv_srq_pingpong: --num-qp RC QPs on one shared receive queue of --rx-depth receives, every QP ping-ponging (-n counts over all QPs)',
  },
  { name: 'num-qp', short: 'q', kind: 'string', value: 'N', help: 'with --srq: QPs on the SRQ (default 16, less than 256; give both ends the same)' },
  { name: 'type', kind: 'string', value: 'rc|uc|ud', help: 'transport: rc (ibv_rc_pingpong, default), uc (ibv_uc_pingpong) or ud (ibv_ud_pingpong)' },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `TCP port of the address exchange (default ${PINGPONG_DEFAULT_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface to run RoCE on (rc_pingpong: the RDMA device)' },
  { name: 'gid-idx', short: 'g', kind: 'string', value: 'N', help: 'source GID index (default: the first IPv4-mapped GID; the C tool has none by default)' },
  { name: 'mtu', short: 'm', kind: 'string', value: 'BYTES', help: 'path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)' },
  { name: 'size', short: 's', kind: 'string', value: 'BYTES', help: 'message size (default 4096; ud: 2048, at most the port MTU)' },
  { name: 'iters', short: 'n', kind: 'string', value: 'N', help: 'number of exchanges (default 1000)' },
  { name: 'rx-depth', short: 'r', kind: 'string', value: 'N', help: 'receives to keep posted (default 500)' },
  {
    name: 'warm-up',
    kind: 'string',
    value: 'N',
    help: 'before connecting, N SEND ping-pongs of --size between two in-memory devices in this process, so the optimising compiler has done its work before the measured run (no network; a roce-ts extension; default 0)',
  },
  { name: 'chk', short: 'c', kind: 'flag', help: "validate every received buffer (the client sends a pattern; the tools' -c check holds)" },
  { name: 'events', short: 'e', kind: 'flag', help: 'accepted for compatibility: this side sleeps until frames arrive unless ROCE_BUSY_POLL=1' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  SHARED_OPTIONS.bind,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when the run makes no progress for this long (default: from the QP's timers, about 2.5 s; a server waits up to 300 s for its client)",
  },
  SHARED_OPTIONS.json,
  ...TCLASS_OPTIONS,
  ...CC_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const PINGPONG_USAGE = `usage: roce pingpong [SERVER] --dev IFACE [options]

Plays ibv_rc_pingpong (--type uc: ibv_uc_pingpong, --type ud: ibv_ud_pingpong,
--srq: ibv_srq_pingpong):
without SERVER it waits for a client; with it, it is the client and sends
first. Either end may be the real rdma-core tool.

${formatOptions(PINGPONG_OPTIONS)}

Exit status: 0 when every exchange completed, 1 when not (the reason is
printed), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'pingpong', server: 'SERVER', dev: '-d/--dev', defaultTimeoutS: 10 };

export async function pingpongCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'pingpong', options: PINGPONG_OPTIONS, usage: PINGPONG_USAGE, operands: 'any' });
  if (args === null) return 0;
  // --timeout: RC cannot tell that a peer died while this side only waits for its next receive
  // (rc_pingpong would wait forever): a run that makes no progress for this long ends with an error instead.
  const a = hostTestArgs(args, args.positionals, NAMES);
  const { num, mtu } = a;
  const typeText = args.values.get('type') ?? 'rc';
  if (typeText !== 'rc' && typeText !== 'uc' && typeText !== 'ud') throw new UsageError(`--type must be rc, uc or ud, not ${JSON.stringify(typeText)}`);
  if (typeText === 'ud' && mtu !== undefined) throw new UsageError('--mtu does not apply to ud (a datagram may be as large as the port MTU)');
  const type: PingpongType = typeText;
  if (args.values.has('warm-up') && (args.flags.has('srq') || type !== 'rc')) throw new UsageError('--warm-up goes with RC ping-pong (no --srq, --type rc)');
  if (args.flags.has('srq')) return srqPingpong(out, ctx, args, a, typeText);
  if (args.values.has('num-qp')) throw new UsageError('--num-qp goes with --srq');
  const cfg: PingpongConfig = {
    role: a.role,
    type,
    validate: args.flags.has('chk'),
    port: a.port,
    connectTimeoutMs: a.server === undefined ? Math.max(a.timeoutS, 300) * 1000 : 30_000,
  };
  const set = <K extends keyof PingpongConfig>(k: K, v: PingpongConfig[K] | undefined): void => {
    if (v !== undefined) cfg[k] = v;
  };
  // Without --timeout the no-progress bound follows from the QP's timers (apps/host/no-progress-bound.ts).
  if (args.values.has('timeout')) cfg.runTimeoutMs = a.timeoutS * 1000;
  set('server', a.server);
  set('bindHost', a.bind);
  set('size', num('size', 1, 1 << 28));
  set('iters', num('iters', 1, 1e9));
  set('rxDepth', num('rx-depth', 2, 32768));
  set('mtu', mtu);
  set('gidIndex', num('gid-idx', 0, 255));
  set('trafficClass', trafficClassArg(args));

  const warmUp = num('warm-up', 0, 10_000_000) ?? 0;
  if (warmUp > 0) {
    const w = warmUpPingpong(cfg.size ?? 4096, warmUp);
    out.stderr(`roce pingpong: JIT warm-up: ${w.count} round trips in memory, ${w.ms.toFixed(0)} ms\n`);
  }

  return runHostTest(out, ctx, a, NAMES, {
    test: `${type}_pingpong`,
    exchange: 'address exchange',
    // A real-time device answers the peer's last resends after the run (pingpong.ts lingerAfterLast).
    run: (device, hooks) => runPingpong(device, { ...cfg, ...hooks, lingerAfterLast: !(device.clock instanceof VirtualClock) }),
    summary: (r, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report,
    errorFields: { ok: false, test: `${type}_pingpong`, role: cfg.role },
  });
}

function report(out: Output, r: PingpongResult): void {
  const h = (v: number, d: number): string => v.toString(16).padStart(d, '0');
  out.stdout(`  local address:  LID 0x${h(r.local.lid, 4)}, QPN 0x${h(r.local.qpn, 6)}, PSN 0x${h(r.local.psn, 6)}, GID ${r.local.gid}\n`);
  out.stdout(`  remote address: LID 0x${h(r.remote.lid, 4)}, QPN 0x${h(r.remote.qpn, 6)}, PSN 0x${h(r.remote.psn, 6)}, GID ${r.remote.gid}\n`);
  out.stdout(`${r.bytes} bytes in ${r.seconds.toFixed(2)} seconds = ${r.mbps.toFixed(2)} Mbit/sec\n`);
  out.stdout(`${r.iterations} iters in ${r.seconds.toFixed(2)} seconds = ${r.usecPerIter.toFixed(2)} usec/iter\n`);
  const l = r.latencyUs;
  if (l !== null) {
    out.stdout(
      `round trip [usec]: min ${l.min.toFixed(2)}, p50 ${l.p50.toFixed(2)}, p90 ${l.p90.toFixed(2)}, p99 ${l.p99.toFixed(2)}, p99.9 ${l.p999.toFixed(2)}, max ${l.max.toFixed(2)}\n`,
    );
    out.stdout(histogramText(l.histogram));
  }
  if (r.verify.enabled) out.stdout(`verify: ${r.verify.messagesChecked} messages, ${r.verify.bytesChecked} bytes checked, ${r.verify.mismatches} mismatches\n`);
}

/** --srq: ibv_srq_pingpong. */
function srqPingpong(out: Output, ctx: CommandContext, args: ParsedArgs, a: HostTestArgs, typeText: string): Promise<number> {
  if (typeText !== 'rc' || args.values.has('type')) throw new UsageError('--srq plays ibv_srq_pingpong, which is RC only (no --type)');
  if (args.flags.has('chk')) throw new UsageError('--srq has no -c/--chk (ibv_srq_pingpong checks nothing the stack could compare)');
  const { num } = a;
  const cfg: SrqPingpongConfig = { role: a.role, port: a.port, connectTimeoutMs: a.server === undefined ? Math.max(a.timeoutS, 300) * 1000 : 30_000 };
  const set = <K extends keyof SrqPingpongConfig>(k: K, v: SrqPingpongConfig[K] | undefined): void => {
    if (v !== undefined) cfg[k] = v;
  };
  if (args.values.has('timeout')) cfg.runTimeoutMs = a.timeoutS * 1000;
  set('server', a.server);
  set('bindHost', a.bind);
  set('numQp', num('num-qp', 1, 255));
  set('size', num('size', 1, 1 << 28));
  set('iters', num('iters', 1, 1e9));
  set('rxDepth', num('rx-depth', 1, 32768));
  set('mtu', a.mtu);
  set('gidIndex', num('gid-idx', 0, 255));
  set('trafficClass', trafficClassArg(args));
  return runHostTest(out, ctx, a, NAMES, {
    test: 'srq_pingpong',
    exchange: 'address exchange',
    run: (device, hooks) => runSrqPingpong(device, { ...cfg, ...hooks }),
    summary: (r, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: srqReport,
    errorFields: { ok: false, test: 'srq_pingpong', role: cfg.role },
  });
}

function srqReport(out: Output, r: SrqPingpongResult): void {
  const h = (v: number, d: number): string => v.toString(16).padStart(d, '0');
  for (const q of r.qpPairs) out.stdout(`  local address:  LID 0x0000, QPN 0x${h(q.local.qpn, 6)}, PSN 0x${h(q.local.psn, 6)}, GID ${r.gid.local}\n`);
  for (const q of r.qpPairs) out.stdout(`  remote address: LID 0x0000, QPN 0x${h(q.remote.qpn, 6)}, PSN 0x${h(q.remote.psn, 6)}, GID ${r.gid.remote}\n`);
  out.stdout(`${r.bytes} bytes in ${r.seconds.toFixed(2)} seconds = ${r.mbps.toFixed(2)} Mbit/sec\n`);
  out.stdout(`${r.iterations} iters in ${r.seconds.toFixed(2)} seconds = ${r.usecPerIter.toFixed(2)} usec/iter\n`);
  out.stdout(`  ${r.numQp} QPs, ${r.sends} SENDs and ${r.receives} receives (per QP: ${r.receivesPerQp.join(' ')})\n`);
}
