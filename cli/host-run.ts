/**
 * What `roce perftest`, `roce pingpong` and the other tools that run against a peer from a host
 * interface share once their options are checked (cli/host-run-options.ts): the device they run on
 * (an end of the process's memory testbed, or a host interface with the environment's settings),
 * and the run itself: the server's waiting line, the JSON or text report, and exit status 0 (done),
 * 1 (failed, the reason on stderr; a JSON error object with --json).
 */
import { failureOf } from './failure';
import { UsageError } from './args';
import type { Output } from './output';
import type { CommandContext } from './command';
import type { Device } from '../stack/device';
import { type HostDevice, HostDriverKind, openHostDevice } from '../apps/host/host-device';
import { hostOptionsFromEnv, readyFileFromEnv } from '../apps/host/environment';
import * as fs from 'node:fs';
import { OobError } from '../apps/oob/tcp-channel';
import { interfaceForAddress } from '../nic-driver/interface-info';
import { type RoceSteering, installRoceSteering, systemRunner } from '../apps/host/roce-steering';
import type { LiveCaptureOptions, LiveCaptureStats } from '../nic-driver/live-capture';
import type { HostTestArgs, HostTestNames } from './host-run-options';

/** The `pcap` field of a command's JSON summary. */
function captureSummary(s: LiveCaptureStats): Record<string, unknown> {
  return { file: s.file, frames: s.frames, dropped: s.dropped, bytes: s.bytes };
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
  /** `host` is the device's host, for a command that reports before the run ends. */
  run(device: Device, hooks: HostTestHooks, host: HostDevice): Promise<R>;
  summary(r: R, host: HostDevice): Record<string, unknown>;
  report(out: Output, r: R, host: HostDevice): void;
  /** The JSON error object's fields before `error`. */
  errorFields: Record<string, unknown>;
  /** The test ends cleanly on its own at the first SIGINT or SIGTERM (perftest --run_infinitely). */
  stopsOnSignal?: boolean;
}

/** The device `--dev` and `--driver` name: an end of the process's memory testbed, or a host interface with the environment's settings. */
async function openDevice(
  ctx: CommandContext,
  ifname: string,
  driver: HostDriverKind,
  capture: LiveCaptureOptions | null,
  queues: number[] | null,
): Promise<HostDevice> {
  if (driver === HostDriverKind.MEMORY) {
    if (capture !== null) throw new UsageError('--pcap records a real link; the memory test mode records with `roce demo --pcap`');
    return ctx.testbed.open(ifname);
  }
  if (queues !== null && driver !== HostDriverKind.XDP)
    throw new UsageError('--queues chooses AF_XDP receive queues: it goes with --driver xdp (AF_PACKET sees every queue)');
  return openHostDevice(ifname, driver, { ...hostOptionsFromEnv(ctx.env), capture, queues });
}

/**
 * --steer: before the device opens, the ntuple rules that send RoCE to one queue (queue 0, or the
 * first of --queues), which is then the only one served. Null without --steer.
 */
function steerBeforeOpen(out: Output, a: HostTestArgs, names: HostTestNames): RoceSteering | null {
  if (a.steer !== true) return null;
  if (a.driver !== HostDriverKind.XDP)
    throw new UsageError('--steer sends RoCE to one AF_XDP receive queue: it goes with --driver xdp (AF_PACKET sees every queue)');
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
 * would have. With `testStops` the first signal is the test's own (it ends cleanly and the normal
 * path cleans up): only a second one cleans up and ends the process. Returns the function that
 * removes the handlers.
 */
function cleanupOnSignal(needed: boolean, testStops: boolean, cleanup: () => void): () => void {
  if (!needed) return () => undefined;
  const signals = ['SIGINT', 'SIGTERM'] as const;
  let passed = !testStops;
  const handler = (sig: NodeJS.Signals): void => {
    if (!passed) {
      passed = true;
      return;
    }
    for (const s of signals) process.removeListener(s, handler);
    cleanup();
    process.kill(process.pid, sig);
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.removeListener(s, handler);
  };
}

/** Opens the device, runs the test, prints the result; the exit status. */
export async function runHostTest<R extends { ok: boolean; problems: readonly string[]; warnings?: readonly string[] }>(
  out: Output,
  ctx: CommandContext,
  a: HostTestArgs,
  names: HostTestNames,
  t: HostTest<R>,
): Promise<number> {
  let host: HostDevice | null = null;
  let steering: RoceSteering | null = null;
  let unhookSteer = (): void => undefined;
  let unhook = (): void => undefined;
  try {
    steering = steerBeforeOpen(out, a, names);
    const s = steering;
    unhookSteer = cleanupOnSignal(s !== null, t.stopsOnSignal === true, () => removeSteering(out, s, names));
    host = await openDevice(ctx, a.ifname, a.driver, a.capture, s !== null ? [s.info.queue] : (a.queues ?? null));
    // Some drivers reset their classifier when XDP attaches: the rules must still be there.
    s?.verify();
    const opened = host;
    unhook = cleanupOnSignal(opened.capture !== null, t.stopsOnSignal === true, () => opened.capture?.close());
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
    const r = await t.run(host.device, hooks, host);
    // Let the last ACKs leave before the device goes away.
    if (!host.virtualTime) await new Promise((res) => setTimeout(res, 100));
    // The capture's figures are final once it is closed (a ring is written then).
    const cap = host.capture;
    cap?.close();
    const qs = host.queueStats();
    const steer = steering !== null ? { steer: steerSummary(steering) } : {};
    if (a.json)
      out.stdout(
        `${JSON.stringify({ ...t.summary(r, host), ...(qs !== null ? { queues: qs } : {}), ...steer, ...(cap !== null ? { pcap: captureSummary(cap.stats) } : {}) })}\n`,
      );
    else {
      t.report(out, r, host);
      if (cap !== null)
        out.stdout(
          `capture: ${cap.stats.frames} frames to ${cap.stats.file}${cap.stats.dropped > 0 ? ` (${cap.stats.dropped} not kept: ${a.capture?.maxFrames !== undefined ? 'older than the last --pcap-count' : 'past --pcap-size'})` : ''}\n`,
        );
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
