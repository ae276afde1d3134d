/**
 * One perftest test on a `Device`, as ib_write_bw, ib_read_bw, ib_send_bw,
 * ib_atomic_bw, ib_write_lat, ib_read_lat or ib_send_lat run it: the same
 * out-of-band conversation (stack/oob/perftest-session.ts), the same QP
 * attributes and defaults (perftest_parameters.h, perftest_resources.c), the
 * same traffic pattern, so either end can be the real tool.
 *
 * Defaults (perftest_parameters.c): one RC QP; message size 65536 for
 * bandwidth, 2 for latency, 8 for atomics; 5000 iterations for write
 * bandwidth, 1000 otherwise; tx depth 128 (bandwidth) or 1 (latency); rx
 * depth 512 for SEND; CQ moderation 100 (1 above 8 KiB); QP timeout 14,
 * retry 7, RNR retry 7, min RNR timer 12, GRH hop limit 255; outstanding
 * READs/atomics = the device maximum (128, like rxe) for READ and atomic
 * tests, 1 otherwise. Each message goes to the next cache-line-aligned slot
 * of a cycle buffer (page size) when it fits twice, as perftest does.
 *
 * The loops poll completion queues and yield to the event loop between polls,
 * so the same code runs on a RealClock (a real NIC driver) and on a
 * VirtualClock driven by `pumpVirtualClock` (both ends in one process).
 */
import { RoceError } from '../../base/roce-error';
import { internalError } from '../../base/programming-error';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import { Access, QpState, QpType, SendFlags, WC_STATUS_NAMES, WcStatus, WrOpcode, mtuBytes, mtuFromBytes, type Mtu, type WorkCompletion } from '../../stack/types';
import type { SendWr } from '../../stack/work-request';
import { isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { OobError, OobErrorCode, TcpChannel, type OobListener } from '../oob/tcp-channel';
import { PINGPONG_DEFAULT_PORT } from '../oob/pingpong-messages';
import { type BwReport, type PerftestDest, type PerftestVersion, DEFAULT_CACHE_LINE_SIZE, DEFAULT_CYCLE_BUFFER, checkBwReport, emptyBwReport } from '../oob/perftest-messages';
import { type PerftestLocalSide, type PerftestRole, type PerftestVerb, type SysData, PerftestOob, PerftestVerb as Verb, executeSession, perftestBinary, sessionSteps } from '../oob/perftest-session';
import { idleWaitFor } from '../host/clock-pump';
import type { Counters } from '../../stack/counters';

export const PerftestErrorCode = {
  /** A parameter is out of range or not allowed for the test. */
  CONFIG: 'ROCE_ERR_PERFTEST_CONFIG',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_PERFTEST_COMPLETION',
  /** The test made no progress within the run timeout. */
  TIMEOUT: 'ROCE_ERR_PERFTEST_TIMEOUT',
  /** The peer's QP attributes cannot work with this side's (GID types, MTU). */
  INCOMPATIBLE: 'ROCE_ERR_PERFTEST_INCOMPATIBLE',
} as const;
export type PerftestErrorCode = (typeof PerftestErrorCode)[keyof typeof PerftestErrorCode];

export class PerftestError extends RoceError<PerftestErrorCode> {
  readonly field: string | undefined;
  constructor(code: PerftestErrorCode, message: string, field?: string) {
    super(code, message);
    this.field = field;
  }
}

export type AtomicType = 'FETCH_AND_ADD' | 'CMP_AND_SWAP';

export interface PerftestConfig {
  verb: PerftestVerb;
  lat: boolean;
  role: PerftestRole;
  /** Client: the server's address (as for the tools, a server runs without one). */
  server?: string;
  /** TCP port (default 18515). */
  port?: number;
  /** Server: address to listen on (default all IPv4 addresses). */
  bindHost?: string;
  /** Server: an already listening socket (tests), used instead of port/bindHost. */
  listener?: OobListener;
  /** Called once the server listens. */
  onListening?: (port: number) => void;
  size?: number;
  iters?: number;
  /**
   * perftest -D: a bandwidth test that runs for this many seconds instead of a number of
   * iterations, measured between `marginS` after the start and `marginS` before the end
   * (perftest -f, default 2), so start-up and wind-down stay out of the figures. Bandwidth tests:
   * write, read and atomic (the client measures, the server takes its report) and send (each side
   * measures; give both the same duration, as with perftest).
   */
  durationS?: number;
  marginS?: number;
  /** Path MTU in bytes (default: what the link carries). */
  mtu?: number;
  /** Source GID index (default: the first IPv4-mapped GID). */
  gidIndex?: number;
  txDepth?: number;
  rxDepth?: number;
  atomicType?: AtomicType;
  /** QP local ACK timeout exponent (perftest -u, default 14). */
  qpTimeout?: number;
  /** GRH traffic class (perftest --tclass). */
  trafficClass?: number;
  /** Fill every buffer with a known pattern and check what arrives (both ends must be this implementation). */
  verify?: boolean;
  /** Report bandwidth to the peer in Gb/s instead of MB/s (perftest --report_gbits). */
  reportGbits?: boolean;
  /** perftest --dont_xchg_versions: skip the version, system-data and MTU exchanges. */
  dontXchgVersions?: boolean;
  connectTimeoutMs?: number;
  /** Every out-of-band read during set-up (default 10 s). */
  stepTimeoutMs?: number;
  /** The measured loop, and any read that waits while the peer runs (default 5 min). */
  runTimeoutMs?: number;
  /** Called with the peer's GID before the QP is connected (e.g. to learn its MAC from the host's neighbour table). */
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
}

export interface LatencyStats {
  min: number;
  p50: number;
  p99: number;
  max: number;
  avg: number;
}

export interface PerftestResult {
  ok: boolean;
  test: string;
  role: PerftestRole;
  verb: PerftestVerb;
  lat: boolean;
  msgSize: number;
  /** Iterations run (duration mode: the messages posted; the measured ones are `messages`). */
  iterations: number;
  /** Duration mode: the -D seconds; null for a run of a number of iterations. */
  durationS: number | null;
  /** Bytes this side moved (bandwidth servers of WRITE/READ/atomic: what the client reported). */
  bytes: number;
  messages: number;
  seconds: number;
  gbps: number;
  mpps: number;
  /** One-way latency (half the round trip for WRITE and SEND, the whole READ) in microseconds. */
  latencyUs: LatencyStats | null;
  /** Where the numbers come from: this side's own loop, the client's report, or nowhere (the ib_read_lat server). */
  measured: 'local' | 'peer-report' | 'none';
  mtu: number;
  peerVersion: string;
  local: { qpn: number; psn: number; gid: string; rkey: number; vaddr: string };
  remote: { qpn: number; psn: number; gid: string; rkey: number; vaddr: string; outReads: number };
  verify: { enabled: boolean; bytesChecked: number; mismatches: number };
  oob: { messagesOut: number; messagesIn: number; bytesOut: number; bytesIn: number };
  /** The QP's counters (rxe names), the ones that are not zero. */
  counters: Partial<Counters>;
  problems: string[];
}

/** The counters of `c` that are not zero. */
export function nonZeroCounters(c: Counters): Partial<Counters> {
  const out: Partial<Counters> = {};
  for (const [k, v] of Object.entries(c) as [keyof Counters, number][]) if (v !== 0) out[k] = v;
  return out;
}

const MIN_ITERS = 5;
/** perftest's default margin of duration mode (-f, DEF_MARGIN... "default=2sec" in its help). */
const DEFAULT_MARGIN_S = 2;
const MAX_SIZE = 1 << 28;
const MSG_SIZE_CQ_MOD_LIMIT = 8192;
const DEVICE_MAX_RD_ATOMIC = 128;
const MIN_RNR_TIMER = 12;

export interface ResolvedConfig {
  verb: PerftestVerb;
  lat: boolean;
  role: PerftestRole;
  size: number;
  /** Iterations; in duration mode the upper bound (1e9), the run ends by time. */
  iters: number;
  /** Duration mode (perftest -D): seconds to run, and the margin left out at each end; 0 = iterations mode. */
  durationS: number;
  marginS: number;
  mtu: Mtu;
  gidIndex: number;
  txDepth: number;
  rxDepth: number;
  cqMod: number;
  outReads: number;
  atomicType: AtomicType;
  qpTimeout: number;
  trafficClass: number;
  verify: boolean;
}

function configError(field: string, why: string): PerftestError {
  return new PerftestError(PerftestErrorCode.CONFIG, `${field} ${why}`, field);
}

/** Applies perftest's defaults and checks (parser() and force_dependecies()). */
export function resolveConfig(dev: Device, c: PerftestConfig): ResolvedConfig {
  const { verb, lat, role } = c;
  if (lat && verb === Verb.ATOMIC) throw configError('test', 'atomic latency (ib_atomic_lat) is not implemented');
  const isAtomic = verb === Verb.ATOMIC;
  const size = c.size ?? (isAtomic ? 8 : lat ? 2 : 65536);
  if (isAtomic && size !== 8) throw configError('size', 'cannot be changed for atomic tests (always 8)');
  if (!Number.isInteger(size) || size < 1 || size > MAX_SIZE) throw configError('size', `must be 1..${MAX_SIZE}, got ${size}`);
  const durationS = c.durationS ?? 0;
  const marginS = c.marginS ?? (durationS > 0 ? DEFAULT_MARGIN_S : 0);
  if (c.durationS !== undefined) {
    if (!(durationS > 0 && durationS <= 86_400)) throw configError('duration', `must be more than 0 and at most 86400 seconds, got ${durationS}`);
    if (lat) throw configError('duration', 'applies to bandwidth tests (duration mode of the latency tests is not implemented)');
    if (c.iters !== undefined) throw configError('duration', 'and iterations (-n) cannot be combined');
    if (c.verify === true && verb === Verb.ATOMIC) throw configError('duration', 'and --verify cannot be combined for atomics (the server checks the sums of a known number of iterations)');
  }
  if (c.marginS !== undefined && c.durationS === undefined) throw configError('margin', 'applies in duration mode (-D) only');
  if (!(marginS >= 0) || (durationS > 0 && 2 * marginS >= durationS)) {
    throw configError('margin', `must be at least 0 and less than half the duration (${durationS} s), got ${marginS}`);
  }
  const iters = durationS > 0 ? 1e9 : (c.iters ?? (!lat && verb === Verb.WRITE ? 5000 : 1000));
  if (!Number.isInteger(iters) || iters < MIN_ITERS || iters > 1e9) throw configError('iters', `must be at least ${MIN_ITERS}, got ${iters}`);
  const maxMtu = dev.maxMtu();
  let mtu: Mtu = maxMtu;
  if (c.mtu !== undefined) {
    const m = mtuFromBytes(c.mtu);
    if (m === undefined) throw configError('mtu', `must be 256, 512, 1024, 2048 or 4096, got ${c.mtu}`);
    if (m > maxMtu) throw configError('mtu', `${c.mtu} is more than the link carries (${mtuBytes(maxMtu)})`);
    mtu = m;
  }
  const gidIndex = c.gidIndex ?? Math.max(0, dev.gids.findIndex(isIpv4MappedGid));
  if (!Number.isInteger(gidIndex) || gidIndex < 0 || gidIndex >= dev.gids.length) throw configError('gidIndex', `${gidIndex} is not in the GID table (${dev.gids.length} entries)`);
  let txDepth = c.txDepth ?? (lat ? 1 : 128);
  if (!Number.isInteger(txDepth) || txDepth < 1 || txDepth > 1 << 15) throw configError('txDepth', `must be 1..32768, got ${txDepth}`);
  txDepth = Math.min(txDepth, iters);
  const recv = verb === Verb.SEND;
  let rxDepth = c.rxDepth ?? (recv ? 512 : 1);
  if (!Number.isInteger(rxDepth) || rxDepth < 1 || rxDepth > 1 << 15) throw configError('rxDepth', `must be 1..32768, got ${rxDepth}`);
  if (recv) rxDepth = Math.min(rxDepth, iters);
  let cqMod = lat ? 1 : size > MSG_SIZE_CQ_MOD_LIMIT ? 1 : 100;
  cqMod = Math.min(cqMod, txDepth);
  const qpTimeout = c.qpTimeout ?? 14;
  if (!Number.isInteger(qpTimeout) || qpTimeout < 0 || qpTimeout > 31) throw configError('qpTimeout', `must be 0..31, got ${qpTimeout}`);
  const trafficClass = c.trafficClass ?? 0;
  if (!Number.isInteger(trafficClass) || trafficClass < 0 || trafficClass > 255) throw configError('trafficClass', `must be 0..255, got ${trafficClass}`);
  return {
    verb,
    lat,
    role,
    size,
    iters,
    durationS,
    marginS,
    mtu,
    gidIndex,
    txDepth,
    rxDepth,
    cqMod,
    outReads: verb === Verb.READ || isAtomic ? DEVICE_MAX_RD_ATOMIC : 1,
    atomicType: c.atomicType ?? 'FETCH_AND_ADD',
    qpTimeout,
    trafficClass,
    verify: c.verify ?? false,
  };
}

/** perftest's INC(): a slot is the message rounded up to whole cache lines (at least one). */
function slotStride(size: number, cacheLine: number): number {
  return size > cacheLine ? Math.ceil(size / cacheLine) * cacheLine : cacheLine;
}

/** The verify pattern: byte `j` of slot `s`. */
function patternByte(slot: number, j: number): number {
  return (slot * 29 + j * 7 + 0x5a) & 0xff;
}

function pattern(slot: number, length: number): Uint8Array {
  const p = new Uint8Array(length);
  for (let j = 0; j < length; j++) p[j] = patternByte(slot, j);
  return p;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

export function latencyStats(samplesUs: readonly number[]): LatencyStats | null {
  if (samplesUs.length === 0) return null;
  const s = [...samplesUs].sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  return {
    min: round(s[0] as number),
    p50: round(percentile(s, 0.5)),
    p99: round(percentile(s, 0.99)),
    max: round(s[s.length - 1] as number),
    avg: round(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

/**
 * perftest's duration mode (-D, -f): a run from `t0` for `durationS` seconds, measured from
 * `marginS` after its start to `marginS` before its end. `note` records the count of messages
 * done when the clock first passes each mark, and says whether the run goes on.
 */
class MeasuringWindow {
  startCount = -1;
  endCount = -1;
  startedAt = 0;
  endedAt = 0;
  private readonly from: number;
  private readonly to: number;
  private readonly end: number;

  constructor(t0: number, durationS: number, marginS: number) {
    this.from = t0 + marginS * 1e9;
    this.to = t0 + (durationS - marginS) * 1e9;
    this.end = t0 + durationS * 1e9;
  }

  /** Records `count` at `now` against the marks; false once the run's time is up. */
  note(now: number, count: number): boolean {
    if (this.startCount < 0 && now >= this.from) {
      this.startCount = count;
      this.startedAt = now;
    }
    if (this.endCount < 0 && now >= this.to) {
      this.endCount = count;
      this.endedAt = now;
    }
    return now < this.end;
  }

  /** Ends the window at `at` with `count` if the clock never reached its end mark. */
  close(at: number, count: number): void {
    if (this.startCount >= 0 && this.endCount < 0) {
      this.endCount = count;
      this.endedAt = at;
    }
  }
}

/** The local side of one test: resources, QP connection and the measured loops. */
class PerftestSide implements PerftestLocalSide {
  readonly sysData: SysData = { cycleBuffer: DEFAULT_CYCLE_BUFFER, cacheLineSize: DEFAULT_CACHE_LINE_SIZE };
  readonly mtu: Mtu;
  readonly binary: string;
  agreedMtu: Mtu;
  peerVersion: PerftestVersion | null = null;
  cycle = DEFAULT_CYCLE_BUFFER;
  cacheLine = DEFAULT_CACHE_LINE_SIZE;
  stride = 0;
  /** Bytes of each half (perftest BUFF_SIZE): local area, then the area the peer writes to / reads from. */
  half = 0;
  slots = 1;
  recvArea = 0;
  buf = new Uint8Array(0);
  mr: MemoryRegion | null = null;
  qp: QueuePair | null = null;
  sendCq: CompletionQueue | null = null;
  recvCq: CompletionQueue | null = null;
  psn = 0;
  remote: PerftestDest | null = null;
  peerReport: BwReport | null = null;
  myReport: BwReport = emptyBwReport();
  problems: string[] = [];
  verifyBytes = 0;
  verifyMismatches = 0;
  // measurements
  started = 0;
  finished = 0;
  messages = 0;
  /** Duration mode: every message posted (the measured ones are `messages`). */
  posted = 0;
  /** True once the peer's next out-of-band message has arrived (set by runPerftest). */
  peerDone: () => boolean = () => false;
  latSamplesNs: number[] = [];
  private readonly rttFactor: number;
  /** Waits when there is nothing to poll (spins by default; sleeps until frames arrive on a host device not in busy-poll mode). */
  private readonly idle: () => Promise<void>;

  constructor(
    readonly dev: Device,
    readonly rc: ResolvedConfig,
    readonly cfg: PerftestConfig,
  ) {
    this.idle = idleWaitFor(dev);
    this.mtu = rc.mtu;
    this.agreedMtu = rc.mtu;
    this.binary = perftestBinary(rc.verb, rc.lat);
    this.rttFactor = rc.verb === Verb.READ || rc.verb === Verb.ATOMIC ? 1 : 2;
  }

  private get runTimeoutMs(): number {
    return this.cfg.runTimeoutMs ?? 300_000;
  }

  slotIndex(k: number): number {
    return this.rc.size <= this.cycle / 2 ? k % this.slots : 0;
  }

  slotOffset(k: number): number {
    return this.slotIndex(k) * this.stride;
  }

  setup(agreed: { sysData: SysData; mtu: Mtu; peerVersion: PerftestVersion }): void {
    const { rc, dev } = this;
    this.peerVersion = agreed.peerVersion;
    this.agreedMtu = agreed.mtu;
    this.cycle = agreed.sysData.cycleBuffer;
    this.cacheLine = agreed.sysData.cacheLineSize;
    this.stride = slotStride(rc.size, this.cacheLine);
    this.slots = rc.size <= this.cycle / 2 ? Math.max(1, Math.floor(this.cycle / this.stride)) : 1;
    this.half = Math.max(rc.size, this.cycle, this.slots * this.stride);
    const sendServerVerify = rc.verb === Verb.SEND && !rc.lat && rc.role === 'server' && rc.verify;
    this.recvArea = 2 * this.half;
    const total = this.recvArea + (sendServerVerify ? rc.rxDepth * this.stride : 0);
    this.buf = new Uint8Array(total);
    const pd = dev.allocPd();
    this.mr = dev.regMr(pd, this.buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
    this.sendCq = dev.createCq(Math.max(16, rc.txDepth * 2));
    this.recvCq = dev.createCq(Math.max(16, rc.rxDepth * 2));
    this.qp = dev.createQp(pd, {
      qpType: QpType.RC,
      sendCq: this.sendCq,
      recvCq: this.recvCq,
      cap: { maxSendWr: Math.max(rc.txDepth, 2), maxRecvWr: Math.max(rc.rxDepth, 2), maxSendSge: 1, maxRecvSge: 1 },
    });
    // ctx_init leaves the QP in INIT (ctx_modify_qp_to_init), so receives can be posted before connecting.
    this.qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC });
    this.psn = dev.randomPsn();
    if (rc.verify) this.fillForVerify();
  }

  /** What each side puts in its buffers before the test when verifying. */
  private fillForVerify(): void {
    const { rc } = this;
    const used = Math.min(rc.iters, this.slots);
    const sender = (rc.role === 'client' && (rc.verb === Verb.WRITE || rc.verb === Verb.SEND)) || (rc.lat && rc.verb !== Verb.READ);
    const readTarget = rc.role === 'server' && rc.verb === Verb.READ;
    if (sender) {
      const n = rc.lat ? 1 : used;
      for (let s = 0; s < n; s++) this.buf.set(pattern(s, rc.size), s * this.stride);
    }
    if (readTarget) {
      const n = rc.lat ? 1 : used;
      for (let s = 0; s < n; s++) this.buf.set(pattern(s, rc.size), this.half + s * this.stride);
    }
  }

  dest(): PerftestDest {
    const mr = this.mr;
    if (mr === null || this.qp === null) throw internalError('key message before set-up');
    const gid = this.dev.gids[this.rc.gidIndex] as Uint8Array;
    return { lid: 0, outReads: this.rc.outReads, qpn: this.qp.qpNum, psn: this.psn, rkey: mr.rkey, vaddr: mr.addr(this.half), tailMarkersVaddr: 0n, gid, srqn: 0 };
  }

  onPeerDest(_i: number, d: PerftestDest, purpose: string): void {
    if (this.remote === null) {
      if (d.gid === null) throw new OobError(OobErrorCode.MALFORMED, 'perftest key message: the peer sent no GID, which RoCE needs', 'gid');
      const mine = this.dev.gids[this.rc.gidIndex] as Uint8Array;
      if (isIpv4MappedGid(mine) !== isIpv4MappedGid(d.gid)) {
        throw new PerftestError(PerftestErrorCode.INCOMPATIBLE, `GID types differ: this side uses ${ipv6ToString(mine)}, the peer ${ipv6ToString(d.gid)} (use GIDs of the same IP version, perftest -x)`, 'gid');
      }
      if (d.outReads < 1) throw new OobError(OobErrorCode.MALFORMED, `perftest key message: field out_reads must be at least 1, got ${d.outReads}`, 'out_reads');
      if (d.qpn === 0 || d.qpn === 1) throw new OobError(OobErrorCode.MALFORMED, `perftest key message: field qpn must name a user QP, got ${d.qpn}`, 'qpn');
      this.remote = d;
      return;
    }
    // Later key messages repeat the same values (they are barriers); a change means the peer is confused.
    const r = this.remote;
    for (const [field, a, b] of [
      ['qpn', r.qpn, d.qpn],
      ['psn', r.psn, d.psn],
      ['rkey', r.rkey, d.rkey],
      ['vaddr', r.vaddr, d.vaddr],
    ] as const) {
      if (a !== b) throw new OobError(OobErrorCode.MALFORMED, `perftest key message (${purpose}): field ${field} changed from 0x${a.toString(16)} to 0x${b.toString(16)}`, field);
    }
  }

  async connect(): Promise<void> {
    const { qp, remote, rc } = this;
    if (qp === null || remote === null || remote.gid === null) throw internalError('connect before the key exchange');
    if (this.cfg.beforeConnect !== undefined) await this.cfg.beforeConnect(remote.gid);
    qp.modify({
      qpState: QpState.RTR,
      ahAttr: { dgid: remote.gid, sgidIndex: rc.gidIndex, hopLimit: 0xff, trafficClass: rc.trafficClass },
      pathMtu: this.agreedMtu,
      destQpNum: remote.qpn,
      rqPsn: remote.psn,
      maxDestRdAtomic: rc.outReads,
      minRnrTimer: MIN_RNR_TIMER,
    });
    // ctx_connect: only a side that sends goes on to RTS (latency tests, and the client of a bandwidth test).
    if (rc.lat || rc.role === 'client') {
      qp.modify({ qpState: QpState.RTS, sqPsn: this.psn, timeout: rc.qpTimeout, retryCnt: 7, rnrRetry: 7, maxRdAtomic: Math.min(remote.outReads, DEVICE_MAX_RD_ATOMIC) });
    }
  }

  postReceives(): void {
    const { rc, qp, mr } = this;
    if (qp === null || mr === null) return;
    for (let j = 0; j < rc.rxDepth; j++) qp.postRecv({ wrId: j, sgList: [mr.sge(this.recvOffset(j), rc.size)] });
  }

  private recvOffset(j: number): number {
    const { rc } = this;
    if (rc.lat) return this.half;
    if (rc.verify) return this.recvArea + j * this.stride;
    return this.half + (j % this.slots) * this.stride;
  }

  report(): BwReport {
    return this.myReport;
  }

  onPeerReport(r: BwReport): void {
    this.peerReport = r;
  }

  // ------------------------------------------------------------ loops

  async run(): Promise<void> {
    const { rc } = this;
    if (!rc.lat) {
      if (rc.role === 'client') await this.runBwClient();
      else if (rc.verb === Verb.SEND) await this.runSendBwServer();
      return;
    }
    if (rc.verb === Verb.WRITE) await this.runWriteLat();
    else if (rc.verb === Verb.READ) await this.runReadLat();
    else await this.runSendLat();
  }

  private check(wc: WorkCompletion, what: string): void {
    if (wc.status !== WcStatus.SUCCESS) {
      throw new PerftestError(PerftestErrorCode.COMPLETION, `${this.binary}: ${what} #${wc.wrId} completed with ${WC_STATUS_NAMES[wc.status] ?? wc.status}${wc.vendorErr ? ` (${wc.vendorErr})` : ''}`, 'completion');
    }
  }

  /** Polls `cq` until it yields at least one completion. */
  private async pollSome(cq: CompletionQueue, what: string, max = 64): Promise<WorkCompletion[]> {
    const deadline = Date.now() + this.runTimeoutMs;
    for (;;) {
      const wcs = cq.poll(max);
      if (wcs.length > 0) return wcs;
      this.assertAlive(what);
      if (Date.now() > deadline) throw new PerftestError(PerftestErrorCode.TIMEOUT, `${this.binary}: no completion within ${this.runTimeoutMs} ms while waiting for ${what}`, 'completion');
      await this.idle();
    }
  }

  private async waitFor(cond: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + this.runTimeoutMs;
    while (!cond()) {
      this.assertAlive(what);
      if (Date.now() > deadline) throw new PerftestError(PerftestErrorCode.TIMEOUT, `${this.binary}: timed out after ${this.runTimeoutMs} ms waiting for ${what}`, 'completion');
      await this.idle();
    }
  }

  private assertAlive(what: string): void {
    const qp = this.qp;
    if (qp !== null && qp.state === QpState.ERR) {
      // The error completion (if any) explains it; report the QP's reason when there is none.
      const wcs = [...(this.sendCq?.poll(1) ?? []), ...(this.recvCq?.poll(1) ?? [])];
      for (const wc of wcs) this.check(wc, what);
      throw new PerftestError(PerftestErrorCode.COMPLETION, `${this.binary}: QP 0x${qp.qpNum.toString(16)} went to the error state while waiting for ${what}: ${qp.errorReason}`, 'qp');
    }
  }

  private sendWr(k: number, signaled: boolean): SendWr {
    const { rc, mr, remote } = this;
    if (mr === null || remote === null) throw internalError('post before connect');
    const off = this.slotOffset(k);
    const flags = signaled ? SendFlags.SIGNALED : 0;
    switch (rc.verb) {
      case Verb.WRITE:
        return { wrId: k, opcode: WrOpcode.RDMA_WRITE, sgList: [mr.sge(off, rc.size)], sendFlags: flags, rdma: { remoteAddr: remote.vaddr + BigInt(off), rkey: remote.rkey } };
      case Verb.READ:
        return { wrId: k, opcode: WrOpcode.RDMA_READ, sgList: [mr.sge(off, rc.size)], sendFlags: flags, rdma: { remoteAddr: remote.vaddr + BigInt(off), rkey: remote.rkey } };
      case Verb.SEND:
        return { wrId: k, opcode: WrOpcode.SEND, sgList: [mr.sge(off, rc.size)], sendFlags: flags };
      case Verb.ATOMIC: {
      const fa = rc.atomicType === 'FETCH_AND_ADD';
        return {
          wrId: k,
          opcode: fa ? WrOpcode.ATOMIC_FETCH_AND_ADD : WrOpcode.ATOMIC_CMP_AND_SWP,
          sgList: [mr.sge(off, 8)],
          sendFlags: flags,
          atomic: { remoteAddr: remote.vaddr + BigInt(off), rkey: remote.rkey, compareAdd: fa ? 1n : 0n, swap: 0n },
        };
      }
    }
  }

  /** run_iter_bw: keep up to tx depth requests outstanding, every cq_mod-th (and the last) signaled. */
  private async runBwClient(): Promise<void> {
    const { rc } = this;
    if (rc.durationS > 0) {
      await this.runBwClientForDuration();
      return;
    }
    const qp = this.qp as QueuePair;
    const cq = this.sendCq as CompletionQueue;
    let posted = 0;
    let completed = 0;
    const clock = this.dev.clock;
    this.started = clock.now();
    while (completed < rc.iters) {
      if (posted < rc.iters && posted - completed < rc.txDepth) {
        const batch: SendWr[] = [];
        while (posted < rc.iters && posted - completed < rc.txDepth) {
          const k = posted++;
          batch.push(this.sendWr(k, (k + 1) % rc.cqMod === 0 || k === rc.iters - 1));
        }
        qp.postSend(batch);
      }
      for (const wc of await this.pollSome(cq, `the completion of ${rc.verb.toUpperCase()} #${completed}`)) {
        this.check(wc, rc.verb.toUpperCase());
        completed = Number(wc.wrId) + 1;
      }
    }
    this.finished = clock.now();
    this.messages = rc.iters;
    this.reportMeasured();
  }

  /**
   * Duration mode (perftest -D, run_iter_bw with a duration): requests go out for `durationS`; the
   * figures count the messages completed between `marginS` after the start and `marginS` before
   * the end. Then posting stops, and what is outstanding completes (every message posted lands).
   */
  private async runBwClientForDuration(): Promise<void> {
    const { rc } = this;
    const qp = this.qp as QueuePair;
    const cq = this.sendCq as CompletionQueue;
    const clock = this.dev.clock;
    const window = new MeasuringWindow(clock.now(), rc.durationS, rc.marginS);
    let posted = 0;
    let completed = 0;
    const reap = async (): Promise<void> => {
      for (const wc of await this.pollSome(cq, `the completion of ${rc.verb.toUpperCase()} #${completed}`)) {
        this.check(wc, rc.verb.toUpperCase());
        completed = Number(wc.wrId) + 1;
      }
    };
    while (window.note(clock.now(), completed)) {
      if (posted - completed < rc.txDepth) {
        const batch: SendWr[] = [];
        while (posted - completed < rc.txDepth) {
          const k = posted++;
          batch.push(this.sendWr(k, (k + 1) % rc.cqMod === 0)); // every cq_mod-th signaled
        }
        qp.postSend(batch);
      }
      await reap();
    }
    // The tail may be unsignaled: one more signaled request completes it (RC completes in order).
    if (completed < posted && posted % rc.cqMod !== 0) qp.postSend(this.sendWr(posted++, true));
    while (completed < posted) await reap();
    this.posted = posted;
    this.takeWindow(window, 'the run ended before its measuring window');
    this.reportMeasured();
  }

  /** The figures of a duration-mode run: what its measuring window saw. */
  private takeWindow(w: MeasuringWindow | null, missing: string): void {
    if (w === null || w.startCount < 0 || w.endCount < 0) throw new PerftestError(PerftestErrorCode.TIMEOUT, `${this.binary}: ${missing}`, 'completion');
    this.started = w.startedAt;
    this.finished = w.endedAt;
    this.messages = w.endCount - w.startCount;
  }

  /** The bandwidth report this side measured (`messages` between `started` and `finished`), as perftest sends it. */
  private reportMeasured(): void {
    const { rc } = this;
    const secs = Math.max(1e-9, (this.finished - this.started) / 1e9);
    const fmt = this.cfg.reportGbits ? 125_000_000 : 0x100000;
    const bwAvg = (rc.size * this.messages) / secs / fmt;
    this.myReport = { size: BigInt(rc.size), iters: BigInt(this.messages), bwPeak: bwAvg, bwAvg, msgRateAvg: this.messages / secs / 1e6 };
  }

  /** run_iter_bw_server: count receives, re-posting each buffer while more messages are due. */
  private async runSendBwServer(): Promise<void> {
    const { rc } = this;
    if (rc.durationS > 0) {
      await this.runSendBwServerForDuration();
      return;
    }
    const qp = this.qp as QueuePair;
    const mr = this.mr as MemoryRegion;
    const cq = this.recvCq as CompletionQueue;
    let received = 0;
    let postedTotal = rc.rxDepth;
    const expected = rc.verify ? Array.from({ length: this.slots }, (_, s) => pattern(s, rc.size)) : [];
    while (received < rc.iters) {
      for (const wc of await this.pollSome(cq, `SEND #${received}`)) {
        this.check(wc, 'receive');
        if (received === 0) this.started = this.dev.clock.now();
        const j = Number(wc.wrId);
        if (rc.verify) this.verifyRange(this.recvOffset(j), expected[this.slotIndex(received)] as Uint8Array, wc.byteLen, `SEND #${received}`);
        received++;
        if (postedTotal < rc.iters) {
          qp.postRecv({ wrId: j, sgList: [mr.sge(this.recvOffset(j), rc.size)] });
          postedTotal++;
        }
      }
    }
    this.finished = this.dev.clock.now();
    this.messages = received;
  }

  /**
   * The send test's server in duration mode: receives (re-posting every buffer) and measures the
   * messages that arrive between `marginS` after the first one and `marginS` before the duration
   * ends. It keeps receiving after that until the client has said it is done (its closing
   * message is on the out-of-band channel), so the client's last SENDs always find a buffer.
   */
  private async runSendBwServerForDuration(): Promise<void> {
    const { rc } = this;
    const qp = this.qp as QueuePair;
    const mr = this.mr as MemoryRegion;
    const cq = this.recvCq as CompletionQueue;
    const clock = this.dev.clock;
    const expected = rc.verify ? Array.from({ length: this.slots }, (_, s) => pattern(s, rc.size)) : [];
    let received = 0;
    let window: MeasuringWindow | null = null; // opens with the first SEND
    let lastAt = 0;
    let deadline = Date.now() + this.runTimeoutMs;
    for (;;) {
      const wcs = cq.poll(64);
      const now = clock.now();
      window?.note(now, received);
      if (wcs.length === 0) {
        // The client decides the end: its closing message comes after its last SEND completed.
        if (this.peerDone()) break;
        this.assertAlive(`SEND #${received}`);
        if (Date.now() > deadline) throw new PerftestError(PerftestErrorCode.TIMEOUT, `${this.binary}: no SEND arrived within ${this.runTimeoutMs} ms (received ${received})`, 'completion');
        await this.idle();
        continue;
      }
      deadline = Date.now() + this.runTimeoutMs;
      window ??= new MeasuringWindow(now, rc.durationS, rc.marginS);
      for (const wc of wcs) {
        this.check(wc, 'receive');
        const j = Number(wc.wrId);
        if (rc.verify) this.verifyRange(this.recvOffset(j), expected[this.slotIndex(received)] as Uint8Array, wc.byteLen, `SEND #${received}`);
        received++;
        lastAt = now;
        qp.postRecv({ wrId: j, sgList: [mr.sge(this.recvOffset(j), rc.size)] });
      }
    }
    // The client's run may end a little before this side's clock reaches the window's end (it started first).
    window?.close(lastAt, received);
    this.takeWindow(window, 'the client stopped before the measuring window began');
  }

  /** run_iter_lat_write: ping-pong by RDMA WRITE; each side watches the last byte of its buffer. The server writes first. */
  private async runWriteLat(): Promise<void> {
    const { rc } = this;
    const qp = this.qp as QueuePair;
    const cq = this.sendCq as CompletionQueue;
    const pollAt = this.half + rc.size - 1;
    const postAt = rc.size - 1;
    const expected = rc.verify ? pattern(0, rc.size - 1) : null;
    const clock = this.dev.clock;
    const posted: number[] = [];
    let scnt = 0;
    let ccnt = 0;
    let rcnt = 0;
    while (scnt < rc.iters || ccnt < rc.iters || rcnt < rc.iters) {
      if (rcnt < rc.iters && !(scnt < 1 && rc.role === 'server')) {
        rcnt++;
        const want = rcnt & 0xff;
        await this.waitFor(() => this.buf[pollAt] === want, `the peer's WRITE #${rcnt}`);
        if (expected !== null) this.verifyRange(this.half, expected, rc.size - 1, `WRITE #${rcnt}`);
      }
      if (scnt < rc.iters) {
        posted.push(clock.now());
        this.buf[postAt] = ++scnt & 0xff;
        qp.postSend(this.sendWr(0, true));
      }
      if (ccnt < rc.iters) {
        for (const wc of await this.pollSome(cq, `the completion of WRITE #${ccnt + 1}`, 1)) {
          this.check(wc, 'RDMA WRITE');
          ccnt++;
        }
      }
    }
    this.finishLat(posted);
  }

  /** run_iter_lat: the client READs, one at a time. */
  private async runReadLat(): Promise<void> {
    const { rc } = this;
    if (rc.role === 'server') return;
    const qp = this.qp as QueuePair;
    const cq = this.sendCq as CompletionQueue;
    const expected = rc.verify ? pattern(0, rc.size) : null;
    const posted: number[] = [];
    for (let k = 0; k < rc.iters; k++) {
      if (expected !== null) this.buf.fill(0, 0, rc.size);
      posted.push(this.dev.clock.now());
      qp.postSend(this.sendWr(0, true));
      for (const wc of await this.pollSome(cq, `the completion of READ #${k}`, 1)) this.check(wc, 'RDMA READ');
      if (expected !== null) this.verifyRange(0, expected, rc.size, `READ #${k}`);
    }
    this.finishLat(posted);
  }

  /** run_iter_lat_send: SEND ping-pong, the client first; receives re-posted while more are due. */
  private async runSendLat(): Promise<void> {
    const { rc } = this;
    const qp = this.qp as QueuePair;
    const mr = this.mr as MemoryRegion;
    const scq = this.sendCq as CompletionQueue;
    const rcq = this.recvCq as CompletionQueue;
    const expected = rc.verify ? pattern(0, rc.size) : null;
    const posted: number[] = [];
    let scnt = 0;
    let rcnt = 0;
    while (scnt < rc.iters || rcnt < rc.iters) {
      if (rcnt < rc.iters && !(scnt < 1 && rc.role === 'client')) {
        const [wc] = await this.pollSome(rcq, `the peer's SEND #${rcnt + 1}`, 1);
        if (wc !== undefined) {
          this.check(wc, 'receive');
          if (expected !== null) this.verifyRange(this.recvOffset(Number(wc.wrId)), expected, wc.byteLen, `SEND #${rcnt + 1}`);
          rcnt++;
          if (rcnt + rc.rxDepth <= rc.iters) qp.postRecv({ wrId: wc.wrId, sgList: [mr.sge(this.recvOffset(Number(wc.wrId)), rc.size)] });
        }
      }
      if (scnt < rc.iters) {
        posted.push(this.dev.clock.now());
        scnt++;
        qp.postSend(this.sendWr(0, true));
        for (const wc of await this.pollSome(scq, `the completion of SEND #${scnt}`, 1)) this.check(wc, 'SEND');
      }
    }
    this.finishLat(posted);
  }

  private finishLat(posted: number[]): void {
    const first = posted[0] ?? 0;
    this.started = first;
    this.finished = this.dev.clock.now();
    this.messages = posted.length;
    for (let i = 0; i + 1 < posted.length; i++) this.latSamplesNs.push(((posted[i + 1] as number) - (posted[i] as number)) / this.rttFactor);
  }

  verifyRange(offset: number, expected: Uint8Array, byteLen: number, what: string): void {
    const got = this.buf.subarray(offset, offset + expected.length);
    this.verifyBytes += expected.length;
    if (byteLen !== this.rc.size && byteLen !== expected.length) {
      this.verifyMismatches++;
      if (this.problems.length < 10) this.problems.push(`${what}: ${byteLen} bytes arrived, expected ${this.rc.size}`);
      return;
    }
    if (!sameBytes(got, expected)) {
      this.verifyMismatches++;
      if (this.problems.length < 10) {
        let at = 0;
        while (at < expected.length && got[at] === expected[at]) at++;
        this.problems.push(`${what}: byte ${at} is 0x${(got[at] ?? 0).toString(16)}, expected 0x${(expected[at] ?? 0).toString(16)}`);
      }
    }
  }

  /** Checks done once the whole test is over (what the server of a one-sided test holds, what READs brought back). */
  finalVerify(): void {
    const { rc } = this;
    if (!rc.verify || rc.lat) return;
    const used = Math.min(rc.iters, this.slots);
    if (rc.role === 'server' && rc.verb === Verb.WRITE) {
      for (let s = 0; s < used; s++) this.verifyRange(this.half + s * this.stride, pattern(s, rc.size), rc.size, `slot ${s} written by the client`);
    } else if (rc.role === 'client' && rc.verb === Verb.READ) {
      for (let s = 0; s < used; s++) this.verifyRange(s * this.stride, pattern(s, rc.size), rc.size, `slot ${s} read from the server`);
    } else if (rc.role === 'server' && rc.verb === Verb.ATOMIC) {
      const view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
      for (let s = 0; s < used; s++) {
        const n = rc.atomicType === 'FETCH_AND_ADD' ? Math.floor(rc.iters / used) + (s < rc.iters % used ? 1 : 0) : 0;
        const got = view.getBigUint64(this.half + s * this.stride, true);
        this.verifyBytes += 8;
        if (got !== BigInt(n)) {
          this.verifyMismatches++;
          if (this.problems.length < 10) this.problems.push(`atomic slot ${s} holds ${got}, expected ${n}`);
        }
      }
    }
  }

  release(): void {
    if (this.qp !== null) this.dev.destroyQp(this.qp);
    if (this.mr !== null) this.dev.deregMr(this.mr);
  }
}

/** Runs one test end to end; throws OobError / PerftestError when the exchange or the test fails. */
export async function runPerftest(dev: Device, cfg: PerftestConfig): Promise<PerftestResult> {
  const rc = resolveConfig(dev, cfg);
  const side = new PerftestSide(dev, rc, cfg);
  const steps = sessionSteps(rc.verb, rc.lat, rc.role);
  const ch = await openChannel(cfg);
  side.peerDone = () => ch.available > 0;
  const oob = new PerftestOob(
    ch,
    rc.role,
    { gid: true, dataValidation: false },
    { stepMs: cfg.stepTimeoutMs ?? 10_000, peerRunMs: cfg.runTimeoutMs ?? 300_000 },
    cfg.dontXchgVersions ?? false,
  );
  try {
    await executeSession(oob, steps, side, 1);
    side.finalVerify();
  } finally {
    side.release();
  }
  return summarize(side, rc, oob);
}

async function openChannel(cfg: PerftestConfig): Promise<TcpChannel> {
  const port = cfg.port ?? PINGPONG_DEFAULT_PORT;
  const connectMs = cfg.connectTimeoutMs ?? 30_000;
  if (cfg.role === 'client') {
    if (cfg.server === undefined) throw configError('server', 'is needed for the client role');
    return TcpChannel.connect(cfg.server, port, connectMs);
  }
  const listener = cfg.listener ?? (await TcpChannel.listen(port, cfg.bindHost));
  try {
    cfg.onListening?.(listener.port);
    return await listener.accept(connectMs);
  } finally {
    if (cfg.listener === undefined) listener.close();
  }
}

function summarize(side: PerftestSide, rc: ResolvedConfig, oob: PerftestOob): PerftestResult {
  const problems = [...side.problems];
  let measured: PerftestResult['measured'] = 'local';
  let bytes = rc.size * side.messages;
  let messages = side.messages;
  let seconds = Math.max(0, (side.finished - side.started) / 1e9);
  let mpps = seconds > 0 ? messages / seconds / 1e6 : 0;
  let gbps = seconds > 0 ? (bytes * 8) / seconds / 1e9 : 0;
  const oneSidedServer = !rc.lat && rc.role === 'server' && rc.verb !== Verb.SEND;
  if (oneSidedServer) {
    measured = 'peer-report';
    const r = side.peerReport;
    if (r === null) problems.push('no bandwidth report from the client');
    else {
      try {
        checkBwReport(r, rc.durationS > 0 ? { size: rc.size } : { size: rc.size, iters: rc.iters });
        messages = Number(r.iters);
        bytes = rc.size * messages;
        mpps = r.msgRateAvg;
        seconds = mpps > 0 ? messages / (mpps * 1e6) : 0;
        gbps = (mpps * 1e6 * rc.size * 8) / 1e9;
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  } else if (rc.lat && rc.verb === Verb.READ && rc.role === 'server') {
    measured = 'none';
    bytes = 0;
    messages = 0;
    seconds = 0;
    mpps = 0;
    gbps = 0;
  }
  const r = side.remote;
  const mr = side.mr;
  const qp = side.qp;
  const gid = side.dev.gids[rc.gidIndex] as Uint8Array;
  const round = (x: number, d = 6): number => Math.round(x * 10 ** d) / 10 ** d;
  const verifyFailed = rc.verify && side.verifyMismatches > 0;
  const out = oob.log.filter((l) => l.dir === 'out');
  const inn = oob.log.filter((l) => l.dir === 'in');
  return {
    ok: problems.length === 0 && !verifyFailed,
    test: perftestBinary(rc.verb, rc.lat),
    role: rc.role,
    verb: rc.verb,
    lat: rc.lat,
    msgSize: rc.size,
    iterations: rc.durationS > 0 ? side.posted || messages : rc.iters,
    durationS: rc.durationS > 0 ? rc.durationS : null,
    bytes,
    messages,
    seconds: round(seconds, 9),
    gbps: round(gbps),
    mpps: round(mpps),
    latencyUs: rc.lat ? latencyStats(side.latSamplesNs.map((ns) => ns / 1000)) : null,
    measured,
    mtu: mtuBytes(side.agreedMtu),
    peerVersion: side.peerVersion?.text ?? oob.peerVersion.text,
    local: { qpn: qp?.qpNum ?? 0, psn: side.psn, gid: ipv6ToString(gid), rkey: mr?.rkey ?? 0, vaddr: `0x${(mr?.addr(side.half) ?? 0n).toString(16)}` },
    remote: {
      qpn: r?.qpn ?? 0,
      psn: r?.psn ?? 0,
      gid: r?.gid ? ipv6ToString(r.gid) : '',
      rkey: r?.rkey ?? 0,
      vaddr: `0x${(r?.vaddr ?? 0n).toString(16)}`,
      outReads: r?.outReads ?? 0,
    },
    verify: { enabled: rc.verify, bytesChecked: side.verifyBytes, mismatches: side.verifyMismatches },
    counters: qp !== null ? nonZeroCounters(qp.counters) : {},
    oob: { messagesOut: out.length, messagesIn: inn.length, bytesOut: out.reduce((a, l) => a + l.bytes, 0), bytesIn: inn.reduce((a, l) => a + l.bytes, 0) },
    problems,
  };
}
