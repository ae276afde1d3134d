/**
 * A congestion scenario in simulation (`roce sim`): N hosts, each a roce-ts device,
 * around one output-queued switch (nic-driver/star-switch.ts), with RC flows of RDMA WRITEs
 * between them; congestion control (DCQCN, or none), the switch's ECN marking and PFC as asked.
 * Everything runs on the virtual clock under one seed: the same scenario gives the same frames
 * and the same figures.
 *
 * Measured: each flow's throughput at the switch port it leaves by (its frames' wire bytes per
 * bin), its payload bytes completed, the queue of the busiest output port over time, the
 * switch's marks, drops and PFC pauses, and the CNPs the notification points sent and the
 * reaction points handled.
 *
 * Judged: each flow's state at the end and its stalls. A flow is stalled when, while it has WRITEs
 * posted and not completed, none of its frames leaves the switch and none of its WRITEs completes
 * for a whole stall window (`stallWindowNs`). Why it stalls is read from the engine at that moment:
 * its host's uplink paused by PFC, its requester stopped for end-to-end credits, its local ACK
 * timer armed with requests outstanding, or its QP in the error state. A run with a stall is not
 * ok unless the scenario expects stalls.
 */
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { Mtu, mtuBytes } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import { QpState } from '../../stack/qp-type-and-state';
import { localAckTimeoutNs } from '../../stack/qp-attributes';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CongestionConfig, NpParams, RpParams } from '../../stack/congestion/parameters';
import { type EcnMarking, type PfcConfig, createStarSwitch } from '../../nic-driver/star-switch';
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';
import { decodeFrame } from '../../packets/decode';
import { LinkType } from '../../packets/pcap';
import { wireBytes } from '../../packets/wire-size';

export interface StarFlowSpec {
  /** Host indexes (0 = a). */
  src: number;
  dst: number;
  /** When the flow starts posting (ns, default 0). */
  startNs?: number;
  /** Payload bytes to move (default: as much as it can until it ends). */
  bytes?: number;
  /** How long it posts (ns, default: until the scenario ends). */
  durationNs?: number;
}

export interface StarScenario {
  hosts: number;
  flows: readonly StarFlowSpec[];
  linkRateBps: number;
  bufferBytes: number;
  /** Each link's one-way propagation delay (default 1 µs). */
  propagationNs?: number;
  ecn: EcnMarking | null;
  pfc: PfcConfig | null;
  /** 'dcqcn': notification and reaction points on every device (parameters over the mlx5 defaults); 'none': off. */
  cc: 'dcqcn' | 'none';
  ccParams?: Partial<RpParams & NpParams>;
  durationNs: number;
  seed: number;
  /** RDMA WRITE size (default 65536) and WRITEs each flow keeps outstanding (default 16). */
  messageBytes?: number;
  outstanding?: number;
  /** Path MTU (default 4096). */
  pathMtu?: Mtu;
  /** Bins of the figures over time (default: the duration in 100 bins). */
  binNs?: number;
  /** Where the steady state is measured from (default: half the duration). */
  steadyFromNs?: number;
  /** The window of the convergence check (default: a twentieth of the duration). */
  convergeWindowNs?: number;
  /**
   * How long a flow with work posted may make no progress (no frame of it leaves the switch, no
   * WRITE of it completes) before it is stalled. Default: the larger of two bins and four times
   * the longest a moving flow's frame can take, a full buffer's drain at line rate plus the base
   * round trip (`defaultStallWindowNs`).
   */
  stallWindowNs?: number;
  /** Stalls are what the scenario is about (a lossy incast, say): the run is ok with them, and says so. */
  expectStalls?: boolean;
  /** Every frame the switch sends (data leaving a port, PFC frames), for a capture. */
  capture?: (frame: Uint8Array, timeNs: number) => void;
}

/**
 * Why a stalled flow makes no progress, read from the engine as the stall is found (and again at
 * the end for a stall that lasts to the end):
 * - `paused`: PFC has its host's uplink paused, or paused it during the stall (seen at the end of a step);
 * - `queued`: its frames wait in its host's transmit queue, or in its destination port's queue for
 *   less time than that queue takes to drain (only a stall window shorter than a full buffer's
 *   drain sees the second);
 * - `credits`: its requester is stopped at a message the responder's end-to-end credits do not cover;
 * - `timeout`: its local ACK timer is armed with requests outstanding, the answers to which were lost;
 * - `error`: its QP is in the error state;
 * - `unknown`: none of these (the detail gives the QP's state).
 */
export const StallReason = { PAUSED: 'paused', QUEUED: 'queued', CREDITS: 'credits', TIMEOUT: 'timeout', ERROR: 'error', UNKNOWN: 'unknown' } as const;
export type StallReason = (typeof StallReason)[keyof typeof StallReason];

/** A stretch of at least the stall window in which a flow with work posted made no progress. */
export interface StarStall {
  /** The flow's last progress before it (or its start): µs. */
  sinceUs: number;
  /** Its next progress (µs), or null when the stall lasted to the end of the run. */
  untilUs: number | null;
  reason: StallReason;
  detail: string;
}

/**
 * A flow at the end of the run:
 * - `completed`: it had a size and moved all of it;
 * - `stalled`: a stall lasted to the end (`stall`);
 * - `running`: it still had work and was moving (an unlimited flow that ran to the end is running, not completed);
 * - `ended`: its duration ran out with everything it posted completed, short of its size if it had one;
 * - `pending`: it starts after the run ends.
 */
export const FlowState = { COMPLETED: 'completed', STALLED: 'stalled', RUNNING: 'running', ENDED: 'ended', PENDING: 'pending' } as const;
export type FlowState = (typeof FlowState)[keyof typeof FlowState];

export interface StarFlowResult {
  name: string;
  src: string;
  dst: string;
  state: FlowState;
  /** The stall that lasted to the end, or null. */
  stall: StarStall | null;
  /** Every stall of the run, in time order (the last is `stall` when it lasted to the end). */
  stalls: StarStall[];
  /** Payload bytes the flow's WRITEs completed. */
  bytes: number;
  /** Payload rate over the time the flow was active (from its start to its last completion or its end). */
  meanGbps: number;
  /** [time µs at the bin's end, Gb/s of the flow's frames leaving the switch in the bin]. */
  gbpsOverTime: [number, number][];
  /** The reaction point's current rate (Gb/s) at each bin's end; null without congestion control. */
  rateOverTime: [number, number][] | null;
  /** True only for a flow with a size that moved all of it (`state` 'completed'). */
  completed: boolean;
  problems: string[];
}

export interface StarResult {
  /** No flow had a problem (an error completion, a size not moved) and none stalled, or stalls were expected. */
  ok: boolean;
  /** The stall window the flows were judged over (µs). */
  stallWindowUs: number;
  /** The flows that stalled at some time in the run, by name. */
  stalled: string[];
  /** The scenario expected stalls: they do not make the run fail. */
  stallsExpected: boolean;
  hosts: string[];
  durationUs: number;
  seed: number;
  flows: StarFlowResult[];
  /** The busiest output port: the one with the largest queue. */
  queue: { port: string; maxBytes: number; meanBytes: number; overTime: [number, number][] };
  ecnMarked: number;
  cnpsSent: number;
  cnpsHandled: number;
  pfcPauses: number;
  /** When the switch sent its first and its last PFC pause (µs), null when it sent none. */
  pfcPausesUs: { first: number; last: number } | null;
  drops: number;
  /** Request packets the flows' requesters sent again (go-back-N after a drop or a timeout). */
  retransmissions: number;
  steady: SteadyState;
  convergence: Convergence;
}

/**
 * The busiest port from `fromUs` to the end: what a fluid model's fixed point predicts. The
 * per-flow figures (`flowsGbps`, `jainIndex`, `cnpsPerFlowPerMs`) cover the flows in `flows`: those
 * with work over the whole window, that is started by its start, still posting at the end (not
 * ended, not completed inside it) and with no stall overlapping it. The port's figures (queue,
 * frames, marks) count every frame the port sent.
 */
export interface SteadyState {
  fromUs: number;
  toUs: number;
  /** The flows the per-flow figures cover, by name. */
  flows: string[];
  /** Each covered flow's Gb/s of frames leaving the switch (wire bytes of the frames, without preamble and gap), aligned with `flows`. */
  flowsGbps: number[];
  /** Time-weighted mean queue of the busiest port, in bytes. */
  queueMeanBytes: number;
  /** Frames the busiest port sent, their mean size (bytes, without preamble and gap), and the share of them the switch marked CE. */
  frames: number;
  meanFrameBytes: number;
  markProbability: number;
  /** CNPs the notification points of the covered flows sent, per covered flow and ms: the signal DCQCN acts on (0 when none is covered). */
  cnpsPerFlowPerMs: number;
  /** Jain's fairness index of flowsGbps: 1 when equal, 1/N when one flow has everything; null when no flow is covered. */
  jainIndex: number | null;
}

/**
 * When the flows shared the port: every flow within `tolerance` of the flows' mean rate, over
 * windows of `windowUs` sliding by one bin. `firstUs` is the end of the first such window, and
 * `sustainedUs` the end of the window after which every later one is within (null: never).
 * `windowsWithin` is the share of the windows from `firstUs` on that were within.
 */
export interface Convergence {
  windowUs: number;
  tolerance: number;
  firstUs: number | null;
  sustainedUs: number | null;
  windowsWithin: number;
}

/** Host `i`'s name: a, b, c, ... */
export function hostName(i: number): string {
  return i < 26 ? String.fromCharCode(97 + i) : `h${i}`;
}

const ipOf = (i: number): string => `198.18.${Math.floor((i + 1) / 256)}.${(i + 1) % 256}`;
const macOf = (i: number): number => 0x02_00_00_00_00_00 + i + 1;

interface Flow {
  spec: StarFlowSpec;
  name: string;
  qp: QueuePair;
  peer: QueuePair;
  cq: CompletionQueue;
  mr: MemoryRegion;
  remote: MemoryRegion;
  start: number;
  end: number;
  posted: number;
  outstanding: number;
  completedBytes: number;
  lastCompletion: number;
  bins: number[];
  rates: [number, number][];
  problems: string[];
  /** Frame bytes of the flow leaving the switch since the steady window opened. */
  steadyBytes: number;
  /** Its peer's CNPs sent as the steady window opened. */
  steadyCnps: number;
  /** Its last progress (a frame leaving the switch, a completion) or the time it got work after none. */
  quietSince: number;
  stalls: { since: number; until: number | null; reason: StallReason; detail: string }[];
}

/** The counters as the steady window opens, per output port where they are per port. */
interface SteadySnapshot {
  marks: number;
  frames: number[];
  bytes: number[];
  queueIntegral: number[];
}

/**
 * The default stall window: the larger of two bins and four times the longest a frame of a moving
 * flow can take, its wait behind a full buffer at line rate plus the base round trip (four link
 * crossings and the serialization of two frames of the scenario's path MTU).
 */
export function defaultStallWindowNs(s: Pick<StarScenario, 'linkRateBps' | 'bufferBytes' | 'propagationNs' | 'durationNs' | 'binNs' | 'pathMtu'>): number {
  const binNs = s.binNs ?? Math.max(1000, Math.round(s.durationNs / 100));
  const nsPerByte = 8e9 / s.linkRateBps;
  // The largest frame of the scenario's path MTU: its payload plus every RoCE header (within 128 bytes), on the wire.
  const frameWireBytes = wireBytes(mtuBytes(s.pathMtu ?? Mtu.MTU_4096) + 128);
  const longest = s.bufferBytes * nsPerByte + 4 * (s.propagationNs ?? 1000) + 2 * frameWireBytes * nsPerByte;
  return Math.round(Math.max(2 * binNs, 4 * longest));
}

/** Runs `s` to its end and returns what happened. */
export function runStarScenario(s: StarScenario): StarResult {
  const clock = new VirtualClock();
  const n = s.hosts;
  const msg = s.messageBytes ?? 65536;
  const outstanding = s.outstanding ?? 16;
  const binNs = s.binNs ?? Math.max(1000, Math.round(s.durationNs / 100));
  const bins = Math.ceil(s.durationNs / binNs);
  const steadyFrom = Math.min(s.durationNs, Math.max(0, s.steadyFromNs ?? Math.round(s.durationNs / 2)));
  const stallWindow = s.stallWindowNs ?? defaultStallWindowNs(s);
  const nsPerByte = 8e9 / s.linkRateBps;
  const flowByQp = new Map<string, Flow>();
  const flows: Flow[] = [];
  // The steady window opens at the first step boundary at or after steadyFrom.
  let steadyAt = Number.POSITIVE_INFINITY;
  let steadySnapshot: SteadySnapshot | null = null;
  const sw = createStarSwitch({
    clock,
    macs: Array.from({ length: n }, (_, i) => macOf(i)),
    linkRateBps: s.linkRateBps,
    bufferBytes: s.bufferBytes,
    propagationNs: s.propagationNs ?? 1000,
    ecn: s.ecn,
    pfc: s.pfc,
    seed: s.seed,
    capture: (frame, t) => {
      s.capture?.(frame, t);
      const d = decodeFrame(frame, LinkType.Ethernet);
      if (!d.roce || d.bth === null || d.ipv4 === null) return;
      const f = flowByQp.get(`${d.ipv4.dst}/${d.bth.destQp}`);
      const b = Math.min(bins - 1, Math.floor(t / binNs));
      if (f === undefined) return;
      if (b >= 0) f.bins[b]! += frame.length;
      if (t >= steadyAt) f.steadyBytes += frame.length;
      progressed(f, t);
    },
  });
  const congestion: CongestionConfig | undefined =
    s.cc === 'dcqcn'
      ? { np: true, rp: true, lineRateMbps: s.linkRateBps / 1e6, paceUnlimited: true, ...(s.ccParams !== undefined ? { params: s.ccParams } : {}) }
      : undefined;
  const neighbors: Record<string, number> = {};
  for (let i = 0; i < n; i++) neighbors[ipOf(i)] = macOf(i);
  const icrc = fastestIcrcBatch();
  const devices = sw.hosts.map(
    (driver, i) =>
      new Device({
        driver,
        clock,
        ipv4: [ipOf(i)],
        neighbors,
        name: `sim-${hostName(i)}`,
        seed: s.seed * 64 + i,
        icrc,
        ...(congestion !== undefined ? { congestion } : {}),
      }),
  );
  const ipNum = (i: number): number =>
    ipOf(i)
      .split('.')
      .reduce((a, x) => a * 256 + Number(x), 0);
  s.flows.forEach((spec, k) => {
    const a = devices[spec.src]!;
    const b = devices[spec.dst]!;
    const pdA = a.allocPd();
    const pdB = b.allocPd();
    const mr = a.regMr(pdA, new Uint8Array(msg), Access.LOCAL_WRITE);
    const remote = b.regMr(pdB, new Uint8Array(msg), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    const cq = a.createCq(outstanding * 2 + 16);
    const cqB = b.createCq(16);
    const qp = a.createQp(pdA, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: outstanding + 1, maxRecvWr: 1, maxSendSge: 1, maxRecvSge: 1 } });
    const peer = b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
    const ea = endpointOf(a, qp, 1000 + k);
    const eb = endpointOf(b, peer, 5000 + k);
    const o = { pathMtu: s.pathMtu ?? Mtu.MTU_4096, accessFlags: Access.REMOTE_WRITE };
    connectQp(qp, ea, eb, o);
    connectQp(peer, eb, ea, o);
    const start = spec.startNs ?? 0;
    const end = spec.durationNs !== undefined ? start + spec.durationNs : s.durationNs;
    const f: Flow = {
      spec,
      name: `${hostName(spec.src)}>${hostName(spec.dst)}`,
      qp,
      peer,
      cq,
      mr,
      remote,
      start,
      end,
      posted: 0,
      outstanding: 0,
      completedBytes: 0,
      lastCompletion: start,
      bins: new Array<number>(bins).fill(0),
      rates: [],
      problems: [],
      steadyBytes: 0,
      steadyCnps: 0,
      quietSince: start,
      stalls: [],
    };
    flows.push(f);
    flowByQp.set(`${ipNum(spec.dst)}/${peer.qpNum}`, f);
  });
  const step = Math.min(binNs, 10_000);
  let nextBin = binNs;
  /** A frame of `f` left the switch or a WRITE of it completed at `t`: a stall in progress ends. */
  function progressed(f: Flow, t: number): void {
    f.quietSince = t;
    const open = f.stalls[f.stalls.length - 1];
    if (open !== undefined && open.until === null) open.until = t;
  }
  /** Why `f` makes no progress now, read from its QP, its requester and its host's uplink. */
  const stallReason = (f: Flow, now: number): { reason: StallReason; detail: string } => {
    const qp = f.qp;
    const host = hostName(f.spec.src);
    if (qp.state === QpState.ERR) return { reason: StallReason.ERROR, detail: `its QP is in the error state (${qp.errorReason || 'no reason given'})` };
    if (sw.hostPaused(f.spec.src)) return { reason: StallReason.PAUSED, detail: `PFC has host ${host}'s uplink paused` };
    // A pause that ended inside the stall holds the flow still: its frames wait behind the ones that piled up.
    const seen = pausedSeen[f.spec.src]!;
    if (seen >= f.quietSince)
      return { reason: StallReason.PAUSED, detail: `PFC paused host ${host}'s uplink during it (last seen paused at ${fmtUs(seen)} µs)` };
    const backlog = sw.hostBacklog(f.spec.src);
    const queued = sw.stats.ports[f.spec.dst]!.queueBytes;
    const port = `port ${hostName(f.spec.dst)}'s queue holds ${queued} B (${fmtUs(queued * nsPerByte)} µs of sending)`;
    if (backlog.frames > 0)
      return { reason: StallReason.QUEUED, detail: `host ${host}'s transmit queue holds ${backlog.frames} frames (${backlog.bytes} B), ${port}` };
    if (queued > 0 && now - f.quietSince < queued * nsPerByte) return { reason: StallReason.QUEUED, detail: `${port}, more than the stall so far` };
    if (qp.req.creditWait)
      return { reason: StallReason.CREDITS, detail: `its requester waits for end-to-end credits (limit SSN ${qp.req.lsn}, next ${qp.req.ssn + 1})` };
    const c = qp.comp;
    if (c.timer !== null && Number.isFinite(c.deadline)) {
      const fires = c.deadline > now ? `fires at ${fmtUs(c.deadline)} µs` : 'is due';
      return {
        reason: StallReason.TIMEOUT,
        detail: `its local ACK timer (${fmtUs(localAckTimeoutNs(qp.attr.timeout))} µs) ${fires}, requests from PSN ${c.psn} outstanding, ${qp.counters.local_ack_timeout_err} timeouts so far`,
      };
    }
    return { reason: StallReason.UNKNOWN, detail: `QP state ${qp.state}, ${f.outstanding} WRITEs outstanding, no timer armed, host ${host} not paused` };
  };
  /** When each host's uplink was last seen paused, at the end of a step (-1: never). */
  const pausedSeen = new Array<number>(n).fill(-1);
  /** Opens a stall for each flow with work that made no progress for the stall window up to `now`. */
  const findStalls = (now: number): void => {
    for (const f of flows) {
      if (f.outstanding === 0 || now - f.quietSince < stallWindow) continue;
      const last = f.stalls[f.stalls.length - 1];
      if (last !== undefined && last.until === null) continue;
      f.stalls.push({ since: f.quietSince, until: null, ...stallReason(f, now) });
    }
  };
  const post = (f: Flow, now: number): void => {
    // Work after none: the quiet time counts from now.
    if (f.outstanding === 0 && now >= f.start && now < f.end && (f.spec.bytes === undefined || f.posted * msg < f.spec.bytes))
      f.quietSince = Math.max(f.quietSince, now);
    while (f.outstanding < outstanding && now >= f.start && now < f.end && (f.spec.bytes === undefined || f.posted * msg < f.spec.bytes)) {
      const len = f.spec.bytes === undefined ? msg : Math.min(msg, f.spec.bytes - f.posted * msg);
      f.qp.postSend({
        wrId: f.posted++,
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [f.mr.sge(0, len)],
        sendFlags: SendFlags.SIGNALED,
        rdma: { remoteAddr: f.remote.addr(0), rkey: f.remote.rkey },
      });
      f.outstanding++;
    }
  };
  const openSteady = (now: number): SteadySnapshot => {
    steadyAt = now;
    for (const f of flows) f.steadyCnps = f.peer.counters.np_cnp_sent;
    steadySnapshot = {
      marks: sw.stats.ecnMarked,
      frames: sw.stats.ports.map((p) => p.framesOut),
      bytes: sw.stats.ports.map((p) => p.bytesOut),
      queueIntegral: sw.stats.ports.map((_, i) => sw.meanQueueBytes(i) * now),
    };
    return steadySnapshot;
  };
  if (steadyFrom === 0) openSteady(0);
  const reap = (f: Flow, now: number): void => {
    for (const wc of f.cq.poll(64)) {
      f.outstanding--;
      if (wc.status !== 0) {
        if (f.problems.length < 3) f.problems.push(`WRITE #${wc.wrId} completed with status ${wc.status}`);
        continue;
      }
      f.completedBytes += wc.byteLen > 0 ? wc.byteLen : msg;
      f.lastCompletion = now;
      progressed(f, now);
    }
  };
  for (let t = 0; t < s.durationNs; ) {
    const now = clock.now();
    if (steadySnapshot === null && now >= steadyFrom) openSteady(now);
    for (const f of flows) reap(f, now);
    findStalls(now);
    for (const f of flows) post(f, now);
    t = Math.min(s.durationNs, t + step);
    clock.runUntil(t);
    for (let h = 0; h < n; h++) if (sw.hostPaused(h)) pausedSeen[h] = t;
    while (clock.now() >= nextBin && nextBin <= s.durationNs) {
      for (const f of flows) {
        const rp = f.qp.cc?.rp ?? null;
        if (rp !== null) f.rates.push([nextBin / 1000, rp.currentRate / 1000]);
      }
      nextBin += binNs;
    }
  }
  // What completed in the last step counts; then the flows are judged at the end.
  for (const f of flows) reap(f, s.durationNs);
  findStalls(s.durationNs);
  for (const f of flows) {
    const open = f.stalls[f.stalls.length - 1];
    if (open !== undefined && open.until === null) Object.assign(open, stallReason(f, s.durationNs));
  }
  // Which output port queued most: the bottleneck.
  let busiest = 0;
  sw.stats.ports.forEach((p, i) => {
    if (p.maxQueueBytes > (sw.stats.ports[busiest]?.maxQueueBytes ?? 0)) busiest = i;
  });
  const port = sw.stats.ports[busiest]!;
  const qOver: [number, number][] = [];
  {
    let at = 0;
    const samples = port.samples;
    for (let b = 0; b < bins; b++) {
      const binEnd = (b + 1) * binNs;
      let max = 0;
      // The queue as the bin starts, then every change inside it.
      let last = 0;
      while (at < samples.length && samples[at]! < binEnd) {
        last = samples[at + 1]!;
        max = Math.max(max, last);
        at += 2;
      }
      qOver.push([binEnd / 1000, Math.max(max, last)]);
    }
  }
  const sumCounter = (pick: (f: Flow) => number): number => flows.reduce((a, f) => a + pick(f), 0);
  const stallOut = (x: Flow['stalls'][number]): StarStall => ({
    sinceUs: round3(x.since / 1000),
    untilUs: x.until === null ? null : round3(x.until / 1000),
    reason: x.reason,
    detail: x.detail,
  });
  const results: StarFlowResult[] = flows.map((f) => {
    const activeNs = Math.max(1, (f.spec.bytes !== undefined ? f.lastCompletion : Math.min(f.end, s.durationNs)) - f.start);
    const completed = f.spec.bytes !== undefined && f.completedBytes >= f.spec.bytes;
    const short = f.spec.bytes !== undefined && !completed;
    const stalls = f.stalls.map(stallOut);
    const last = stalls[stalls.length - 1];
    const stall = last !== undefined && last.untilUs === null ? last : null;
    const state: FlowState = completed
      ? FlowState.COMPLETED
      : stall !== null
        ? FlowState.STALLED
        : f.start >= s.durationNs
          ? FlowState.PENDING
          : f.outstanding === 0 && f.end < s.durationNs
            ? FlowState.ENDED
            : FlowState.RUNNING;
    return {
      name: f.name,
      src: hostName(f.spec.src),
      dst: hostName(f.spec.dst),
      state,
      stall,
      stalls,
      bytes: f.completedBytes,
      meanGbps: round3((f.completedBytes * 8) / activeNs),
      gbpsOverTime: f.bins.map((b, i) => [((i + 1) * binNs) / 1000, round3((b * 8) / binNs)]),
      rateOverTime: congestion !== undefined ? f.rates.map(([t, r]) => [t, round3(r)]) : null,
      completed,
      problems: short ? [...f.problems, `moved ${f.completedBytes} of ${f.spec.bytes} bytes before the scenario ended`] : f.problems,
    };
  });
  // A window from the very end (steadyFrom = the duration) opens here, empty.
  const snap = steadySnapshot ?? openSteady(s.durationNs);
  const from = Math.min(steadyAt, s.durationNs);
  const span = Math.max(1, s.durationNs - from);
  const steadyFrames = port.framesOut - (snap.frames[busiest] ?? 0);
  // Covered: work over the whole window (started by its start, still posting at the end, not done
  // inside it) and no stall overlapping it.
  const covered = flows.filter(
    (f) =>
      f.start <= from &&
      f.end >= s.durationNs &&
      (f.spec.bytes === undefined || f.completedBytes < f.spec.bytes) &&
      !f.stalls.some((x) => x.since < s.durationNs && (x.until === null || x.until > from)),
  );
  const flowsGbps = covered.map((f) => round3((f.steadyBytes * 8) / span));
  const coveredCnps = covered.reduce((a, f) => a + f.peer.counters.np_cnp_sent - f.steadyCnps, 0);
  const steady: SteadyState = {
    fromUs: from / 1000,
    toUs: s.durationNs / 1000,
    flows: covered.map((f) => f.name),
    flowsGbps,
    queueMeanBytes: Math.round((sw.meanQueueBytes(busiest) * s.durationNs - (snap.queueIntegral[busiest] ?? 0)) / span),
    frames: steadyFrames,
    meanFrameBytes: steadyFrames > 0 ? round3((port.bytesOut - (snap.bytes[busiest] ?? 0)) / steadyFrames) : 0,
    markProbability: steadyFrames > 0 ? (sw.stats.ecnMarked - snap.marks) / steadyFrames : 0,
    cnpsPerFlowPerMs: covered.length > 0 ? round3(coveredCnps / covered.length / (span / 1e6)) : 0,
    jainIndex: covered.length > 0 ? round3(jainIndex(flowsGbps)) : null,
  };
  const convergence = convergenceOf(
    flows.map((f) => f.bins),
    binNs,
    Math.max(1, Math.round((s.convergeWindowNs ?? s.durationNs / 20) / binNs)),
    0.1,
  );
  const stalled = results.filter((r) => r.stalls.length > 0).map((r) => r.name);
  const stallsExpected = s.expectStalls === true;
  const out: StarResult = {
    ok: results.every((r) => r.problems.length === 0) && (stalled.length === 0 || stallsExpected),
    stallWindowUs: stallWindow / 1000,
    stalled,
    stallsExpected,
    hosts: devices.map((_, i) => hostName(i)),
    durationUs: s.durationNs / 1000,
    seed: s.seed,
    flows: results,
    queue: { port: hostName(busiest), maxBytes: port.maxQueueBytes, meanBytes: Math.round(sw.meanQueueBytes(busiest)), overTime: qOver },
    ecnMarked: sw.stats.ecnMarked,
    cnpsSent: sumCounter((f) => f.peer.counters.np_cnp_sent),
    cnpsHandled: sumCounter((f) => f.qp.counters.rp_cnp_handled),
    pfcPauses: sw.stats.pfcPauses,
    pfcPausesUs:
      sw.stats.firstPauseNs !== null && sw.stats.lastPauseNs !== null
        ? { first: round3(sw.stats.firstPauseNs / 1000), last: round3(sw.stats.lastPauseNs / 1000) }
        : null,
    drops: sw.stats.drops,
    retransmissions: sumCounter((f) => f.qp.counters.retransmitted_pkts),
    steady,
    convergence,
  };
  sw.close();
  return out;
}

/** Jain's index (Σx)² / (N·Σx²). */
export function jainIndex(xs: readonly number[]): number {
  const sum = xs.reduce((a, x) => a + x, 0);
  const squares = xs.reduce((a, x) => a + x * x, 0);
  return squares > 0 ? (sum * sum) / (xs.length * squares) : 1;
}

/** The convergence check of `Convergence` over per-flow byte bins, windows of `w` bins. */
export function convergenceOf(flowBins: readonly (readonly number[])[], binNs: number, w: number, tolerance: number): Convergence {
  const bins = flowBins[0]?.length ?? 0;
  let first: number | null = null;
  let lastOut: number | null = null;
  let within = 0;
  let counted = 0;
  for (let end = w; end <= bins; end++) {
    const sums = flowBins.map((b) => {
      let x = 0;
      for (let i = end - w; i < end; i++) x += b[i] ?? 0;
      return x;
    });
    const mean = sums.reduce((a, x) => a + x, 0) / Math.max(1, sums.length);
    const ok = mean > 0 && sums.every((x) => Math.abs(x - mean) <= tolerance * mean);
    if (ok && first === null) first = end;
    if (first !== null) {
      counted++;
      if (ok) within++;
    }
    if (!ok) lastOut = end;
  }
  const usAt = (b: number): number => (b * binNs) / 1000;
  const sustained = first === null ? null : lastOut === null ? first : lastOut < bins ? lastOut + 1 : null;
  return {
    windowUs: usAt(w),
    tolerance,
    firstUs: first === null ? null : usAt(first),
    sustainedUs: sustained === null ? null : usAt(sustained),
    windowsWithin: counted > 0 ? round3(within / counted) : 0,
  };
}

/** ns as µs, to three decimals. */
function fmtUs(ns: number): string {
  return String(round3(ns / 1000));
}

/** `x` to three decimals, as the figures of a result are given. */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
