/**
 * `roce cmatose`: librdmacm's ucmatose (examples/cmatose.c), either end, with its options: -s
 * (the server's address: the client role), -b (the server's bind address), -c, -C, -S, -p, -t;
 * and roce-ts's (-d, --driver, --json, --timeout). As with ucmatose, no -s means the server.
 * Without -d the interface is the one that reaches -s (or holds -b). Text output is ucmatose's
 * progress lines ("cmatose: starting client", ..., "return status 0").
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
import {
  CMATOSE_DEFAULT_CONNECTIONS,
  CMATOSE_DEFAULT_COUNT,
  CMATOSE_DEFAULT_PORT,
  CMATOSE_DEFAULT_SIZE,
  type CmatoseConfig,
  type CmatoseResult,
  runCmatose,
} from '../apps/cmatose/cmatose';

export const CMATOSE_OPTIONS: readonly OptionSpec[] = [
  { name: 'server', short: 's', kind: 'string', value: 'ADDR', help: "the server's IPv4 address: run as the client (without it: the server)" },
  { name: 'bind', short: 'b', kind: 'string', value: 'ADDR', help: 'server: the address to accept connections on (default any, then -d is needed)' },
  { name: 'connections', short: 'c', kind: 'string', value: 'N', help: `number of connections (default ${CMATOSE_DEFAULT_CONNECTIONS})` },
  { name: 'count', short: 'C', kind: 'string', value: 'N', help: `messages each way per connection (default ${CMATOSE_DEFAULT_COUNT})` },
  { name: 'size', short: 'S', kind: 'string', value: 'BYTES', help: `message size (default ${CMATOSE_DEFAULT_SIZE}; 0: no messages)` },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `port of the RDMA CM's TCP port space (default ${CMATOSE_DEFAULT_PORT})` },
  { name: 'tos', short: 't', kind: 'string', value: 'TOS', help: "client: type of service (the path's traffic class)" },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one that reaches -s, or holds -b)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when a step makes no progress for this long (default: the CM steps a bound from the CM's timers, the data one from the QPs'; a server waits up to 300 s for its clients)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const CMATOSE_USAGE = `usage: roce cmatose [-s ADDR | -b ADDR] [options]

Plays librdmacm's ucmatose: -c RC connections through the RDMA CM, -C SENDs
of -S bytes from the server on each, as many back from the client, then the
server disconnects them all. Either end may be the real ucmatose.

${formatOptions(CMATOSE_OPTIONS)}

Exit status: 0 when every connection was made, carried its messages and was
disconnected, 1 when not (the reason, for a refused connection the CM's reason
from the wire, is printed), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'cmatose', server: '-s ADDR', dev: '-d', defaultTimeoutS: 10 };
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

export async function cmatoseCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'cmatose', options: CMATOSE_OPTIONS, usage: CMATOSE_USAGE, operands: 'none' });
  if (args === null) return 0;
  const server = args.values.get('server');
  const bind = args.values.get('bind');
  const role = server === undefined ? 'server' : 'client';
  if (server !== undefined && bind !== undefined) throw new UsageError('-b applies to the server (run without -s)');
  for (const [flag, v] of [
    ['-s', server],
    ['-b', bind],
  ] as const) {
    if (v !== undefined && !IPV4.test(v)) throw new UsageError(`${flag} must be an IPv4 address, not ${JSON.stringify(v)}`);
  }
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const port = num('port', 1, 65535) ?? CMATOSE_DEFAULT_PORT;
  const connections = num('connections', 1, 1024) ?? CMATOSE_DEFAULT_CONNECTIONS;
  const messageCount = num('count', 0, 1_000_000) ?? CMATOSE_DEFAULT_COUNT;
  const messageSize = num('size', 0, 1 << 24) ?? CMATOSE_DEFAULT_SIZE;
  const tos = num('tos', 0, 255);
  if (tos !== undefined && role === 'server') throw new UsageError('-t applies to the client (the server takes the path of each request)');
  const timeoutS = num('timeout', 1, 86_400) ?? NAMES.defaultTimeoutS;
  const driver = parseDriver(args.values.get('driver'));
  const json = args.flags.has('json');
  let ifname = args.values.get('dev');
  if (ifname === undefined) {
    const found = await routedInterface(out, { driver, json, command: 'cmatose', failFields: { test: 'cmatose', role } }, () => {
      const addr = server ?? bind;
      if (addr === undefined || addr === '0.0.0.0') throw new UsageError('a server without -b accepts on every device: give -d IFACE');
      return addr;
    });
    if (found === null) return 1;
    ifname = found;
  }
  const a: HostTestArgs = {
    server,
    role,
    ifname,
    driver,
    mtu: undefined,
    bind,
    timeoutS,
    json,
    port,
    capture: captureArgs(args),
    queues: queuesArg(args),
    steer: args.flags.has('steer'),
    num,
  };
  const cfg: CmatoseConfig = {
    role,
    port,
    connections,
    messageCount,
    messageSize,
    ...(args.values.has('timeout') ? { stepTimeoutMs: timeoutS * 1000 } : {}),
    ...cmOpt(cmTimingArg(args)),
    listenTimeoutMs: Math.max(timeoutS, 300) * 1000,
  };
  const addr = server ?? bind;
  if (addr !== undefined) cfg.addr = addr;
  if (tos !== undefined) cfg.tos = tos;
  // ucmatose's lines as they happen; with --json they go into the summary instead.
  if (!json) cfg.onLine = (line) => out.stdout(`${line}\n`);
  return runHostTest(out, ctx, a, NAMES, {
    test: 'cmatose',
    exchange: 'connection',
    run: (device, hooks) => runCmatose(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait, onListening: hooks.onReady }),
    summary: (r: CmatoseResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: () => undefined,
    errorFields: { ok: false, test: 'cmatose', role },
  });
}
