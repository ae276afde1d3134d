/**
 * `roce rdma-server`: librdmacm's rdma_server (examples/rdma_server.c) with its options (-s, the
 * address to listen on, default 0.0.0.0; -p, default 7471) and roce-ts's (-d, --driver, --json,
 * --timeout). Without -d the interface is the one holding -s. Text output is the tool's:
 * "rdma_server: start", "rdma_server: end 0".
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
import { RDMA_EXAMPLE_DEFAULT_PORT, type RdmaExampleResult } from '../apps/rdma-example/endpoint';
import { type RdmaServerConfig, runRdmaServer } from '../apps/rdma-example/rdma-server';

export const RDMA_SERVER_OPTIONS: readonly OptionSpec[] = [
  { name: 'server', short: 's', kind: 'string', value: 'ADDR', help: 'the IPv4 address to listen on (default 0.0.0.0: any, then -d is needed)' },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `port of the RDMA CM's TCP port space (default ${RDMA_EXAMPLE_DEFAULT_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one holding -s)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when a step makes no progress for this long (default: the CM steps a bound from the CM's timers, the data one from the QP's; the wait for the client is at least 300 s)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const RDMA_SERVER_USAGE = `usage: roce rdma-server [-s ADDR] [options]

Plays librdmacm's rdma_server: accepts one RC connection through the RDMA CM,
receives the client's 16-byte SEND, answers with 16 bytes (inline), then
disconnects. The client may be the real rdma_client.

${formatOptions(RDMA_SERVER_OPTIONS)}

Exit status: 0 when the exchange was made, 1 when not (the reason is
printed), 2 on a usage error.`;

const NAMES: HostTestNames = { command: 'rdma-server', server: '-s ADDR', dev: '-d', defaultTimeoutS: 10 };

export async function rdmaServerCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'rdma-server', options: RDMA_SERVER_OPTIONS, usage: RDMA_SERVER_USAGE, operands: 'none' });
  if (args === null) return 0;
  const addr = args.values.get('server') ?? '0.0.0.0';
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(addr)) throw new UsageError(`-s must be an IPv4 address, not ${JSON.stringify(addr)}`);
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const port = num('port', 1, 65535) ?? RDMA_EXAMPLE_DEFAULT_PORT;
  const timeoutS = num('timeout', 1, 86_400) ?? NAMES.defaultTimeoutS;
  const driver = parseDriver(args.values.get('driver'));
  const json = args.flags.has('json');
  let ifname = args.values.get('dev');
  if (ifname === undefined) {
    const found = await routedInterface(out, { driver, json, command: 'rdma-server', failFields: { test: 'rdma_server', role: 'server' } }, () => {
      if (addr === '0.0.0.0') throw new UsageError('-s 0.0.0.0 (the default) listens on every device: give -d IFACE');
      return addr;
    });
    if (found === null) return 1;
    ifname = found;
  }
  const a: HostTestArgs = {
    server: undefined,
    role: 'server',
    ifname,
    driver,
    mtu: undefined,
    bind: addr,
    timeoutS,
    json,
    port,
    capture: captureArgs(args),
    queues: queuesArg(args),
    steer: args.flags.has('steer'),
    num,
  };
  const cfg: RdmaServerConfig = {
    addr,
    port,
    ...(args.values.has('timeout') ? { stepTimeoutMs: timeoutS * 1000 } : {}),
    ...cmOpt(cmTimingArg(args)),
    listenTimeoutMs: Math.max(timeoutS, 300) * 1000,
  };
  if (!json) cfg.onLine = (line) => out.stdout(`${line}\n`);
  return runHostTest(out, ctx, a, NAMES, {
    test: 'rdma_server',
    exchange: 'connection',
    run: (device, hooks) => runRdmaServer(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait, onListening: hooks.onReady }),
    summary: (r: RdmaExampleResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: () => undefined,
    errorFields: { ok: false, test: 'rdma_server', role: 'server' },
  });
}
