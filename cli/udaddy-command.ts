/**
 * `roce udaddy`: librdmacm's udaddy (rdma-core librdmacm/examples/udaddy.c), either end of it,
 * with udaddy's options (-s server address: be the client; without it, the server; -b bind
 * address, -c connections, -C message count, -S message size, -t type of service, -p / -P port
 * space) and roce-ts's (-d, --port, --driver, --json, --timeout). udaddy's port is fixed at 7174;
 * --port changes it (both ends must agree). Without -d the interface is the one holding -b, else
 * (client) the one that reaches -s, as rdma_resolve_addr() picks the device.
 *
 * Text output is udaddy's lines ("udaddy: starting client", ..., "test complete", "return status
 * N"). The exit status is roce's: 0 when udaddy's return status is 0 and every completion
 * succeeded, 1 otherwise (udaddy itself exits with its return status, e.g. 2 for a SIDR_REP
 * "rejected"; --json carries it as `returnStatus`), 2 on a usage error (udaddy: 1).
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
  UDADDY_DEFAULT_CONNECTIONS,
  UDADDY_DEFAULT_COUNT,
  UDADDY_DEFAULT_PORT,
  UDADDY_DEFAULT_SIZE,
  UDADDY_PORT_SPACE,
  type UdaddyConfig,
  type UdaddyResult,
  runUdaddy,
} from '../apps/udaddy/udaddy';
import { UdaddyError } from '../apps/udaddy/udaddy-error';

export const UDADDY_OPTIONS: readonly OptionSpec[] = [
  { name: 'server', short: 's', kind: 'string', value: 'ADDR', help: 'be the client of the udaddy server at ADDR (IPv4); without -s, be the server' },
  { name: 'bind', short: 'b', kind: 'string', value: 'ADDR', help: 'server: the address to listen on; client: the source address' },
  {
    name: 'connections',
    short: 'c',
    kind: 'string',
    value: 'N',
    help: `connections (client: resolved; server: accepted; default ${UDADDY_DEFAULT_CONNECTIONS})`,
  },
  { name: 'count', short: 'C', kind: 'string', value: 'N', help: `messages each way per connection (default ${UDADDY_DEFAULT_COUNT})` },
  { name: 'size', short: 'S', kind: 'string', value: 'BYTES', help: `message size, at most the active MTU (default ${UDADDY_DEFAULT_SIZE}; 0: no messages)` },
  { name: 'tos', short: 't', kind: 'string', value: 'TOS', help: "client: type of service of the datagrams (the address handle's traffic class)" },
  {
    name: 'port-space',
    short: 'p',
    kind: 'string',
    value: 'PS',
    help: `port space, 0x${UDADDY_PORT_SPACE.toString(16)} (UDP) only: RDMA_PS_IPOIB needs InfiniBand`,
  },
  { name: 'ps', short: 'P', kind: 'string', value: 'NAME', help: 'port space by name: udp (ipoib needs InfiniBand)' },
  { name: 'port', kind: 'string', value: 'PORT', help: `port of the UDP port space (udaddy's is fixed at ${UDADDY_DEFAULT_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one holding -b, else the one that reaches -s)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up a data wait without progress after this long (default 10: UD has no transport timer; the SIDR resolution is bounded by the CM's timers; a server waits up to 300 s for its clients)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const UDADDY_USAGE = `usage: roce udaddy [-s ADDR] [options]

Plays librdmacm's udaddy: UD "connections" of the RDMA CM's UDP port space,
resolved by SIDR (SIDR_REQ / SIDR_REP over QP 1: the server's QPN and Q_Key),
then -C datagrams of -S bytes from the client and as many replies. Either end
may be the real udaddy.

${formatOptions(UDADDY_OPTIONS)}

Exit status: 0 when udaddy's return status is 0 and every completion
succeeded, 1 when not (the reason is printed; --json has udaddy's
returnStatus), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'udaddy', server: '-s ADDR', dev: '-d', defaultTimeoutS: 10 };

const isV4 = (a: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(a);

export async function udaddyCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'udaddy', options: UDADDY_OPTIONS, usage: UDADDY_USAGE, operands: 'none' });
  if (args === null) return 0;
  const dst = args.values.get('server');
  const src = args.values.get('bind');
  for (const [flag, a] of [
    ['-s', dst],
    ['-b', src],
  ] as const) {
    if (a !== undefined && !isV4(a)) throw new UsageError(`${flag} must be an IPv4 address, not ${JSON.stringify(a)}`);
  }
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const ps = num('port-space', 0, 0xffff);
  if (ps !== undefined && ps !== UDADDY_PORT_SPACE)
    throw new UsageError(
      `-p 0x${ps.toString(16)}: only the UDP port space (0x${UDADDY_PORT_SPACE.toString(16)}) works on RoCE (RDMA_PS_IPOIB needs an InfiniBand link)`,
    );
  const psName = args.values.get('ps');
  if (psName !== undefined && !/^udp/i.test(psName)) throw new UsageError(`-P ${psName}: only the udp port space works on RoCE`);
  const port = num('port', 1, 65535) ?? UDADDY_DEFAULT_PORT;
  const connections = num('connections', 1, 1024) ?? UDADDY_DEFAULT_CONNECTIONS;
  const messageCount = num('count', 0, 0x7fffffff) ?? UDADDY_DEFAULT_COUNT;
  const messageSize = num('size', 0, 0x7fffffff) ?? UDADDY_DEFAULT_SIZE;
  const tos = num('tos', 0, 255);
  const timeoutS = num('timeout', 1, 86_400) ?? NAMES.defaultTimeoutS;
  const driver = parseDriver(args.values.get('driver'));
  const json = args.flags.has('json');
  const role = dst === undefined ? 'server' : 'client';
  let ifname = args.values.get('dev');
  if (ifname === undefined) {
    const found = await routedInterface(out, { driver, json, command: 'udaddy', failFields: { test: 'udaddy', role } }, () => {
      const by = src ?? dst;
      if (by === undefined) throw new UsageError('the server listens on every device without -b: give -b ADDR or -d IFACE');
      return by;
    });
    if (found === null) return 1;
    ifname = found;
  }
  const a: HostTestArgs = {
    server: dst,
    role,
    ifname,
    driver,
    mtu: undefined,
    bind: src,
    timeoutS,
    json,
    port,
    capture: captureArgs(args),
    queues: queuesArg(args),
    steer: args.flags.has('steer'),
    num,
  };
  const cfg: UdaddyConfig = {
    role,
    port,
    connections,
    messageCount,
    messageSize,
    ...(args.values.has('timeout') ? { stepTimeoutMs: timeoutS * 1000 } : {}),
    ...cmOpt(cmTimingArg(args)),
    listenTimeoutMs: Math.max(timeoutS, 300) * 1000,
    ...(dst !== undefined ? { dst } : {}),
    ...(src !== undefined ? { src } : {}),
    ...(tos !== undefined ? { tos } : {}),
  };
  // udaddy prints each line as it goes; with --json the lines go into the summary instead.
  if (!json) cfg.onLine = (line) => out.stdout(`${line}\n`);
  // The error object gets udaddy's return status once the run has failed.
  const errorFields: Record<string, unknown> = { ok: false, test: 'udaddy', role };
  return runHostTest(out, ctx, a, NAMES, {
    test: 'udaddy',
    exchange: 'service ID resolution',
    run: async (device, hooks) => {
      try {
        return await runUdaddy(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait, onListening: hooks.onReady });
      } catch (e) {
        if (e instanceof UdaddyError) errorFields['returnStatus'] = e.status;
        throw e;
      }
    },
    summary: (r: UdaddyResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: () => undefined,
    errorFields,
  });
}
