/**
 * `roce rping`: librdmacm's rping (examples/rping.c), either end of it, with rping's options
 * (-s/-c, -a, -p, -C, -S, -v, -V, -d) and roce-ts's (--driver, --json, --timeout). Without -d the
 * interface is the one that reaches -a (the one holding it, for a server's bind address), as
 * rdma_resolve_addr() picks the device. Text output is rping's: with -v one "ping data: …" line
 * per ping ("server ping data: …" on the server), nothing else on success.
 */
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import type { Output } from './output';
import { type CommandContext, parseCommand } from './command';
import {
  type HostTestArgs,
  type HostTestNames,
  CM_OPTIONS,
  PCAP_OPTIONS,
  cmOpt,
  cmTimingArg,
  captureArgs,
  queuesArg,
  SHARED_OPTIONS,
  parseDriver,
} from './host-run-options';
import { runHostTest, routedInterface } from './host-run';
import { RPING_DEFAULT_PORT, RPING_DEFAULT_SIZE, type RpingConfig, type RpingResult, runRping } from '../apps/rping/rping';
import { RPING_MAX_BUFSIZE, RPING_MIN_BUFSIZE } from '../apps/rping/ping-data';

export const RPING_OPTIONS: readonly OptionSpec[] = [
  { name: 'server', short: 's', kind: 'flag', help: 'server: wait for a client and serve it until it disconnects' },
  { name: 'client', short: 'c', kind: 'flag', help: 'client: connect to the server at -a' },
  {
    name: 'addr',
    short: 'a',
    kind: 'string',
    value: 'ADDR',
    help: "client: the server's IPv4 address; server: the address to listen on (0.0.0.0: any, then -d is needed)",
  },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `port of the RDMA CM's TCP port space (default ${RPING_DEFAULT_PORT})` },
  { name: 'count', short: 'C', kind: 'string', value: 'N', help: 'client: number of pings (default 0: until interrupted)' },
  {
    name: 'size',
    short: 'S',
    kind: 'string',
    value: 'BYTES',
    help: `ping data size, ${RPING_MIN_BUFSIZE}..${RPING_MAX_BUFSIZE} (default ${RPING_DEFAULT_SIZE})`,
  },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'print the ping data' },
  { name: 'validate', short: 'V', kind: 'flag', help: 'client: check the data the server wrote back' },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one that reaches -a)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when a step makes no progress for this long (default: the CM steps a bound from the CM's timers, the pings one from the QP's; a server waits up to 300 s for its client)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const RPING_USAGE = `usage: roce rping -s|-c -a ADDR [options]

Plays librdmacm's rping: an RC connection through the RDMA CM, then per ping
the client advertises its buffer, the server RDMA READs it and RDMA WRITEs it
back. Either end may be the real rping.

${formatOptions(RPING_OPTIONS)}

Exit status: 0 when every ping completed (and -V found the data equal), 1 when
not (the reason, for a refused connection the CM's reason from the wire, is
printed), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'rping', server: '-a ADDR', dev: '-d', defaultTimeoutS: 10 };

export async function rpingCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'rping', options: RPING_OPTIONS, usage: RPING_USAGE, operands: 'none' });
  if (args === null) return 0;
  const server = args.flags.has('server');
  if (server === args.flags.has('client')) throw new UsageError('give one of -s (server) and -c (client)');
  const addr = args.values.get('addr');
  if (addr === undefined) throw new UsageError('-a ADDR is required');
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(addr)) throw new UsageError(`-a must be an IPv4 address, not ${JSON.stringify(addr)}`);
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const port = num('port', 1, 65535) ?? RPING_DEFAULT_PORT;
  const count = num('count', 0, 0x7fffffff) ?? 0;
  const size = num('size', RPING_MIN_BUFSIZE, RPING_MAX_BUFSIZE) ?? RPING_DEFAULT_SIZE;
  const timeoutS = num('timeout', 1, 86_400) ?? NAMES.defaultTimeoutS;
  const driver = parseDriver(args.values.get('driver'));
  const json = args.flags.has('json');
  const role = server ? 'server' : 'client';
  let ifname = args.values.get('dev');
  if (ifname === undefined) {
    const found = await routedInterface(out, { driver, json, command: 'rping', failFields: { test: 'rping', role } }, () => {
      if (addr === '0.0.0.0') throw new UsageError('-a 0.0.0.0 listens on every device: give -d IFACE');
      return addr;
    });
    if (found === null) return 1;
    ifname = found;
  }
  const verbose = args.flags.has('verbose');
  const a: HostTestArgs = {
    server: server ? undefined : addr,
    role,
    ifname,
    driver,
    mtu: undefined,
    bind: undefined,
    timeoutS,
    json,
    port,
    capture: captureArgs(args),
    queues: queuesArg(args),
    steer: args.flags.has('steer'),
    num,
  };
  const cfg: RpingConfig = {
    role,
    addr,
    port,
    count,
    size,
    validate: args.flags.has('validate'),
    // Without --timeout, the data phase's no-progress bound follows from the QP's timers (apps/rping/rping.ts).
    ...(args.values.has('timeout') ? { stepTimeoutMs: timeoutS * 1000 } : {}),
    ...cmOpt(cmTimingArg(args)),
    listenTimeoutMs: Math.max(timeoutS, 300) * 1000,
  };
  // -v: rping prints each line as the ping completes; with --json they go into the summary instead.
  if (verbose) cfg.onPingData = json ? () => undefined : (line) => out.stdout(`${line}\n`);
  return runHostTest(out, ctx, a, NAMES, {
    test: 'rping',
    exchange: 'connection',
    run: (device, hooks) => runRping(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait, onListening: hooks.onReady }),
    summary: (r: RpingResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: () => undefined,
    errorFields: { ok: false, test: 'rping', role },
  });
}
