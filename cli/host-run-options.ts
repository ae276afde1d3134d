/**
 * The options `roce perftest`, `roce pingpong` and the other tools that run against a peer from a
 * host interface share (SERVER, --dev, --driver, --mtu, --bind, --timeout, --json, --port, the
 * capture, CM timing, traffic class and queue options), checked into what a run takes
 * (cli/host-run.ts).
 */
import { congestionArgs } from './cc-args';
import type { CongestionConfig } from '../stack/congestion/parameters';
import { type OptionSpec, type ParsedArgs, UsageError, intValue } from './args';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { HOST_DRIVERS, HostDriverKind } from '../apps/host/host-device';
import type { CmTiming } from '../apps/host/cm-step-bound';
import { DEFAULT_CAPTURE_MAX_BYTES, type LiveCaptureOptions, MAX_CAPTURE_RING, MAX_SNAP_LEN, MIN_SNAP_LEN } from '../nic-driver/live-capture';

/** The options both commands list with the same words (each keeps its own order, and its own wording of the others). */
export const SHARED_OPTIONS = {
  driver: { name: 'driver', kind: 'string', value: 'KIND', help: `frame driver: ${HOST_DRIVERS.join(' or ')} (default xdp)` },
  bind: { name: 'bind', kind: 'string', value: 'ADDR', help: 'server: local address to listen on (default all)' },
  json: { name: 'json', kind: 'flag', help: 'print one JSON summary object' },
  queues: {
    name: 'queues',
    kind: 'string',
    value: 'LIST',
    help: 'AF_XDP: the receive queues to serve, e.g. 0 or 0,2-3 (default: every active queue, as RSS may use any)',
  },
  steer: {
    name: 'steer',
    kind: 'flag',
    help: 'AF_XDP: steer RoCE (UDP 4791, IPv4 and IPv6) to queue 0 (or the first of --queues) with ntuple rules (ethtool -N, root), serve only that queue, and remove the rules at the end',
  },
  help: { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
} as const satisfies Record<string, OptionSpec>;

/** The live-capture options every command on a real link takes (`...PCAP_OPTIONS` in its list). */
export const PCAP_OPTIONS: readonly OptionSpec[] = [
  { name: 'pcap', kind: 'string', value: 'FILE', help: 'record every frame sent and received (real-clock ns timestamps) to a pcap file' },
  { name: 'pcap-count', kind: 'string', value: 'N', help: `--pcap keeps only the last N frames (a ring written at exit; 1..${MAX_CAPTURE_RING})` },
  {
    name: 'pcap-size',
    kind: 'string',
    value: 'BYTES',
    help: `--pcap file grows to at most BYTES (suffix k, M or G: binary units; default ${DEFAULT_CAPTURE_MAX_BYTES >> 30}G), later frames are dropped`,
  },
  {
    name: 'pcap-snap',
    kind: 'string',
    value: 'BYTES',
    help: `--pcap keeps the first BYTES of each frame (${MIN_SNAP_LEN}..${MAX_SNAP_LEN}; 128 holds every RoCE header; default whole frames)`,
  },
];

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, K: 1024, m: 1 << 20, M: 1 << 20, g: 1 << 30, G: 1 << 30 };

/** --pcap, --pcap-count and --pcap-size, checked: the capture to record, or null. */
export function captureArgs(args: ParsedArgs): LiveCaptureOptions | null {
  const path = args.values.get('pcap');
  const countText = args.values.get('pcap-count');
  const sizeText = args.values.get('pcap-size');
  const snapText = args.values.get('pcap-snap');
  if (path === undefined) {
    const stray = countText !== undefined ? 'pcap-count' : sizeText !== undefined ? 'pcap-size' : snapText !== undefined ? 'pcap-snap' : null;
    if (stray !== null) throw new UsageError(`--${stray} needs --pcap FILE`);
    return null;
  }
  if (path === '') throw new UsageError('--pcap needs a file name');
  const opts: LiveCaptureOptions = { path };
  if (countText !== undefined) opts.maxFrames = intValue(countText, 'pcap-count', 1, MAX_CAPTURE_RING);
  if (sizeText !== undefined) {
    const m = /^(\d+)([kKmMgG]?)$/.exec(sizeText);
    const bytes = m === null ? NaN : Number(m[1]) * SIZE_UNITS[m[2] ?? '']!;
    if (!Number.isSafeInteger(bytes) || bytes < 24)
      throw new UsageError(`--pcap-size must be a byte count of at least 24 (the file header), with an optional k, M or G, not ${JSON.stringify(sizeText)}`);
    opts.maxBytes = bytes;
  }
  if (snapText !== undefined) opts.snapLen = intValue(snapText, 'pcap-snap', MIN_SNAP_LEN, MAX_SNAP_LEN);
  return opts;
}

/** The RDMA CM timing options of the CM tools (librdmacm's defaults; smaller values make a dead peer show sooner). */
export const CM_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'cm-timeout',
    kind: 'string',
    value: 'CODE',
    help: "CM response timeout, 4.096 us x 2^CODE, 0..31 (default 20, librdmacm's): with the retries it bounds each connection and disconnect step",
  },
  { name: 'cm-retries', kind: 'string', value: 'N', help: "max CM retries of a REQ, REP, DREQ or SIDR_REQ, 0..15 (default 15, librdmacm's)" },
];

/** --cm-timeout and --cm-retries, checked (undefined when neither is given). */
export function cmTimingArg(args: ParsedArgs): CmTiming | undefined {
  const t = args.values.get('cm-timeout');
  const r = args.values.get('cm-retries');
  if (t === undefined && r === undefined) return undefined;
  return {
    ...(t !== undefined ? { responseTimeout: intValue(t, 'cm-timeout', 0, 31) } : {}),
    ...(r !== undefined ? { maxCmRetries: intValue(r, 'cm-retries', 0, 15) } : {}),
  };
}

/** `{ cm }` for a tool's config when CM timing was given, else nothing (exactOptionalPropertyTypes). */
export function cmOpt(t: CmTiming | undefined): { cm?: CmTiming } {
  return t === undefined ? {} : { cm: t };
}

/** The traffic-class options of the data-path commands (perftest's --tclass, and an ECN mode for data frames). */
export const TCLASS_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'tclass',
    kind: 'string',
    value: 'N',
    help: "traffic class 0..255 of the QP's frames: DSCP (high 6 bits) and ECN (low 2) of the IP header, and the VLAN priority on a VLAN interface (default 0)",
  },
  {
    name: 'ecn',
    kind: 'string',
    value: 'MODE',
    help: "ECN codepoint of the QP's frames: ect0, ect1 or off (default: the low bits of --tclass, 0: not ECN-capable)",
  },
];

const ECN_MODES: Record<string, number> = { off: 0, ect1: 1, ect0: 2 };

/** --tclass and --ecn, checked: the traffic class to put in the QP's address vector, or undefined when neither is given. */
export function trafficClassArg(args: ParsedArgs): number | undefined {
  const t = args.values.get('tclass');
  const e = args.values.get('ecn');
  if (t === undefined && e === undefined) return undefined;
  let tc = t === undefined ? 0 : intValue(t, 'tclass', 0, 255);
  if (e !== undefined) {
    const bits = ECN_MODES[e];
    if (bits === undefined) throw new UsageError(`--ecn must be ect0, ect1 or off, not ${JSON.stringify(e)} (CE is for switches to set)`);
    tc = (tc & ~3) | bits;
  }
  return tc;
}

/** --queues: a list of queue numbers and ranges (0,2-3), or null when not given (every active queue). */
export function queuesArg(args: ParsedArgs): number[] | null {
  const text = args.values.get('queues');
  if (text === undefined || text === 'all') return null;
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (m === null) throw new UsageError(`--queues must be queue numbers and ranges like 0,2-3 (or all), not ${JSON.stringify(text)}`);
    const a = intValue(m[1]!, 'queues', 0, 4095);
    const b = m[2] === undefined ? a : intValue(m[2], 'queues', 0, 4095);
    if (b < a) throw new UsageError(`--queues ${part}: the range ends before it starts`);
    for (let q = a; q <= b; q++) out.add(q);
  }
  return [...out].sort((x, y) => x - y);
}

export function parseDriver(text: string | undefined): HostDriverKind {
  const d = text ?? HostDriverKind.XDP;
  if (d === HostDriverKind.XDP || d === HostDriverKind.PACKET || d === HostDriverKind.MEMORY) return d;
  throw new UsageError(`--driver must be ${HOST_DRIVERS.join(' or ')}, not ${JSON.stringify(d)}`);
}

export function parseServerAddress(text: string): string {
  if (!/^[A-Za-z0-9.:_-]+$/.test(text)) throw new UsageError(`SERVER_IP must be an address or host name, not ${JSON.stringify(text)}`);
  return text;
}

/** How a command names what the shared options' messages speak of. */
export interface HostTestNames {
  /** The command (perftest, pingpong). */
  command: string;
  /** The server's address operand in the usage (SERVER_IP, SERVER). */
  server: string;
  /** The device option as the "is required" message spells it (--dev, -d/--dev). */
  dev: string;
  /** Seconds of --timeout when not given. */
  defaultTimeoutS: number;
}

/** The shared options, checked. */
export interface HostTestArgs {
  /** The server's address (client), or undefined (server). */
  server: string | undefined;
  role: 'client' | 'server';
  ifname: string;
  driver: HostDriverKind;
  /** --mtu: 256, 512, 1024, 2048 or 4096. */
  mtu: number | undefined;
  bind: string | undefined;
  timeoutS: number;
  json: boolean;
  port: number;
  /** --pcap and its bounds, or null (no capture: nothing in the frame path). */
  capture: LiveCaptureOptions | null;
  /** --queues (AF_XDP), or null for every active queue. */
  queues?: number[] | null;
  /** --steer: ntuple rules send RoCE to one queue, the only one served. */
  steer?: boolean;
  /** --cc: the device's congestion control (ECN → CNP → DCQCN), or null (off). */
  congestion?: CongestionConfig | null;
  /** An integer option in [min, max] (decimal or 0x-hex), or undefined when not given. */
  num(name: string, min: number, max: number): number | undefined;
}

/** Checks the shared options; `operands` are the positionals that may hold the server's address. */
export function hostTestArgs(args: ParsedArgs, operands: readonly string[], names: HostTestNames): HostTestArgs {
  if (operands.length > 1) throw new UsageError(`${names.command} takes at most one ${names.server}, got ${operands.join(' ')}`);
  const first = operands[0];
  const server = first === undefined ? undefined : parseServerAddress(first);
  const ifname = args.values.get('dev');
  if (ifname === undefined) throw new UsageError(`${names.dev} IFACE is required (the interface to run RoCE on)`);
  const driver = parseDriver(args.values.get('driver'));
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const mtu = num('mtu', 256, 4096);
  if (mtu !== undefined && ![256, 512, 1024, 2048, 4096].includes(mtu)) throw new UsageError(`--mtu must be 256, 512, 1024, 2048 or 4096, not ${mtu}`);
  const bind = args.values.get('bind');
  if (bind !== undefined && server !== undefined) throw new UsageError(`--bind applies to the server (run without ${names.server})`);
  const timeoutS = num('timeout', 1, 86_400) ?? names.defaultTimeoutS;
  const json = args.flags.has('json');
  const port = num('port', 1, 65535) ?? PINGPONG_DEFAULT_PORT;
  const capture = captureArgs(args);
  const queues = queuesArg(args);
  const congestion = args.values.has('cc') || args.values.has('cc-param') || args.values.has('cc-line-rate') ? congestionArgs(args) : null;
  return {
    server,
    role: server === undefined ? 'server' : 'client',
    ifname,
    driver,
    mtu,
    bind,
    timeoutS,
    json,
    port,
    capture,
    queues,
    steer: args.flags.has('steer'),
    congestion,
    num,
  };
}
