/**
 * `roce pingpong`: ibv_rc_pingpong's exchange and traffic, with its flags, so
 * either end may be the unmodified rdma-core tool.
 */
import { type OptionSpec, UsageError, formatOptions, intValue, parseArgs } from './args';
import type { Output } from './output';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { type PingpongConfig, type PingpongResult, type PingpongType, runPingpong } from '../apps/pingpong/pingpong';
import { type HostDevice, HOST_DRIVERS, openHostDevice } from '../apps/host/host-device';
import { OobError } from '../apps/oob/tcp-channel';
import { failureOf } from './failure';
import { type PerftestDeps, parseDriver, parseServerAddress } from './perftest-command';

export const PINGPONG_OPTIONS: readonly OptionSpec[] = [
  { name: 'type', kind: 'string', value: 'rc|uc|ud', help: 'transport: rc (ibv_rc_pingpong, default), uc (ibv_uc_pingpong) or ud (ibv_ud_pingpong)' },
  { name: 'port', short: 'p', kind: 'string', value: 'PORT', help: `TCP port of the address exchange (default ${PINGPONG_DEFAULT_PORT})` },
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'network interface to run RoCE on (rc_pingpong: the RDMA device)' },
  { name: 'gid-idx', short: 'g', kind: 'string', value: 'N', help: 'source GID index (default: the first IPv4-mapped GID; the C tool has none by default)' },
  { name: 'mtu', short: 'm', kind: 'string', value: 'BYTES', help: 'path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)' },
  { name: 'size', short: 's', kind: 'string', value: 'BYTES', help: 'message size (default 4096; ud: 2048, at most the port MTU)' },
  { name: 'iters', short: 'n', kind: 'string', value: 'N', help: 'number of exchanges (default 1000)' },
  { name: 'rx-depth', short: 'r', kind: 'string', value: 'N', help: 'receives to keep posted (default 500)' },
  { name: 'chk', short: 'c', kind: 'flag', help: 'validate every received buffer (the client sends a pattern; the tools\' -c check holds)' },
  { name: 'events', short: 'e', kind: 'flag', help: 'accepted for compatibility: this side sleeps until frames arrive unless ROCE_BUSY_POLL=1' },
  { name: 'driver', kind: 'string', value: 'KIND', help: `frame driver: ${HOST_DRIVERS.join(' or ')} (default xdp)` },
  { name: 'bind', kind: 'string', value: 'ADDR', help: 'server: local address to listen on (default all)' },
  { name: 'timeout', kind: 'string', value: 'SECONDS', help: 'give up when no completion arrives for this long during the run (default 10; a server waits up to 300 s for its client)' },
  { name: 'json', kind: 'flag', help: 'print one JSON summary object' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const PINGPONG_USAGE = `usage: roce pingpong [SERVER] --dev IFACE [options]

Plays ibv_rc_pingpong (--type uc: ibv_uc_pingpong, --type ud: ibv_ud_pingpong):
without SERVER it waits for a client; with it, it is the client and sends
first. Either end may be the real rdma-core tool.

${formatOptions(PINGPONG_OPTIONS)}

Exit status: 0 when every exchange completed, 1 when not (the reason is
printed), 2 on a usage error.`;

export async function pingpongCommand(argv: readonly string[], out: Output, deps: PerftestDeps = { openDevice: openHostDevice }): Promise<number> {
  const args = parseArgs(argv, PINGPONG_OPTIONS);
  if (args.flags.has('help')) {
    out.stdout(`${PINGPONG_USAGE}\n`);
    return 0;
  }
  if (args.positionals.length > 1) throw new UsageError(`pingpong takes at most one SERVER, got ${args.positionals.join(' ')}`);
  const first = args.positionals[0];
  const server = first === undefined ? undefined : parseServerAddress(first);
  const ifname = args.values.get('dev');
  if (ifname === undefined) throw new UsageError('-d/--dev IFACE is required (the interface to run RoCE on)');
  const driver = parseDriver(args.values.get('driver'));
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const mtu = num('mtu', 256, 4096);
  if (mtu !== undefined && ![256, 512, 1024, 2048, 4096].includes(mtu)) throw new UsageError(`--mtu must be 256, 512, 1024, 2048 or 4096, not ${mtu}`);
  const bind = args.values.get('bind');
  if (bind !== undefined && server !== undefined) throw new UsageError('--bind applies to the server (run without SERVER)');
  // RC cannot tell that a peer died while this side only waits for its next receive (rc_pingpong
  // would wait forever): a run that makes no progress for this long ends with an error instead.
  const timeoutS = num('timeout', 1, 86_400) ?? 10;
  const json = args.flags.has('json');
  const typeText = args.values.get('type') ?? 'rc';
  if (typeText !== 'rc' && typeText !== 'uc' && typeText !== 'ud') throw new UsageError(`--type must be rc, uc or ud, not ${JSON.stringify(typeText)}`);
  if (typeText === 'ud' && mtu !== undefined) throw new UsageError('--mtu does not apply to ud (a datagram may be as large as the port MTU)');
  const type: PingpongType = typeText;
  const cfg: PingpongConfig = {
    role: server === undefined ? 'server' : 'client',
    type,
    validate: args.flags.has('chk'),
    port: num('port', 1, 65535) ?? PINGPONG_DEFAULT_PORT,
    runTimeoutMs: timeoutS * 1000,
    connectTimeoutMs: server === undefined ? Math.max(timeoutS, 300) * 1000 : 30_000,
  };
  const set = <K extends keyof PingpongConfig>(k: K, v: PingpongConfig[K] | undefined): void => {
    if (v !== undefined) cfg[k] = v;
  };
  set('server', server);
  set('bindHost', bind);
  set('size', num('size', 1, 1 << 28));
  set('iters', num('iters', 1, 1e9));
  set('rxDepth', num('rx-depth', 2, 32768));
  set('mtu', mtu);
  set('gidIndex', num('gid-idx', 0, 255));

  let host: HostDevice | null = null;
  try {
    host = await deps.openDevice(ifname, driver);
    const h = host;
    cfg.beforeConnect = (gid) => h.ensureNeighbor(gid);
    if (!json && cfg.role === 'server') cfg.onListening = (port) => out.stdout(`${type}_pingpong: waiting for a client on port ${port}\n`);
    const r = await runPingpong(host.device, cfg);
    if (!host.virtualTime) await new Promise((res) => setTimeout(res, 100));
    if (json) out.stdout(`${JSON.stringify({ ...r, device: host.ifname, driver: host.driver, virtualTime: host.virtualTime })}\n`);
    else report(out, r);
    if (!r.ok) {
      out.stderr(`roce pingpong: FAILED: ${r.problems[0] ?? 'verification failed'}\n`);
      return 1;
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    const failure = failureOf(e);
    if (json) out.stdout(`${JSON.stringify({ ok: false, test: `${type}_pingpong`, role: cfg.role, ...failure })}\n`);
    out.stderr(`roce pingpong: ${e instanceof OobError ? 'address exchange failed: ' : ''}${failure.error}\n`);
    return 1;
  } finally {
    host?.close();
  }
}

function report(out: Output, r: PingpongResult): void {
  const h = (v: number, d: number): string => v.toString(16).padStart(d, '0');
  out.stdout(`  local address:  LID 0x${h(r.local.lid, 4)}, QPN 0x${h(r.local.qpn, 6)}, PSN 0x${h(r.local.psn, 6)}, GID ${r.local.gid}\n`);
  out.stdout(`  remote address: LID 0x${h(r.remote.lid, 4)}, QPN 0x${h(r.remote.qpn, 6)}, PSN 0x${h(r.remote.psn, 6)}, GID ${r.remote.gid}\n`);
  out.stdout(`${r.bytes} bytes in ${r.seconds.toFixed(2)} seconds = ${r.mbps.toFixed(2)} Mbit/sec\n`);
  out.stdout(`${r.iterations} iters in ${r.seconds.toFixed(2)} seconds = ${r.usecPerIter.toFixed(2)} usec/iter\n`);
  const l = r.latencyUs;
  if (l !== null) out.stdout(`round trip [usec]: min ${l.min.toFixed(2)}, p50 ${l.p50.toFixed(2)}, p99 ${l.p99.toFixed(2)}, max ${l.max.toFixed(2)}\n`);
  if (r.verify.enabled) out.stdout(`verify: ${r.verify.messagesChecked} messages, ${r.verify.bytesChecked} bytes checked, ${r.verify.mismatches} mismatches\n`);
}
