/**
 * A scenario run against a live DUT: a host (or a qemu guest) running the stock perftest tool the
 * scenario names, with this stack as its peer on a host interface (AF_XDP or AF_PACKET) through
 * perftest's out-of-band exchange (live-side.ts). The probe driver sits between the host driver
 * and the device (apps/host/host-device.ts `wrapDriver`), applies the events and records the
 * frames; the same measurements (measurements.ts) judge them.
 *
 * What changes from the in-memory runner:
 *  - The DUT's QP attributes are set by its tool, not by us. perftest takes the local ACK timeout
 *    (-u) and sets retry_cnt 7, rnr_retry 7 and min_rnr_timer 12 itself on the TCP exchange
 *    (perftest_resources.c ctx_modify_qp_to_rtr / _rts; --retry_count applies with -R only). The
 *    figures are judged against the scenario's values; `dutAttributes` says, for each, whether
 *    the tool was told (the command printed) or only expected to use it.
 *  - perftest moves at least 5 messages per QP (-n, MIN_ITER): a scenario of fewer runs with 5,
 *    the events on the scenario's own PSNs; an event on the scenario's last PSN (a tail loss) is
 *    refused then, since the next message would reveal it.
 *  - Timestamps come from the host's monotonic clock at the driver's calls: a received frame's
 *    is late by the polling delay (the frame waits in the ring until the event loop polls the
 *    driver: the process's wake-up from epoll, or the end of the work the loop was doing). The
 *    run measures the event loop's largest delay (perf_hooks monitorEventLoopDelay) and reports
 *    it as the timestamps' error. The path's round trip is not known: figures that span one
 *    include it (no `DUT` column).
 *  - A run whose DUT goes silent ends within the no-progress bound of the scenario's timers
 *    (apps/host/no-progress-bound.ts) and says so; figures measured up to then are kept.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ipv6ToString } from '../../packets/bytes';
import { isIpv4MappedGid } from '../../stack/address';
import type { Device } from '../../stack/device';
import { noProgressBound } from '../host/no-progress-bound';
import { openOobChannel } from '../oob/oob-endpoint';
import { PerftestOob, type PerftestVerb, executeSession, sessionSteps } from '../oob/perftest-session';
import { PINGPONG_DEFAULT_PORT } from '../oob/pingpong-messages';
import { type PerftestConfig, resolveConfig } from '../perftest/config';
import { configError } from '../perftest/perftest-error';
import { RdmaCm } from '../../stack/cm/rdma-cm';
import { cmStepBound } from '../host/cm-step-bound';
import { CmCommChannel } from '../perftest/cm-comm-channel';
import { CmTestConnection } from '../perftest/cm-test-connection';
import { DEST_STRUCT } from '../perftest/run';
import { type ProbeQp, measure } from './measurements';
import { ProbeSide, PERFTEST_MIN_RNR_TIMER, PERFTEST_RETRY_CNT, PERFTEST_RNR_RETRY } from './live-side';
import type { FrameRecord, ProbeDriver } from './probe-driver';
import { ProbeError, ProbeErrorCode } from './probe-error';
import type { ProbeResult } from './probe-result';
import { DUT_TOOLS, DutRole, EventType, type ProbeScenario, dutIsServer, packetsPerMessage } from './scenario';
import { RNR_TIMER_USEC } from '../../packets/aeth';
import { rpingExchange } from './live-rping';

/** perftest's MIN_ITER: the fewest messages -n takes. */
export const PERFTEST_MIN_ITERS = 5;

/** The host device the run uses, opened with the probe driver inside. */
export interface LiveHost {
  device: Device;
  probe: ProbeDriver;
  driver: 'xdp' | 'packet';
  /** How the loops wait for frames (HostDevice.idleWait). */
  idleWait: () => Promise<void>;
  /** Learns the DUT's MAC from the kernel's neighbour table before the QPs connect. */
  ensureNeighbor: (gid: Uint8Array) => Promise<void>;
}

export interface LiveRunOptions {
  /** The DUT's address: needed when the DUT is the responder (its tool is the server we connect to). */
  dut?: string;
  /** TCP port of perftest's exchange (default 18515). */
  port?: number;
  /** Our source GID index (default: the first IPv4-mapped GID). */
  gidIndex?: number;
  /** Server (DUT requester): how long to wait for the DUT's tool to connect, ms (default 300 s). */
  connectTimeoutMs?: number;
  /** Server: called once we listen, with the port and the command the DUT is to run. */
  onListening?: (port: number, dutCommand: string) => void;
  /** Seed of the events' random choices (default 1). */
  seed?: number;
  /**
   * perftest's -R: the exchange over a communication QP and the test QP connected through the RDMA
   * CM (one QP). The REQ carries the scenario's max-retransmit-retry as its retry count when we are
   * the active side (the DUT is the server); the DUT as the client is told with --retry_count.
   */
  rdmaCm?: boolean;
}

/** One QP attribute of the DUT: its value for the figures and where that value comes from. */
export interface DutAttribute {
  name: 'timeout' | 'retry_cnt' | 'rnr_retry' | 'min_rnr_timer';
  /** The value the figures are judged against (the scenario's). */
  value: number;
  /** The tool's option that sets it, as given in `dutCommand`, or null when the tool cannot be told. */
  option: string | null;
  /** What the stock tool sets when it cannot be told, or null. */
  toolValue: number | null;
  source: string;
}

/** What a run's exchange with the DUT learned, before the figures: the live result less what the runner adds. */
export type LiveExchange = Omit<LiveRunInfo, 'dutIsServer'> & { durationNs: number };

/** What a live run adds to the result. */
export interface LiveRunInfo {
  /** Messages per QP the tool moves (perftest's -n). */
  messagesPerQp: number;
  /** The DUT's command line for this scenario (DEV and GID_INDEX are the DUT's). */
  dutCommand: string;
  dutAttributes: DutAttribute[];
  /** Where the scenario and the tool disagree, and other things the figures depend on. */
  warnings: string[];
  /** The QPs as numbers on the wire: ours, the DUT's, the data requester's first PSN. */
  qps: ProbeQp[];
  /** How this side's work requests ended, per QP (the client's sends, the SEND server's receives). */
  ourCompletions: string[][];
  /** The event loop's largest delay during the run, ns: the part of a receive timestamp's lateness the process adds. */
  pollingDelayNs: number;
  /** Why the run did not complete (the exchange failed, the DUT went silent), or null. */
  error: string | null;
  /** The DUT's tool is the server this stack connected to (its command is printed with the report), not the client it waited for. */
  dutIsServer: boolean;
}

export interface LiveRun {
  result: ProbeResult;
  live: LiveRunInfo;
  records: readonly FrameRecord[];
}

const TOOL_VERB: Record<string, PerftestVerb> = { write: 'write', read: 'read', send: 'send', atomic: 'atomic' };
/** monitorEventLoopDelay's sampling interval, ms; a sample's delay is its interval plus the loop's lateness. */
const LOOP_SAMPLE_MS = 1;

/** The events that need the DUT's loss to be the last thing it sent (nothing after it reveals it). */
function tailEvents(s: ProbeScenario): typeof s.events {
  const last = packetsPerMessage(s.traffic) * s.traffic.numMsgsPerQp - 1;
  return s.events.filter((e) => (e.type === EventType.DROP || e.type === EventType.WITHHOLD_ACK) && e.psn === last);
}

/** What the DUT runs for `s`: perftest's flags for the scenario's traffic. */
export function dutCommand(s: ProbeScenario, messages: number, o: { port: number; ourIp: string | null; rdmaCm?: boolean }): string {
  const t = s.traffic;
  const client = s.dut.role === DutRole.REQUESTER;
  const flags = [`-d DEV -x GID_INDEX -s ${t.messageSize} -n ${messages} -m ${t.mtu} -u ${t.minRetransmitTimeout}`];
  if (t.numQps > 1) flags.push(`-q ${t.numQps}`);
  if (o.port !== PINGPONG_DEFAULT_PORT) flags.push(`-p ${o.port}`);
  // -R: the client's REQ carries --retry_count, the retry_cnt of both QPs (our REQ's when the DUT is the server).
  if (o.rdmaCm === true) flags.push(client ? `-R --retry_count ${t.maxRetransmitRetry}` : '-R');
  flags.push('-F');
  return `${s.dut.tool} ${flags.join(' ')}${client ? ` ${o.ourIp ?? 'OUR_IP'}` : ''}`;
}

/** The DUT's attributes for `s` and where each comes from when the DUT runs perftest (on the TCP exchange, or with -R). */
export function dutAttributes(s: ProbeScenario, rdmaCm = false): DutAttribute[] {
  const t = s.traffic;
  const tool = s.dut.tool;
  const client = s.dut.role === DutRole.REQUESTER;
  const fixed = (name: DutAttribute['name'], value: number, toolValue: number): DutAttribute => ({
    name,
    value,
    option: null,
    toolValue,
    source:
      value === toolValue
        ? `${tool} sets ${toolValue} itself (perftest_resources.c), as the scenario asks`
        : `the scenario; ${tool} cannot be told and sets ${toolValue} itself (perftest_resources.c): a stock tool uses ${toolValue}`,
  });
  return [
    { name: 'timeout', value: t.minRetransmitTimeout, option: `-u ${t.minRetransmitTimeout}`, toolValue: null, source: `${tool} -u ${t.minRetransmitTimeout}` },
    rdmaCm
      ? {
          name: 'retry_cnt',
          value: t.maxRetransmitRetry,
          option: client ? `--retry_count ${t.maxRetransmitRetry}` : null,
          toolValue: null,
          // The REQ's retry count is both QPs' retry_cnt (the kernel's cm_req_handler() and cm_send_req()).
          source: client
            ? `${tool} -R --retry_count ${t.maxRetransmitRetry} (its CM REQ)`
            : `our CM REQ's retry count (${t.maxRetransmitRetry}), which the DUT's CM gives its QP`,
        }
      : fixed('retry_cnt', t.maxRetransmitRetry, PERFTEST_RETRY_CNT),
    fixed('rnr_retry', t.rnrRetry, PERFTEST_RNR_RETRY),
    fixed('min_rnr_timer', t.minRnrTimer, PERFTEST_MIN_RNR_TIMER),
  ];
}

/** Refuses what a live run cannot do with `s`, before anything is opened towards the DUT. */
export function checkLiveScenario(s: ProbeScenario): { messages: number } {
  // rping moves exactly -C pings, the scenario's num-msgs-per-qp: nothing to refuse here (its events were checked against its pings when the scenario was read).
  if (s.dut.tool === 'rping') return { messages: s.traffic.numMsgsPerQp };
  const messages = Math.max(PERFTEST_MIN_ITERS, s.traffic.numMsgsPerQp);
  if (messages > s.traffic.numMsgsPerQp) {
    const tail = tailEvents(s)[0];
    if (tail !== undefined) {
      const per = packetsPerMessage(s.traffic);
      throw new ProbeError(
        ProbeErrorCode.RUN,
        `the ${tail.type} at PSN ${tail.psn} is the last of the scenario's ${s.traffic.numMsgsPerQp === 1 ? 'only message' : `${s.traffic.numMsgsPerQp} messages`}, but ${s.dut.tool} sends at least ${PERFTEST_MIN_ITERS} (-n): the next message would reveal it; give traffic.num-msgs-per-qp ${PERFTEST_MIN_ITERS} or more and the event PSN ${per * PERFTEST_MIN_ITERS - 1}`,
        tail.line,
      );
    }
  }
  return { messages };
}

/** The scenario's timers as the no-progress bound of the run: the DUT's retries (or ours) and the longest RNR wait, with a margin. */
export function liveBound(s: ProbeScenario): ReturnType<typeof noProgressBound> {
  const t = s.traffic;
  const timers = s.events.filter((e) => e.type === EventType.RNR_NAK).map((e) => e.timer ?? PERFTEST_MIN_RNR_TIMER);
  // The longest of table 45's timers among the events (code 0 is the longest, 655.36 ms).
  const rnr = [PERFTEST_MIN_RNR_TIMER, t.minRnrTimer, ...timers].reduce((a, b) => ((RNR_TIMER_USEC[b] ?? 0) > (RNR_TIMER_USEC[a] ?? 0) ? b : a));
  return noProgressBound({
    timeout: t.minRetransmitTimeout,
    retryCnt: Math.max(t.maxRetransmitRetry, PERFTEST_RETRY_CNT),
    rnrRetry: PERFTEST_RNR_RETRY,
    minRnrTimer: rnr,
  });
}

/** Runs `s` against the DUT's tool with this stack on `host`; the figures are measured at this stack's driver. */
export async function runLive(s: ProbeScenario, host: LiveHost, o: LiveRunOptions = {}): Promise<LiveRun> {
  const { messages } = checkLiveScenario(s);
  if (s.dut.tool === 'rping') return liveRun(s, host, await rpingExchange(s, host, o));
  const dutIsRequester = s.dut.role === DutRole.REQUESTER;
  const role = dutIsRequester ? 'server' : 'client';
  if (!dutIsRequester && o.dut === undefined)
    throw configError('server', "is needed: the DUT is the responder (its tool is the server), give the DUT's address");
  const port = o.port ?? PINGPONG_DEFAULT_PORT;
  const t = s.traffic;
  const bound = liveBound(s);
  const verb = TOOL_VERB[DUT_TOOLS[s.dut.tool]] as PerftestVerb;
  const cfg: PerftestConfig = {
    verb,
    lat: false,
    role,
    port,
    size: t.messageSize,
    iters: messages,
    qps: t.numQps,
    mtu: t.mtu,
    qpTimeout: t.minRetransmitTimeout,
    // Every message of a QP posted at once, and (SEND) every receive.
    txDepth: messages,
    rxDepth: messages,
    runTimeoutMs: bound.ms,
    connectTimeoutMs: o.connectTimeoutMs ?? 300_000,
    beforeConnect: host.ensureNeighbor,
    idleWait: host.idleWait,
    ...(o.dut !== undefined && !dutIsRequester ? { server: o.dut } : {}),
    ...(o.gidIndex !== undefined ? { gidIndex: o.gidIndex } : {}),
  };
  const rc = resolveConfig(host.device, cfg);
  const gid = host.device.gids[rc.gidIndex] as Uint8Array;
  const ourIp = isIpv4MappedGid(gid) ? `${gid[12]}.${gid[13]}.${gid[14]}.${gid[15]}` : ipv6ToString(gid);
  const command = dutCommand(s, messages, { port, ourIp, rdmaCm: o.rdmaCm === true });
  const listening = o.onListening;
  if (listening !== undefined) cfg.onListening = (p) => listening(p, command);
  const rdmaCm = o.rdmaCm === true;
  if (rdmaCm && t.numQps > 1) throw new ProbeError(ProbeErrorCode.RUN, 'perftest -R connects one QP: a scenario with -R has num-qps 1');
  const rcm = rdmaCm ? new RdmaCm(host.device) : null;
  const stepMs = cmStepBound(undefined).ms;
  const cmTest =
    rcm === null
      ? null
      : new CmTestConnection(rcm, {
          role,
          dst: o.dut,
          port,
          // READs and atomics both take the responder's resources (max_dest_rd_atomic).
          rdAtomic: verb === 'read' || verb === 'atomic' ? rc.outReads : 0,
          stepMs,
          connectMs: cfg.connectTimeoutMs ?? 300_000,
          idle: host.idleWait,
          beforeConnect: host.ensureNeighbor,
          retryCount: t.maxRetransmitRetry,
          ackTimeout: t.minRetransmitTimeout,
        });
  const side = new ProbeSide(host.device, rc, cfg, s, host.probe, messages, o.seed ?? 1, cmTest);
  const loop = monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS });
  const t0 = host.device.clock.now();
  let error: string | null = null;
  loop.enable();
  // The polling delay that matters is the data phase's: from the QPs' connection on.
  side.onConnected = () => loop.reset();
  let comm: CmCommChannel | null = null;
  try {
    if (rcm === null) {
      const ch = await openOobChannel(cfg, cfg.connectTimeoutMs ?? 300_000, () => configError('server', 'is needed for the client role'));
      side.peerDone = () => ch.available > 0;
      const oob = new PerftestOob(ch, role, { gid: true, dataValidation: false }, { stepMs: 30_000, peerRunMs: bound.ms }, false);
      await executeSession(oob, sessionSteps(verb, false, role, false, false), side, t.numQps);
    } else {
      // perftest -R (run.ts runOverRdmaCm): the communication QP first, then the session over it.
      const co = { stepMs, idle: host.idleWait, beforeConnect: host.ensureNeighbor, cm: undefined };
      const connectMs = cfg.connectTimeoutMs ?? 300_000;
      comm =
        role === 'client'
          ? await CmCommChannel.connect(rcm, o.dut as string, port, connectMs, co)
          : await CmCommChannel.accept(rcm, port, connectMs, { ...co, onListening: cfg.onListening });
      const ch = comm;
      side.peerDone = () => ch.available > 0;
      const oob = new PerftestOob(ch, role, DEST_STRUCT, { stepMs, peerRunMs: bound.ms }, false, false);
      await executeSession(oob, sessionSteps(verb, false, role, true), side, 1);
      await cmTest?.disconnect();
    }
    // A delay-ack event's ACK still held leaves (and is recorded) before the figures are read: the
    // DUT may have completed on a resend its timer made while we held it.
    const holdUntil = Date.now() + Math.max(0, ...s.events.map((e) => (e.type === EventType.DELAY_ACK ? (e.delayUs ?? 0) / 1000 : 0))) + 1000;
    while (host.probe.holding > 0 && Date.now() < holdUntil) await host.idleWait();
  } catch (e) {
    // Nothing was exchanged with the DUT: no run to report.
    if (side.state.qps.length === 0) throw e;
    error = e instanceof Error ? e.message : String(e);
  } finally {
    loop.disable();
    cmTest?.destroy();
    side.release();
    comm?.destroy();
    rcm?.close();
  }
  const durationNs = host.device.clock.now() - t0;
  const records = host.probe.records;
  const warnings: string[] = [];
  const attrs = dutAttributes(s, rdmaCm);
  if (messages > t.numMsgsPerQp)
    warnings.push(
      `${s.dut.tool} moves at least ${PERFTEST_MIN_ITERS} messages per QP (-n): ${messages} ran, the scenario asks for ${t.numMsgsPerQp}; the events are on the scenario's PSNs`,
    );
  // The DUT's WRITE or READ length says whether its tool ran the scenario's message size.
  if (dutIsRequester && verb !== 'send') {
    const first = records.find((r) => r.dir === 'rx' && r.reth !== null);
    if (first?.reth != null && first.reth.length !== t.messageSize)
      error ??= `the DUT's ${verb.toUpperCase()}s are ${first.reth.length} bytes, the scenario's message-size is ${t.messageSize}: run the tool with -s ${t.messageSize}`;
  }
  const pollingDelayNs = loop.count > 0 ? Math.max(0, loop.max - LOOP_SAMPLE_MS * 1e6) : 0;
  return liveRun(s, host, {
    durationNs,
    messagesPerQp: messages,
    dutCommand: command,
    dutAttributes: attrs,
    warnings,
    qps: side.state.qps,
    ourCompletions: side.state.ourCompletions,
    pollingDelayNs,
    error,
  });
}

/**
 * The figures measured on the probe driver's records and the result of a live run: `info` is what
 * the run learned; a scenario value an attribute's tool cannot be told and does not use is a
 * warning (min_rnr_timer only when the DUT is the responder: only its RNR NAKs carry it).
 */
function liveRun(s: ProbeScenario, host: LiveHost, info: LiveExchange): LiveRun {
  const { durationNs, ...rest } = info;
  const t = s.traffic;
  const dutIsRequester = s.dut.role === DutRole.REQUESTER;
  const records = host.probe.records;
  const warnings: string[] = [];
  for (const a of info.dutAttributes)
    if (a.toolValue !== null && a.value !== a.toolValue && (a.name !== 'min_rnr_timer' || !dutIsRequester))
      warnings.push(
        `${a.name} ${a.value} is the scenario's; ${s.dut.tool} sets ${a.toolValue} and cannot be told (a stock tool's figures are judged against ${a.value})`,
      );
  warnings.push(...info.warnings);
  // Received frames at the kernel's stamp (AF_PACKET) are late by nothing the event loop adds; sent
  // frames leave within the transmit call after their recorded time. Frames taken at the poll are
  // late by up to the event loop's largest delay.
  const p = host.probe;
  const stamped = p.rxStamped > 0 && p.rxPolled === 0;
  const errorNs = Math.max(p.txCallMaxNs, stamped ? 0 : info.pollingDelayNs);
  const figures = measure({ scenario: s, qps: info.qps, records, pathRttNs: null, errorNs });
  const label = host.driver === 'xdp' ? 'AF_XDP' : 'AF_PACKET';
  const result: ProbeResult = {
    scenario: s.name,
    dut: { role: s.dut.role, tool: s.dut.tool, driver: host.driver },
    timestamps: {
      where: stamped
        ? `this stack's ${label} driver on the host's monotonic clock: a received frame at the kernel's receive stamp (the packet socket's, as the frame reached its ring, after the NIC's interrupt moderation), a sent frame at its transmit call, which took at most ${(p.txCallMaxNs / 1000).toFixed(1)} µs`
        : `this stack's ${label} driver, at its transmit and receive calls, on the host's monotonic clock; a received frame's time is late by the polling delay (it waits in the ring until the event loop polls the driver), at most the event loop's largest delay in the run plus the process's wake-up`,
      errorNs,
    },
    pathRttNs: null,
    figures,
    dutCompletions: Array.from({ length: t.numQps }, () => []),
    frames: {
      tx: records.filter((r) => r.dir === 'tx' && r.fate === 'delivered').length,
      rx: records.filter((r) => r.dir === 'rx').length,
      dropped: records.filter((r) => r.fate === 'dropped').length,
    },
    durationNs,
  };
  return { result, live: { ...rest, warnings, dutIsServer: dutIsServer(s.dut) }, records };
}
