/**
 * What `roce perftest` and `roce pingpong` share: the options of a test run
 * against a peer from a host interface (SERVER, --dev, --driver, --mtu,
 * --bind, --timeout, --json, --port), the device they run on (an end of the
 * process's memory testbed, or a host interface with the environment's
 * settings), and the run itself: the server's waiting line, the JSON or text
 * report, and exit status 0 (done), 1 (failed, the reason on stderr; a JSON
 * error object with --json).
 */
import { congestionArgs } from './cc-args';
import type { CongestionConfig } from '../stack/congestion/parameters';
import { failureOf } from './failure';
import { type OptionSpec, type ParsedArgs, UsageError, intValue } from './args';
import type { Output } from './output';
import type { CommandContext } from './command';
import type { Device } from '../stack/device';
import { PINGPONG_DEFAULT_PORT } from '../apps/oob/pingpong-messages';
import { type HostDevice, HOST_DRIVERS, HostDriverKind, openHostDevice } from '../apps/host/host-device';
import { hostOptionsFromEnv, readyFileFromEnv } from '../apps/host/environment';
import * as fs from 'node:fs';
import { OobError } from '../apps/oob/tcp-channel';
import { interfaceForAddress } from '../nic-driver/interface-info';
import type { CmTiming } from '../apps/host/cm-step-bound';
import { type RoceSteering, installRoceSteering, systemRunner } from '../apps/host/roce-steering';
import { DEFAULT_CAPTURE_MAX_BYTES, type LiveCaptureOptions, type LiveCaptureStats, MAX_CAPTURE_RING, MAX_SNAP_LEN, MIN_SNAP_LEN } from '../nic-driver/live-capture';

/** The options both commands list with the same words (each keeps its own order, and its own wording of the others). */
export const SHARED_OPTIONS = {
  driver: { name: 'driver', kind: 'string', value: 'KIND', help: `frame driver: ${HOST_DRIVERS.join(' or ')} (default xdp)` },
  bind: { name: 'bind', kind: 'string', value: 'ADDR', help: 'server: local address to listen on (default all)' },
  json: { name: 'json', kind: 'flag', help: 'print one JSON summary object' },
  queues: { name: 'queues', kind: 'string', value: 'LIST', help: 'AF_XDP: the receive queues to serve, e.g. 0 or 0,2-3 (default: every active queue, as RSS may use any)' },
  steer: { name: 'steer', kind: 'flag', help: 'AF_XDP: steer RoCE (UDP 4791, IPv4 and IPv6) to queue 0 (or the first of --queues) with ntuple rules (ethtool -N, root), serve only that queue, and remove the rules at the end' },
  help: { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
} as const satisfies Record<string, OptionSpec>;

/** The live-capture options every command on a real link takes (`...PCAP_OPTIONS` in its list). */
export const PCAP_OPTIONS: readonly OptionSpec[] = [
  { name: 'pcap', kind: 'string', value: 'FILE', help: 'record every frame sent and received (real-clock ns timestamps) to a pcap file' },
  { name: 'pcap-count', kind: 'string', value: 'N', help: `--pcap keeps only the last N frames (a ring written at exit; 1..${MAX_CAPTURE_RING})` },
  { name: 'pcap-size', kind: 'string', value: 'BYTES', help: `--pcap file grows to at most BYTES (suffix k, M or G: binary units; default ${DEFAULT_CAPTURE_MAX_BYTES >> 30}G), later frames are dropped` },
  { name: 'pcap-snap', kind: 'string', value: 'BYTES', help: `--pcap keeps the first BYTES of each frame (${MIN_SNAP_LEN}..${MAX_SNAP_LEN}; 128 holds every RoCE header; default whole frames)` },
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
    if (!Number.isSafeInteger(bytes) || bytes < 24) throw new UsageError(`--pcap-size must be a byte count of at least 24 (the file header), with an optional k, M or G, not ${JSON.stringify(sizeText)}`);
    opts.maxBytes = bytes;
  }
  if (snapText !== undefined) opts.snapLen = intValue(snapText, 'pcap-snap', MIN_SNAP_LEN, MAX_SNAP_LEN);
  return opts;
}

/** The RDMA CM timing options of the CM tools (librdmacm's defaults; smaller values make a dead peer show sooner). */
export const CM_OPTIONS: readonly OptionSpec[] = [
  { name: 'cm-timeout', kind: 'string', value: 'CODE', help: 'CM response timeout, 4.096 us x 2^CODE, 0..31 (default 20, librdmacm\'s): with the retries it bounds each connection and disconnect step' },
  { name: 'cm-retries', kind: 'string', value: 'N', help: 'max CM retries of a REQ, REP, DREQ or SIDR_REQ, 0..15 (default 15, librdmacm\'s)' },
];

/** --cm-timeout and --cm-retries, checked (undefined when neither is given). */
export function cmTimingArg(args: ParsedArgs): CmTiming | undefined {
  const t = args.values.get('cm-timeout');
  const r = args.values.get('cm-retries');
  if (t === undefined && r === undefined) return undefined;
  return { ...(t !== undefined ? { responseTimeout: intValue(t, 'cm-timeout', 0, 31) } : {}), ...(r !== undefined ? { maxCmRetries: intValue(r, 'cm-retries', 0, 15) } : {}) };
}

/** `{ cm }` for a tool's config when CM timing was given, else nothing (exactOptionalPropertyTypes). */
export function cmOpt(t: CmTiming | undefined): { cm?: CmTiming } {
  return t === undefined ? {} : { cm: t };
}

/** The traffic-class options of the data-path commands (perftest's --tclass, and an ECN mode for data frames). */
export const TCLASS_OPTIONS: readonly OptionSpec[] = [
  { name: 'tclass', kind: 'string', value: 'N', help: 'traffic class 0..255 of the QP\'s frames: DSCP (high 6 bits) and ECN (low 2) of the IP header, and the VLAN priority on a VLAN interface (default 0)' },
  { name: 'ecn', kind: 'string', value: 'MODE', help: 'ECN codepoint of the QP\'s frames: ect0, ect1 or off (default: the low bits of --tclass, 0: not ECN-capable)' },
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

/** The `pcap` field of a command's JSON summary. */
function captureSummary(s: LiveCaptureStats): Record<string, unknown> {
  return { file: s.file, frames: s.frames, dropped: s.dropped, bytes: s.bytes };
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
  return { server, role: server === undefined ? 'server' : 'client', ifname, driver, mtu, bind, timeoutS, json, port, capture, queues, steer: args.flags.has('steer'), congestion, num };
}

/** What a run is handed to work with its host device and the output. */
export interface HostTestHooks {
  /** Learns the peer's MAC before the QP is connected (HostDevice.ensureNeighbor). */
  beforeConnect: (peerGid: Uint8Array) => Promise<void>;
  /** How the loops wait while a completion queue is empty (HostDevice.idleWait). */
  idleWait: () => Promise<void>;
  /** The server's waiting line (text output only); also announces readiness (onReady). */
  onListening?: (port: number) => void;
  /** A server listens: written to ROCE_READY_FILE when set (scripts, the rxe lab); prints nothing. */
  onReady?: (port: number) => void;
}

/** One command's test: how it runs and how its result is shown. */
export interface HostTest<R extends { ok: boolean; problems: readonly string[]; warnings?: readonly string[] }> {
  /** The tool's name (ib_write_bw, rc_pingpong). */
  test: string;
  /** What the out-of-band exchange is called when it fails. */
  exchange: string;
  run(device: Device, hooks: HostTestHooks): Promise<R>;
  summary(r: R, host: HostDevice): Record<string, unknown>;
  report(out: Output, r: R, host: HostDevice): void;
  /** The JSON error object's fields before `error`. */
  errorFields: Record<string, unknown>;
}

/** The device `--dev` and `--driver` name: an end of the process's memory testbed, or a host interface with the environment's settings. */
async function openDevice(ctx: CommandContext, ifname: string, driver: HostDriverKind, capture: LiveCaptureOptions | null, queues: number[] | null): Promise<HostDevice> {
  if (driver === HostDriverKind.MEMORY) {
    if (capture !== null) throw new UsageError('--pcap records a real link; the memory test mode records with `roce demo --pcap`');
    return ctx.testbed.open(ifname);
  }
  if (queues !== null && driver !== HostDriverKind.XDP) throw new UsageError('--queues chooses AF_XDP receive queues: it goes with --driver xdp (AF_PACKET sees every queue)');
  return openHostDevice(ifname, driver, { ...hostOptionsFromEnv(ctx.env), capture, queues });
}

/**
 * --steer: before the device opens, the ntuple rules that send RoCE to one queue (queue 0, or the
 * first of --queues), which is then the only one served. Null without --steer.
 */
function steerBeforeOpen(out: Output, a: HostTestArgs, names: HostTestNames): RoceSteering | null {
  if (a.steer !== true) return null;
  if (a.driver !== HostDriverKind.XDP) throw new UsageError('--steer sends RoCE to one AF_XDP receive queue: it goes with --driver xdp (AF_PACKET sees every queue)');
  const s = installRoceSteering(a.ifname, a.queues?.[0] ?? 0, systemRunner());
  for (const w of s.info.warnings) out.stderr(`roce ${names.command}: warning: ${w}\n`);
  return s;
}

/** Removes --steer's rules; what could not be undone goes to stderr. */
function removeSteering(out: Output, s: RoceSteering | null, names: HostTestNames): void {
  for (const p of s?.remove() ?? []) out.stderr(`roce ${names.command}: warning: --steer could not undo ${p}\n`);
}

/**
 * While `cleanup` has something to do (a capture to write: a ring is written only at close;
 * --steer's rules to remove), SIGINT and SIGTERM first run it, then end the process as the signal
 * would have. Returns the function that removes the handlers.
 */
function cleanupOnSignal(needed: boolean, cleanup: () => void): () => void {
  if (!needed) return () => undefined;
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const handler = (sig: NodeJS.Signals): void => {
    for (const s of signals) process.removeListener(s, handler);
    cleanup();
    process.kill(process.pid, sig);
  };
  for (const s of signals) process.once(s, handler);
  return () => {
    for (const s of signals) process.removeListener(s, handler);
  };
}

/** Opens the device, runs the test, prints the result; the exit status. */
export async function runHostTest<R extends { ok: boolean; problems: readonly string[]; warnings?: readonly string[] }>(out: Output, ctx: CommandContext, a: HostTestArgs, names: HostTestNames, t: HostTest<R>): Promise<number> {
  let host: HostDevice | null = null;
  let steering: RoceSteering | null = null;
  let unhookSteer = (): void => undefined;
  let unhook = (): void => undefined;
  try {
    steering = steerBeforeOpen(out, a, names);
    const s = steering;
    unhookSteer = cleanupOnSignal(s !== null, () => removeSteering(out, s, names));
    host = await openDevice(ctx, a.ifname, a.driver, a.capture, s !== null ? [s.info.queue] : a.queues ?? null);
    // Some drivers reset their classifier when XDP attaches: the rules must still be there.
    s?.verify();
    const opened = host;
    unhook = cleanupOnSignal(opened.capture !== null, () => opened.capture?.close());
    const h = host;
    const hooks: HostTestHooks = { beforeConnect: (gid) => h.ensureNeighbor(gid), idleWait: h.idleWait };
    const readyFile = readyFileFromEnv(ctx.env);
    if (readyFile !== null && a.role === 'server') hooks.onReady = (port) => fs.writeFileSync(readyFile, `${port}\n`);
    if (a.role === 'server') {
      hooks.onListening = (port) => {
        if (!a.json) out.stdout(`${t.test}: waiting for a client on port ${port}\n`);
        hooks.onReady?.(port);
      };
    }
    // --cc: every QP the test creates starts with the device's congestion control.
    if (a.congestion != null) host.device.setCongestion(a.congestion);
    const r = await t.run(host.device, hooks);
    // Let the last ACKs leave before the device goes away.
    if (!host.virtualTime) await new Promise((res) => setTimeout(res, 100));
    // The capture's figures are final once it is closed (a ring is written then).
    const cap = host.capture;
    cap?.close();
    const qs = host.queueStats();
    const steer = steering !== null ? { steer: steerSummary(steering) } : {};
    if (a.json) out.stdout(`${JSON.stringify({ ...t.summary(r, host), ...(qs !== null ? { queues: qs } : {}), ...steer, ...(cap !== null ? { pcap: captureSummary(cap.stats) } : {}) })}\n`);
    else {
      t.report(out, r, host);
      if (cap !== null) out.stdout(`capture: ${cap.stats.frames} frames to ${cap.stats.file}${cap.stats.dropped > 0 ? ` (${cap.stats.dropped} not kept: ${a.capture?.maxFrames !== undefined ? 'older than the last --pcap-count' : 'past --pcap-size'})` : ''}\n`);
    }
    for (const w of r.warnings ?? []) out.stderr(`roce ${names.command}: warning: ${w}\n`);
    if (!r.ok) {
      out.stderr(`roce ${names.command}: FAILED: ${r.problems[0] ?? 'verification failed'}\n`);
      return 1;
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    const failure = failureOf(e);
    const cap = host?.capture ?? null;
    cap?.close();
    if (a.json) out.stdout(`${JSON.stringify({ ...t.errorFields, ...failure, ...(cap !== null ? { pcap: captureSummary(cap.stats) } : {}) })}\n`);
    out.stderr(`roce ${names.command}: ${e instanceof OobError ? `${t.exchange} failed: ` : ''}${failure.error}\n`);
    return 1;
  } finally {
    unhook();
    host?.close();
    removeSteering(out, steering, names);
    unhookSteer();
  }
}

/** The `steer` field of a command's JSON summary: the queue and the rules (IDs) in place during the run. */
function steerSummary(s: RoceSteering): Record<string, unknown> {
  const i = s.info;
  return { queue: i.queue, rules: [...i.added, ...i.reused].map((r) => ({ id: r.id, flowType: r.flowType })), ntupleTurnedOn: i.ntupleTurnedOn };
}

/**
 * The interface for an RDMA CM command without `-d`: the one that holds or reaches `addr`, as rping
 * finds it (the kernel's route). The memory test mode has no routes; a lookup that fails is printed
 * (stderr, and the JSON error object with --json) and gives null: the command exits 1.
 */
export async function routedInterface(
  out: Output,
  o: { driver: HostDriverKind; json: boolean; command: string; failFields: Record<string, unknown> },
  addr: () => string,
): Promise<string | null> {
  if (o.driver === HostDriverKind.MEMORY) throw new UsageError('-d sim-a or -d sim-b is required with --driver memory');
  const a = addr();
  try {
    return await interfaceForAddress(a);
  } catch (e) {
    const f = failureOf(e);
    if (o.json) out.stdout(`${JSON.stringify({ ok: false, ...o.failFields, ...f })}\n`);
    out.stderr(`roce ${o.command}: ${f.error}\n`);
    return null;
  }
}
