/**
 * `roce nvmf target` and `roce nvmf host`: NVMe over Fabrics over RDMA (apps/nvmf/). The target
 * serves a RAM namespace of --size bytes on port 4420 to Linux nvme-cli (`nvme discover`, `nvme
 * connect -t rdma`) or to `roce nvmf host`; the host brings up a controller of a target (Linux
 * nvmet-rdma or `roce nvmf target`), writes a pattern, reads it back, compares it and disconnects.
 * Both are live commands: a host interface (or the memory test mode), --pcap, --json, a lost peer
 * ended within a bound from the timers; the target ends cleanly at SIGINT or SIGTERM.
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
import { DEFAULT_SUBNQN, NVMF_PORT, type NvmfTargetConfig, type NvmfTargetResult, runNvmfTarget } from '../apps/nvmf/nvmf-target';
import { type NvmfHostConfig, type NvmfHostResult, runNvmfHost } from '../apps/nvmf/nvmf-host';
import { MAX_NAMESPACE_BYTES } from '../apps/nvmf/ram-namespace';

export const NVMF_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'addr',
    kind: 'string',
    value: 'ADDR',
    help: "target: the IPv4 address it serves (named in the discovery log); host: the target's address",
  },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `RDMA CM port (default ${NVMF_PORT})` },
  { name: 'nqn', kind: 'string', value: 'NQN', help: `the subsystem NQN (default ${DEFAULT_SUBNQN})` },
  { name: 'size', kind: 'string', value: 'BYTES', help: 'target: the RAM namespace, a multiple of 512 with an optional k, M or G (default 64M, at most 1G)' },
  { name: 'io-queues', kind: 'string', value: 'N', help: 'target: I/O queues a host may have, 1..64 (default 4)' },
  { name: 'sessions', kind: 'string', value: 'N', help: 'target: end after N host associations (a discovery counts; default 0: until SIGINT)' },
  { name: 'hostnqn', kind: 'string', value: 'NQN', help: "host: the host's NQN" },
  { name: 'blocks', kind: 'string', value: 'N', help: 'host: 512-byte blocks to write and read back, 1..65536 (default 16)' },
  { name: 'lba', kind: 'string', value: 'LBA', help: 'host: first block (default 0)' },
  { name: 'no-invalidate', kind: 'flag', help: 'host: no Read asks the controller to invalidate its key (SGL sub type 0x0 only)' },
  { name: 'no-inline', kind: 'flag', help: 'host: no data in the capsule, keyed SGLs only' },
  { name: 'kato', kind: 'string', value: 'MS', help: 'host: keep-alive timeout in the Connect, ms (default 5000; 0: none)' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'print each step (host) or association (target) as it happens' },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface (default: the one that reaches --addr)' },
  SHARED_OPTIONS.driver,
  SHARED_OPTIONS.queues,
  SHARED_OPTIONS.steer,
  {
    name: 'timeout',
    kind: 'string',
    value: 'SECONDS',
    help: "host: give up when a step makes no progress for this long (default: CM steps a bound from the CM's timers, commands one from the QP's); target: end when no host comes for this long (default: never)",
  },
  SHARED_OPTIONS.json,
  ...CM_OPTIONS,
  ...PCAP_OPTIONS,
  SHARED_OPTIONS.help,
];

export const NVMF_USAGE = `usage: roce nvmf target --addr ADDR [--size BYTES] [options]
       roce nvmf host --addr ADDR [options]

NVMe over Fabrics over RDMA (RoCE v2, RDMA CM port 4420). The target serves a
RAM namespace to Linux (nvme discover / nvme connect -t rdma) or to roce nvmf
host; the host connects to a target (Linux nvmet-rdma or roce nvmf target),
identifies the namespace, writes a pattern, reads it back, compares, flushes
and disconnects.

${formatOptions(NVMF_OPTIONS)}

Exit status: 0 when the host's data compared equal (the target: every
association ended by its host), 1 when not (the reason is printed), 2 on a
usage error.`;

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, K: 1024, m: 1 << 20, M: 1 << 20, g: 1 << 30, G: 1 << 30 };

function sizeArg(text: string | undefined): number {
  if (text === undefined) return 64 << 20;
  const m = /^(\d+)([kKmMgG]?)$/.exec(text);
  const bytes = m === null ? NaN : Number(m[1]) * SIZE_UNITS[m[2] ?? '']!;
  if (!Number.isSafeInteger(bytes) || bytes < 512 || bytes > MAX_NAMESPACE_BYTES || bytes % 512 !== 0)
    throw new UsageError(`--size must be a multiple of 512 bytes, 512 to 1G, with an optional k, M or G, not ${JSON.stringify(text)}`);
  return bytes;
}

/** SIGINT and SIGTERM end the target's loop (it closes its queues and reports); a second signal acts as it normally would. */
function stopOnSignal(): { stop: () => boolean; unhook: () => void } {
  let stopped = false;
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const handler = (): void => {
    stopped = true;
    for (const s of signals) process.removeListener(s, handler);
  };
  for (const s of signals) process.on(s, handler);
  return {
    stop: () => stopped,
    unhook: () => {
      for (const s of signals) process.removeListener(s, handler);
    },
  };
}

export async function nvmfCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'nvmf', options: NVMF_OPTIONS, usage: NVMF_USAGE, operands: 'any' });
  if (args === null) return 0;
  const [which, ...extra] = args.positionals;
  if (which !== 'target' && which !== 'host') throw new UsageError('give target or host: roce nvmf target|host --addr ADDR');
  if (extra.length > 0) throw new UsageError(`nvmf ${which} takes no further operands, got ${extra.join(' ')}`);
  const target = which === 'target';
  const only = (names: string[], role: string): void => {
    for (const n of names) if (args.values.has(n) || args.flags.has(n)) throw new UsageError(`--${n} is an option of nvmf ${role}`);
  };
  if (target) only(['hostnqn', 'blocks', 'lba', 'no-invalidate', 'no-inline', 'kato'], 'host');
  else only(['size', 'io-queues', 'sessions'], 'target');
  const addr = args.values.get('addr');
  if (addr === undefined) throw new UsageError('--addr ADDR is required');
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(addr)) throw new UsageError(`--addr must be an IPv4 address, not ${JSON.stringify(addr)}`);
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const port = num('port', 1, 65535) ?? NVMF_PORT;
  const timeoutS = num('timeout', 1, 86_400);
  const driver = parseDriver(args.values.get('driver'));
  const json = args.flags.has('json');
  const role = target ? 'server' : 'client';
  const test = target ? 'nvmf-target' : 'nvmf-host';
  let ifname = args.values.get('dev');
  if (ifname === undefined) {
    const found = await routedInterface(out, { driver, json, command: `nvmf ${which}`, failFields: { test } }, () => addr);
    if (found === null) return 1;
    ifname = found;
  }
  const verbose = args.flags.has('verbose');
  const onLine = verbose && !json ? (l: string) => out.stdout(`${l}\n`) : undefined;
  const subnqn = args.values.get('nqn');
  const a: HostTestArgs = {
    server: target ? undefined : addr,
    role,
    ifname,
    driver,
    mtu: undefined,
    bind: undefined,
    timeoutS: timeoutS ?? 10,
    json,
    port,
    capture: captureArgs(args),
    queues: queuesArg(args),
    steer: args.flags.has('steer'),
    num,
  };
  const names: HostTestNames = { command: `nvmf ${which}`, server: '--addr ADDR', dev: '-d', defaultTimeoutS: 10 };
  if (target) {
    const cfg: NvmfTargetConfig = {
      addr,
      port,
      namespaceBytes: sizeArg(args.values.get('size')),
      ...(subnqn !== undefined ? { subnqn } : {}),
      maxIoQueues: num('io-queues', 1, 64) ?? 4,
      sessions: num('sessions', 0, 0x7fffffff) ?? 0,
      ...(timeoutS !== undefined ? { listenTimeoutMs: timeoutS * 1000 } : {}),
      ...(onLine !== undefined ? { onLine } : {}),
    };
    const sig = stopOnSignal();
    try {
      return await runHostTest(out, ctx, a, names, {
        test,
        exchange: 'connection',
        stopsOnSignal: true,
        run: (device, hooks) =>
          runNvmfTarget(device, { ...cfg, stop: sig.stop, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait, onListening: hooks.onListening }),
        summary: (r: NvmfTargetResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
        report: (o, r: NvmfTargetResult) => {
          for (const s of r.associations)
            o.stdout(
              `controller ${s.cntlid} (${s.hostnqn}${s.discovery ? ', discovery' : ''}): ${s.commands} commands, ${s.failedCommands} with an error status, ${s.invalidations} SEND with Invalidate; ended: ${s.ended}\n`,
            );
          for (const j of r.rejected) o.stdout(`refused a REQ for queue ${j.qid}: NVMe-oF RDMA status ${j.status}\n`);
          o.stdout(`nvmf-target: ${r.ended}\n`);
        },
        errorFields: { ok: false, test, role },
      });
    } finally {
      sig.unhook();
    }
  }
  const lbaText = args.values.get('lba');
  if (lbaText !== undefined && !/^\d+$/.test(lbaText)) throw new UsageError(`--lba must be a block number, not ${JSON.stringify(lbaText)}`);
  const hostnqn = args.values.get('hostnqn');
  const cfg: NvmfHostConfig = {
    addr,
    port,
    ...(subnqn !== undefined ? { subnqn } : {}),
    ...(hostnqn !== undefined ? { hostnqn } : {}),
    blocks: num('blocks', 1, 65536) ?? 16,
    slba: BigInt(lbaText ?? '0'),
    invalidate: !args.flags.has('no-invalidate'),
    inCapsule: !args.flags.has('no-inline'),
    kato: num('kato', 0, 0x7fffffff) ?? 5000,
    ...(timeoutS !== undefined ? { stepTimeoutMs: timeoutS * 1000 } : {}),
    ...cmOpt(cmTimingArg(args)),
    ...(onLine !== undefined ? { onLine } : {}),
  };
  return runHostTest(out, ctx, a, names, {
    test,
    exchange: 'connection',
    run: (device, hooks) => runNvmfHost(device, { ...cfg, beforeConnect: hooks.beforeConnect, idleWait: hooks.idleWait }),
    summary: (r: NvmfHostResult, host) => ({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime }),
    report: (o, r: NvmfHostResult) => {
      if (!verbose) for (const l of r.lines) o.stdout(`${l}\n`);
    },
    errorFields: { ok: false, test, role },
  });
}
