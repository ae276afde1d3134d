/**
 * `roce rdma-client`: librdmacm's rdma_client (examples/rdma_client.c) with its options (-s, the
 * server's address; -p, default 7471) and roce-ts's (-d, --driver, --json, --timeout). -s is
 * required here: the tool's default, 127.0.0.1, is no RoCE peer. Without -d the interface is the
 * one that reaches -s. Text output is the tool's: "rdma_client: start", "rdma_client: end 0".
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
import { type RdmaClientConfig, runRdmaClient } from '../apps/rdma-example/rdma-client';

export const RDMA_CLIENT_OPTIONS: readonly OptionSpec[] = [
  { name: 'server', short: 's', kind: 'string', value: 'ADDR', help: "the server's IPv4 address (required)" },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `port of the RDMA CM's TCP port space (default ${RDMA_EXAMPLE_DEFAULT_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one that reaches -s)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "give up when a step makes no progress for this long (default: the CM steps a bound from the CM's timers, the data one from the QP's)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const RDMA_CLIENT_USAGE = `usage: roce rdma-client -s ADDR [options]

Plays librdmacm's rdma_client: an RC connection through the RDMA CM, one
16-byte SEND (inline), the server's 16 bytes back, then the disconnect. The
server may be the real rdma_server.

${formatOptions(RDMA_CLIENT_OPTIONS)}

Exit status: 0 when the exchange was made, 1 when not (the reason, for a
refused connection the CM's reason from the wire, is printed), 2 on a usage
error.`;

const NAMES: HostTestNames = { command: 'rdma-client', server: '-s ADDR', dev: '-d', defaultTimeoutS: 10 };

export async function rdmaClientCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'rdma-client', options: RDMA_CLIENT_OPTIONS, usage: RDMA_CLIENT_USAGE, operands: 'none' });
  if (args === null) return 0;
  const addr = args.values.get('server');
  if (addr === undefined) throw new UsageError("-s ADDR is required (rdma_client's default, 127.0.0.1, is no RoCE peer)");
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
    const found = await routedInterface(out, { driver, json, command: 'rdma-client', failFields: { test: 'rdma_client', role: 'client' } }, () => addr);
    if (found === null) return 1;
    ifname = found;
  }
  const a: HostTestArgs = {
    server: addr,
    role: 'client',
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
  const cfg: RdmaClientConfig = { addr, port, ...(args.values.has('timeout') ? { stepTimeoutMs: timeoutS * 1000 } : {}), ...cmOpt(cmTimingArg(args)) };
  if (!json) cfg.onLine = (line) => out.stdout(`${line}\n`);
  return runHostTest(out, ctx, a, NAMES, {
    test: 'rdma_client',
    exchange: 'connection',
    run: (device, hooks) => runRdmaClient(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait }),
    summary: (r: RdmaExampleResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: () => undefined,
    errorFields: { ok: false, test: 'rdma_client', role: 'client' },
  });
}
