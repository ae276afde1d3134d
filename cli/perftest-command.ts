/**
 * `roce perftest`: ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw,
 * ib_write_lat, ib_read_lat, ib_send_lat and ib_atomic_lat in one command, with perftest's
 * flags, roles (the server runs without an address) and out-of-band exchange,
 * so either end may be the unmodified tool.
 */
import { histogramText } from './histogram-text';
import { type OptionSpec, UsageError, formatOptions } from './args';
import { type CommandContext, parseCommand } from './command';
import { type HostTestNames, CM_OPTIONS, PCAP_OPTIONS, cmTimingArg, TCLASS_OPTIONS, trafficClassArg, SHARED_OPTIONS, hostTestArgs } from './host-run-options';
import { runHostTest } from './host-run';
import type { Output } from './output';
import { PerftestVerb, perftestBinary } from '../apps/oob/perftest-session';
import { CC_OPTIONS } from './cc-args';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { type AtomicType, type PerftestConfig, Connection, Mismatch, defaultMarginS } from '../apps/perftest/config';
import type { PerftestConnectionInfo, PerftestResult } from '../apps/perftest/result';
import type { LatencyStats } from '../apps/perftest/measurement';
import { runPerftest } from '../apps/perftest/run';
import { type HostDevice, HostDeviceError, HostDeviceErrorCode, HostDriverKind } from '../apps/host/host-device';
import { type DeviceName, resolveDeviceName } from '../apps/host/rdma-sysfs';
import { bwFormatFactor } from '../apps/perftest/measurement';
import { bwTableHeader, bwTableRow } from './perftest-bw-table';

export const PERFTEST_OPTIONS: readonly OptionSpec[] = [
  { name: 'lat', kind: 'flag', help: 'latency test (ib_*_lat) instead of bandwidth (ib_*_bw)' },
  {
    name: 'dev',
    short: 'd',
    kind: 'string',
    value: 'NAME',
    help: 'network interface to run RoCE on, or an RDMA device (rxe0, mlx5_0) whose port 1 is on the interface to use (/sys/class/infiniband)',
  },
  { name: 'ib-port', short: 'i', kind: 'string', value: 'PORT', help: "port of the device: 1 (the only port this stack's devices have)" },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  { name: 'size', short: 's', kind: 'string', value: 'BYTES', help: 'message size (default 65536 for bandwidth, 2 for latency, 8 for atomics)' },
  { name: 'iters', short: 'n', kind: 'string', value: 'N', help: 'iterations (default 5000 for write bandwidth, 1000 otherwise; at least 5)' },
  {
    name: 'duration',
    short: 'D',
    kind: 'string',
    value: 'SECONDS',
    help: 'bandwidth tests: run for this long instead of -n iterations (give it to both ends)',
  },
  {
    name: 'margin',
    short: 'f',
    kind: 'string',
    value: 'SECONDS',
    help: 'with -D: measure only from this long after the start to this long before the end (default: a quarter of --duration in whole seconds, rounded down, as perftest)',
  },
  {
    name: 'bidirectional',
    short: 'b',
    kind: 'flag',
    help: 'bandwidth tests: both ends send at once and each reports the sum of both directions, as perftest -b; give it to both ends',
  },
  {
    name: 'all',
    short: 'a',
    kind: 'flag',
    help: 'write and read: run every size from 2 bytes to 8 MiB (2^1..2^23), --iters messages each, as perftest -a; give it to both ends',
  },
  {
    name: 'connection',
    short: 'c',
    kind: 'string',
    value: 'TYPE',
    help: 'RC (default), UC (write and send) or UD (send; the size is cut to the MTU, a UD message being one packet), as perftest -c; give it to both ends',
  },
  {
    name: 'qp',
    short: 'q',
    kind: 'string',
    value: 'N',
    help: 'bandwidth tests: this many QPs, each moving --iters messages (perftest -q; default 1, at most 16384; give it to both ends)',
  },
  { name: 'mtu', short: 'm', kind: 'string', value: 'BYTES', help: 'path MTU: 256, 512, 1024, 2048 or 4096 (default: what the link carries)' },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `TCP port of the out-of-band exchange (default ${PINGPONG_DEFAULT_PORT})` },
  { name: 'gid-index', short: 'x', kind: 'string', value: 'N', help: 'source GID index (default: the first IPv4-mapped GID)' },
  { name: 'tx-depth', short: 't', kind: 'string', value: 'N', help: 'send queue depth (default 128 for bandwidth, 1 for latency)' },
  { name: 'rx-depth', short: 'r', kind: 'string', value: 'N', help: 'receive queue depth for SEND tests (default 512)' },
  { name: 'atomic_type', short: 'A', kind: 'string', value: 'TYPE', help: 'FETCH_AND_ADD (default) or CMP_AND_SWAP' },
  { name: 'qp-timeout', short: 'u', kind: 'string', value: 'N', help: 'QP timeout exponent, 4.096 us x 2^N (default 14)' },
  {
    name: 'mismatch',
    kind: 'string',
    value: 'qpn|psn',
    help: "connect the QP wrong on purpose, to reproduce a failing setup: qpn sends to the peer's QPN + 1, psn starts one PSN past the one announced (RC, not with -R)",
  },
  {
    name: 'report_gbits',
    kind: 'flag',
    help: 'bandwidth in Gb/sec (10^9 bits) instead of MiB/sec (2^20 bytes), in the table and in the report sent to the peer; give it to both ends',
  },
  {
    name: 'CPU-freq',
    short: 'F',
    kind: 'flag',
    help: "do not fail on CPU frequency warnings (accepted for perftest's command lines: this stack times with the monotonic clock, not CPU cycles)",
  },
  { name: 'inline_size', short: 'I', kind: 'string', value: 'SIZE', help: 'write and send: messages up to SIZE bytes are posted inline (0..1024, default 0)' },
  {
    name: 'post_list',
    short: 'l',
    kind: 'string',
    value: 'N',
    help: 'bandwidth tests: post lists of N WRs per post call; the completion moderation becomes N and --iters must be a multiple of N',
  },
  {
    name: 'run_infinitely',
    kind: 'flag',
    help: 'write, read and atomic bandwidth: run until SIGINT or SIGTERM, printing a line for every --duration period (default 5 s); give it to both ends',
  },
  {
    name: 'perform_warm_up',
    kind: 'flag',
    help: 'write, read and atomic bandwidth: requests before the measured loop, not counted, until the rate settles (at most 1 s; perftest posts one tx depth), so a short run reports the steady rate; the peer needs no flag',
  },
  {
    name: 'retry_count',
    kind: 'string',
    value: 'N',
    help: "with -R: the retry count of the test QP's CM REQ, 0..7, which both QPs take as retry_cnt (default 7; as perftest, it applies with -R only)",
  },
  { name: 'dont_xchg_versions', kind: 'flag', help: 'skip the version, system-data and MTU exchanges' },
  {
    name: 'rdma_cm',
    short: 'R',
    kind: 'flag',
    help: "connect the QP through the RDMA CM and exchange over a CM-connected QP instead of TCP (the server's port in the CM's TCP port space; SERVER_IP an IPv4 address)",
  },
  SHARED_OPTIONS.bind,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when the test makes no progress for this long (default: from the QP's timers, local ACK timeout x (retry_cnt + 1) + RNR timer x (rnr_retry + 1) + 2 s; a server waits up to 300 s for its client)",
  },
  { name: 'verify', kind: 'flag', help: 'fill every buffer with a known pattern and check what arrives (both ends roce-ts)' },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...TCLASS_OPTIONS,
  ...CC_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const PERFTEST_USAGE = `usage: roce perftest write|read|send|atomic [--lat] [SERVER_IP] --dev NAME [options]

Runs the perftest benchmark of that verb, as ib_<verb>_bw (or ib_<verb>_lat
with --lat) does: without SERVER_IP it is the server and waits for a client;
with it, the client. Either end may be the real perftest tool. With -R both
ends use the RDMA CM, as perftest's -R: give it to both. Bandwidth tests print
perftest's columns: #bytes, #iterations, BW peak, BW average (MiB/sec, or
Gb/sec with --report_gbits) and MsgRate[Mpps].

${formatOptions(PERFTEST_OPTIONS)}

Exit status: 0 when the test completed (and verified, with --verify), 1 when
not (the reason is printed), 2 on a usage error.`;

const VERBS: readonly string[] = Object.values(PerftestVerb);

const NAMES: HostTestNames = { command: 'perftest', server: 'SERVER_IP', dev: '--dev', defaultTimeoutS: 300 };

/** Where the CLI reads the kernel's RDMA devices (apps/host/rdma-sysfs.ts). */
const SYSFS_ROOT = '/sys';

export async function perftestCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'perftest', options: PERFTEST_OPTIONS, usage: PERFTEST_USAGE, operands: 'any' });
  if (args === null) return 0;
  const [verbText, ...rest] = args.positionals;
  if (verbText === undefined) throw new UsageError('perftest needs a test: write, read, send or atomic');
  if (!VERBS.includes(verbText)) throw new UsageError(`unknown perftest test ${JSON.stringify(verbText)} (tests: ${VERBS.join(', ')})`);
  const verb = verbText as PerftestVerb;
  const lat = args.flags.has('lat');
  const named = hostTestArgs(args, rest, NAMES);
  const { num } = named;
  // parser(), -i: a port number of the device (perftest's DEF_IB_PORT is 1, MIN_IB_PORT 1).
  const ibPort = num('ib-port', 0, 255);
  if (ibPort !== undefined && ibPort !== 1) throw new UsageError(`--ib-port must be 1 (this stack's devices have port 1 only), not ${ibPort}`);
  const atomicText = args.values.get('atomic_type');
  if (atomicText !== undefined && atomicText !== 'FETCH_AND_ADD' && atomicText !== 'CMP_AND_SWAP') {
    throw new UsageError(`--atomic_type must be FETCH_AND_ADD or CMP_AND_SWAP, not ${JSON.stringify(atomicText)}`);
  }
  if (atomicText !== undefined && verb !== PerftestVerb.ATOMIC) throw new UsageError('--atomic_type applies to the atomic test only');
  const size = num('size', 1, 1 << 28);
  const retryCount = num('retry_count', 0, 7);
  if (retryCount !== undefined && !args.flags.has('rdma_cm')) throw new UsageError('--retry_count applies with -R only (as in perftest)');
  if (verb === PerftestVerb.ATOMIC && size !== undefined && size !== 8) throw new UsageError('--size cannot be changed for atomic tests (always 8)');

  const cfg: PerftestConfig = {
    verb,
    lat,
    role: named.role,
    port: named.port,
    // Without --timeout the no-progress bound follows from the QP's timers (apps/host/no-progress-bound.ts);
    // a server still waits up to 300 s for its client to connect.
    connectTimeoutMs: named.server === undefined ? named.timeoutS * 1000 : Math.min(named.timeoutS, 30) * 1000,
    verify: args.flags.has('verify'),
    reportGbits: args.flags.has('report_gbits'),
    performWarmUp: args.flags.has('perform_warm_up'),
    dontXchgVersions: args.flags.has('dont_xchg_versions'),
    rdmaCm: args.flags.has('rdma_cm'),
    ...(retryCount !== undefined ? { retryCount } : {}),
  };
  const set = <K extends keyof PerftestConfig>(k: K, v: PerftestConfig[K] | undefined): void => {
    if (v !== undefined) cfg[k] = v;
  };
  set('server', named.server);
  set('bindHost', named.bind);
  if (args.values.has('timeout')) cfg.runTimeoutMs = named.timeoutS * 1000;
  set('size', size);
  set('iters', num('iters', 5, 1e9));
  const seconds = (name: string, min: number): number | undefined => {
    const v = args.values.get(name);
    if (v === undefined) return undefined;
    const x = Number(v);
    if (v.trim() === '' || !Number.isFinite(x) || x < min || x > 86_400)
      throw new UsageError(`--${name} must be a number of seconds ${min}..86400, not ${JSON.stringify(v)}`);
    return x;
  };
  const duration = seconds('duration', 0.001);
  const margin = seconds('margin', 0);
  if (duration !== undefined && args.flags.has('run_infinitely')) {
    // --run_infinitely: -D is the period of its report lines (checked with the flag below).
  } else if (duration !== undefined) {
    if (lat) throw new UsageError('--duration applies to bandwidth tests (run without --lat)');
    if (args.values.has('iters')) throw new UsageError('--duration and --iters cannot be combined');
    const m = margin ?? defaultMarginS(duration);
    if (2 * m >= duration)
      throw new UsageError(`--margin ${m} leaves nothing to measure of a ${duration}-second run (it must be less than half of --duration)`);
  } else if (margin !== undefined) {
    throw new UsageError('--margin applies with --duration only');
  }
  set('durationS', duration);
  set('marginS', margin);
  set('mtu', named.mtu);
  set('gidIndex', num('gid-index', 0, 255));
  set('trafficClass', trafficClassArg(args));
  set('cm', cmTimingArg(args));
  set('txDepth', num('tx-depth', 1, 32768));
  set('rxDepth', num('rx-depth', 1, 32768));
  set('qpTimeout', num('qp-timeout', 0, 31));
  const mismatch = args.values.get('mismatch');
  if (mismatch !== undefined && mismatch !== Mismatch.QPN && mismatch !== Mismatch.PSN) throw new UsageError(`--mismatch takes qpn or psn, got ${mismatch}`);
  set('mismatch', mismatch);
  const qps = num('qp', 1, 16384);
  if (qps !== undefined && qps > 1 && lat)
    throw new UsageError('--qp more than 1 applies to bandwidth tests (perftest: "Multiple QPs only available on bw tests")');
  if (qps !== undefined && qps > 1 && cfg.rdmaCm === true) throw new UsageError('--qp more than 1 with -R is not implemented');
  set('qps', qps);
  if (args.flags.has('bidirectional')) {
    if (lat) throw new UsageError('--bidirectional applies to bandwidth tests (run without --lat)');
    if (cfg.rdmaCm === true || duration !== undefined || args.flags.has('all'))
      throw new UsageError('--bidirectional with -R, --duration or --all is not implemented');
    cfg.bidirectional = true;
  }
  if (args.flags.has('all')) {
    if (size !== undefined) throw new UsageError('--all and --size cannot be combined');
    if (duration !== undefined)
      throw new UsageError('--all and --duration cannot be combined (perftest: "Duration mode currently doesn\'t support running on all sizes")');
    if (verb !== PerftestVerb.WRITE && verb !== PerftestVerb.READ) throw new UsageError(`--all is implemented for write and read, not ${verb}`);
    cfg.allSizes = true;
  }
  const conn = args.values.get('connection');
  if (conn !== undefined) {
    const c = conn.toUpperCase();
    if (c !== Connection.RC && c !== Connection.UC && c !== Connection.UD)
      throw new UsageError(`--connection must be RC, UC or UD, not ${JSON.stringify(conn)}`);
    if (c === Connection.UC && (verb === PerftestVerb.READ || verb === PerftestVerb.ATOMIC))
      throw new UsageError(`--connection UC is not possible with ${verb} (perftest: "UC connection not possible in READ/ATOMIC verbs")`);
    if (c === Connection.UD && verb !== PerftestVerb.SEND)
      throw new UsageError('--connection UD is only possible with send (perftest: "UD connection only possible in SEND verb")');
    if (c !== Connection.RC && cfg.rdmaCm === true) throw new UsageError(`--connection ${c} with -R is not implemented`);
    cfg.connection = c;
  }
  set('atomicType', atomicText as AtomicType | undefined);

  // -I: perftest_parameters.c, "Max inline" 0..MAX_INLINE (1024); " Inline feature not available on READ/Atomic verbs".
  const inlineSize = num('inline_size', 0, 1024);
  if (inlineSize !== undefined && (verb === PerftestVerb.READ || verb === PerftestVerb.ATOMIC))
    throw new UsageError(`--inline_size applies to write and send, not ${verb} (perftest: "Inline feature not available on READ/Atomic verbs")`);
  set('inlineSize', inlineSize);
  // -l: force_dependecies: "Post list is supported in BW tests only"; "Number of iterations must be a multiple of post list size".
  const postList = num('post_list', 1, 32768);
  if (postList !== undefined && postList > 1) {
    if (lat) throw new UsageError('--post_list applies to bandwidth tests (perftest: "Post list is supported in BW tests only")');
    const iters = cfg.iters ?? (verb === PerftestVerb.WRITE ? 5000 : 1000);
    if (duration === undefined && !args.flags.has('run_infinitely') && iters % postList !== 0)
      throw new UsageError(
        `--iters ${iters} is not a multiple of --post_list ${postList} (perftest: "Number of iterations must be a multiple of post list size")`,
      );
    if (postList > (cfg.txDepth ?? 128))
      throw new UsageError(`--post_list ${postList} is more than the tx depth ${cfg.txDepth ?? 128}: a list must fit the send queue (-t)`);
    if (cfg.bidirectional === true || cfg.rdmaCm === true || cfg.allSizes === true) throw new UsageError('--post_list with -b, -R or -a is not implemented');
  }
  set('postList', postList);
  if (args.flags.has('run_infinitely')) {
    // force_dependecies: " run_infinitely exists only in BW tests for now."
    if (lat) throw new UsageError('--run_infinitely applies to bandwidth tests (perftest: "run_infinitely exists only in BW tests for now")');
    if (verb === PerftestVerb.SEND) throw new UsageError('--run_infinitely is implemented for write, read and atomic, not send');
    if (args.values.has('iters') || cfg.allSizes === true) throw new UsageError('--run_infinitely runs until stopped: it takes no --iters or --all');
    if (args.values.has('margin')) throw new UsageError('--margin does not apply with --run_infinitely (each --duration period is measured whole)');
    if (cfg.verify === true)
      throw new UsageError('--run_infinitely and --verify cannot be combined (perftest: "--data_validation is incompatible with --run_infinitely")');
    if (cfg.bidirectional === true || cfg.rdmaCm === true || cfg.performWarmUp === true)
      throw new UsageError('--run_infinitely with -b, -R or --perform_warm_up is not implemented');
    cfg.runInfinitely = true;
  }

  if (cfg.rdmaCm === true && named.server !== undefined && !/^\d{1,3}(\.\d{1,3}){3}$/.test(named.server))
    throw new UsageError(`-R needs SERVER_IP as an IPv4 address, not ${JSON.stringify(named.server)}`);
  if (cfg.rdmaCm === true && named.bind !== undefined)
    throw new UsageError('--bind applies to the TCP exchange; with -R the server listens through the RDMA CM on --dev');
  // perftest -d names an RDMA device; this stack runs on its port's network interface.
  const device = named.driver === HostDriverKind.MEMORY ? { netdev: named.ifname, rdmaDevice: null } : deviceName(named.ifname);
  const a = { ...named, ifname: device.netdev };
  const test = perftestBinary(verb, lat);
  const gbits = cfg.reportGbits === true;
  const echo: ConfigEcho = {
    rdmaDevice: device.rdmaDevice,
    inlineSize: cfg.inlineSize ?? 0,
    postList: cfg.postList ?? 1,
    reportGbits: gbits,
    runInfinitely: cfg.runInfinitely === true,
    headerShown: false,
  };
  const headerFirst = cfg.runInfinitely === true && named.role === 'client' && !named.json;
  const unhook = cfg.runInfinitely === true && named.role === 'client' ? stopOnSignal(cfg, out, named.json, gbits) : (): void => undefined;
  try {
    return await runHostTest(out, ctx, a, NAMES, {
      test,
      exchange: cfg.rdmaCm === true ? 'RDMA CM connection' : 'out-of-band exchange',
      run: (dev, hooks, host) =>
        runPerftest(dev, {
          ...cfg,
          ...hooks,
          // perftest prints its addresses before the loop; a run until stopped shows them before its period lines.
          ...(headerFirst
            ? {
                onConnected: (c: PerftestConnectionInfo) => {
                  connectionHeader(out, c, host, echo);
                  echo.headerShown = true;
                  void out.flush();
                },
              }
            : {}),
        }),
      summary: (r, host) => jsonSummary(r, host, echo),
      stopsOnSignal: cfg.runInfinitely === true && named.role === 'client',
      report: (o, r, host) => report(o, r, host, echo),
      errorFields: {
        ok: false,
        test,
        role: named.role,
        rdmaCm: cfg.rdmaCm === true,
        msgSize: cfg.size ?? null,
        iterations: cfg.iters ?? null,
        durationS: cfg.durationS ?? null,
      },
    });
  } finally {
    unhook();
  }
}

/** What the report echoes of the command line besides the result: perftest's header lines. */
interface ConfigEcho {
  /** The RDMA device -d named (its port 1's interface is the one used), or null. */
  rdmaDevice: string | null;
  inlineSize: number;
  postList: number;
  reportGbits: boolean;
  runInfinitely: boolean;
  /** Set once the header is out (--run_infinitely prints it before the run's period lines). */
  headerShown: boolean;
}

/** -d NAME: a network interface, or an RDMA device mapped to its port's interface; an unknown name is a usage error. */
function deviceName(name: string): DeviceName {
  try {
    return resolveDeviceName(name, SYSFS_ROOT);
  } catch (e) {
    if (e instanceof HostDeviceError && e.code === HostDeviceErrorCode.NO_INTERFACE) throw new UsageError(`--dev: ${e.message}`);
    throw e;
  }
}

/**
 * --run_infinitely, client: SIGINT and SIGTERM end the run (perftest's handle_sigint sets a flag
 * the loop checks), which then completes what is outstanding, exchanges the final report and
 * exits 0; a second signal acts as it normally would. Each period's line is printed as it comes
 * (text output; with --json only the summary at the end). Returns what removes the handlers.
 */
function stopOnSignal(cfg: PerftestConfig, out: Output, json: boolean, gbits: boolean): () => void {
  let stopped = false;
  cfg.stop = () => stopped;
  let headed = false;
  cfg.onPeriod = (r) => {
    if (json) return;
    if (!headed) {
      out.stdout(`${bwTableHeader(gbits)}\n`);
      headed = true;
    }
    const toGbps = (v: number): number => (v * bwFormatFactor(gbits) * 8) / 1e9;
    out.stdout(`${bwTableRow(Number(r.size), Number(r.iters), null, toGbps(r.bwAvg), r.msgRateAvg, gbits)}\n`);
    // Each line goes out as it comes (the process's output otherwise gathers 64 KiB first).
    void out.flush();
  };
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const handler = (): void => {
    stopped = true;
    for (const s of signals) process.removeListener(s, handler);
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.removeListener(s, handler);
  };
}

function jsonSummary(r: PerftestResult, host: HostDevice, echo: ConfigEcho): Record<string, unknown> {
  const { latencyUs, ...rest } = r;
  return {
    ...rest,
    ...(r.lat ? { latencyUs } : {}),
    device: host.ifname,
    rdmaDevice: echo.rdmaDevice,
    inlineSize: echo.inlineSize,
    postList: echo.postList,
    driver: host.driver,
    virtualTime: host.virtualTime,
  };
}

/** perftest's header: the tool, the device, the QPs and the addresses exchanged, between two lines of dashes. */
function connectionHeader(out: Output, r: PerftestConnectionInfo, host: HostDevice, echo: ConfigEcho): void {
  const line = '-'.repeat(86);
  out.stdout(`${line}\n`);
  out.stdout(`                    ${r.test} (roce-ts), ${r.role}\n`);
  const rdma = echo.rdmaDevice !== null ? ` (${echo.rdmaDevice} port 1)` : '';
  out.stdout(
    ` Device ${host.ifname}${rdma} (${host.driver}${host.virtualTime ? ', simulated time' : ''}), ${r.connection}, ${r.qps} QP${r.qps > 1 ? 's' : ''}, MTU ${r.mtu}, peer perftest ${r.peerVersion}${r.rdmaCm ? ', rdma_cm QPs' : ''}\n`,
  );
  // perftest's header: " Max inline data : %d[B]" and " Post List       : %d" when above 1.
  if (!r.lat && (r.verb === PerftestVerb.WRITE || r.verb === PerftestVerb.SEND)) out.stdout(` Max inline data : ${echo.inlineSize}[B]\n`);
  if (echo.postList > 1) out.stdout(` Post List       : ${echo.postList}\n`);
  out.stdout(
    ` local address:  LID 0000 QPN 0x${hex(r.local.qpn, 6)} PSN 0x${hex(r.local.psn, 6)} RKey 0x${hex(r.local.rkey, 8)} VAddr ${r.local.vaddr} GID ${r.local.gid}\n`,
  );
  for (const p of r.qpPairs.slice(1)) out.stdout(` local address:  LID 0000 QPN 0x${hex(p.local.qpn, 6)} PSN 0x${hex(p.local.psn, 6)}\n`);
  out.stdout(
    ` remote address: LID 0000 QPN 0x${hex(r.remote.qpn, 6)} PSN 0x${hex(r.remote.psn, 6)} RKey 0x${hex(r.remote.rkey, 8)} VAddr ${r.remote.vaddr} GID ${r.remote.gid}\n`,
  );
  for (const p of r.qpPairs.slice(1)) out.stdout(` remote address: LID 0000 QPN 0x${hex(p.remote.qpn, 6)} PSN 0x${hex(p.remote.psn, 6)}\n`);
  out.stdout(`${line}\n`);
}

function report(out: Output, r: PerftestResult, host: HostDevice, echo: ConfigEcho): void {
  const line = '-'.repeat(86);
  // --run_infinitely prints the header when the connection is made, before its period lines.
  if (!echo.headerShown) connectionHeader(out, r, host, echo);
  if (r.lat) {
    const l = r.latencyUs;
    // perftest's latency columns and their order (perftest_parameters.h RESULT_FMT_LAT), so that scripts
    // reading ib_*_lat's table by position read this one: t_typical is the median, the percentiles
    // nearest-rank over every sample (perftest leaves its two largest out); p90 is in --json.
    out.stdout(
      ` #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n`,
    );
    const row = (size: number, x: LatencyStats): void =>
      out.stdout(
        ` ${String(size).padEnd(7)} ${String(r.iterations).padEnd(10)} ${[x.min, x.max, x.typical, x.avg, x.stdev].map((v) => v.toFixed(2).padStart(14)).join(' ')} ${x.p99.toFixed(2).padStart(22)} ${x.p999.toFixed(2).padStart(24)}\n`,
      );
    if (l === null)
      out.stdout(` ${String(r.msgSize).padEnd(6)} ${String(r.iterations).padEnd(13)} (the server of ${r.test} only answers; the client measures)\n`);
    else if (r.sizes.length > 0) for (const s of r.sizes) row(s.msgSize, s.latencyUs ?? l);
    else {
      row(r.msgSize, l);
      out.stdout(`${line}\n`);
      out.stdout(
        histogramText(
          l.histogram,
          r.verb === PerftestVerb.WRITE || r.verb === PerftestVerb.SEND
            ? 'latency histogram (half round trips, as perftest reports them)'
            : 'latency histogram (round trips)',
        ),
      );
    }
  } else {
    if (echo.runInfinitely && r.durationS !== null)
      out.stdout(` Ran until stopped (--run_infinitely), a line every ${r.durationS} s; the figures count every message of the run\n`);
    else if (r.durationS !== null) out.stdout(` Duration mode: ${r.durationS} s; the figures count the messages completed inside the measuring window\n`);
    if (r.warmUp !== null)
      out.stdout(
        ` Warm-up: ${r.warmUp.messages} messages in ${r.warmUp.seconds.toFixed(2)} s before the measured loop, not counted${r.warmUp.settled ? '' : ' (the rate had not settled when it ended)'}\n`,
      );
    else if (shortColdRun(r, host))
      out.stdout(
        ` Note: the measured loop took ${r.seconds.toFixed(2)} s, inside the first second in which the code of both ends is still being compiled; --perform_warm_up reports the steady rate (docs/performance.md, "Short runs")\n`,
      );
    // force_dependecies prints this where it sets noPeak (duration mode, --run_infinitely, above 20000 iterations, a SEND server).
    if (r.peakGbps === null && r.measured !== 'none') out.stdout(` WARNING: BW peak won't be measured in this run.\n`);
    out.stdout(`${bwTableHeader(echo.reportGbits)}${r.measured === 'peer-report' ? '   (as reported by the client)' : ''}\n`);
    for (const s of r.sizes.slice(0, -1)) out.stdout(`${bwTableRow(s.msgSize, s.messages, s.peakGbps, s.gbps, s.mpps, echo.reportGbits)}\n`);
    out.stdout(`${bwTableRow(r.msgSize, r.messages, r.peakGbps, r.gbps, r.mpps, echo.reportGbits)}\n`);
    if (r.bidirectional !== null)
      out.stdout(
        ` bidirectional: the peer's direction ${r.bidirectional.peer.gbps.toFixed(2)} Gb/sec (${r.bidirectional.peer.messages} messages), both ways ${r.bidirectional.gbpsBothWays.toFixed(2)} Gb/sec\n`,
      );
  }
  out.stdout(`${line}\n`);
  if (r.verify.enabled) out.stdout(` verify: ${r.verify.bytesChecked} bytes checked, ${r.verify.mismatches} mismatches\n`);
}

/**
 * A bandwidth client's run of a number of iterations, without a warm-up, whose measured loop was
 * short enough to fall inside the JIT's warm-up (about the first second of real time): its figure
 * is below the steady rate, and the report says so.
 */
function shortColdRun(r: PerftestResult, host: HostDevice): boolean {
  const warmable = r.verb === PerftestVerb.WRITE || r.verb === PerftestVerb.READ || r.verb === PerftestVerb.ATOMIC;
  return (
    warmable &&
    r.role === 'client' &&
    r.durationS === null &&
    r.bidirectional === null &&
    r.sizes.length === 0 &&
    !host.virtualTime &&
    r.seconds > 0 &&
    r.seconds < 1
  );
}

function hex(v: number, digits: number): string {
  return v.toString(16).padStart(digits, '0');
}
