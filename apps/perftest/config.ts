/**
 * The parameters of one perftest test: what the caller gives (`PerftestConfig`,
 * the tools' flags) and what the run uses once perftest's defaults and checks
 * are applied (`ResolvedConfig`, parser() and force_dependecies() of
 * perftest_parameters.c).
 *
 * Defaults: one RC QP; message size 65536 for bandwidth, 2 for latency, 8 for
 * atomics; 5000 iterations for write bandwidth, 1000 otherwise; tx depth 128
 * (bandwidth) or 1 (latency); rx depth 512 for SEND; CQ moderation 100 (1
 * above 8 KiB); QP timeout 14; outstanding READs/atomics = the device maximum
 * (128, like rxe) for READ and atomic tests, 1 otherwise.
 */
import type { PerftestConnectionInfo } from './result';
import type { CmTiming } from '../host/cm-step-bound';
import type { Device } from '../../stack/device';
import { mtuBytes, mtuFromBytes, type Mtu } from '../../stack/mtu';
import { defaultGidIndex } from '../../stack/address';
import type { OobEndpointConfig } from '../oob/oob-endpoint';
import { type PerftestRole, type PerftestVerb, PerftestVerb as Verb } from '../oob/perftest-session';
import { configError } from './perftest-error';
import type { BwReport } from '../oob/perftest-messages';
import { PEAK_MAX_ITERS } from './bw-peak';

export type AtomicType = 'FETCH_AND_ADD' | 'CMP_AND_SWAP';

/** perftest -c: the transport of the test QPs. */
/**
 * A QP connected wrong on purpose, to reproduce a failing setup and see what the peer and the
 * diagnosis make of it: `qpn` sends to the peer's QPN + 1, `psn` starts one PSN past the start
 * PSN this side announced (the peer's rq_psn).
 */
export const Mismatch = { QPN: 'qpn', PSN: 'psn' } as const;
export type Mismatch = (typeof Mismatch)[keyof typeof Mismatch];

export const Connection = { RC: 'RC', UC: 'UC', UD: 'UD' } as const;
export type Connection = (typeof Connection)[keyof typeof Connection];

/** A test's parameters; how this end reaches the peer is OobEndpointConfig (connectTimeoutMs default 30 s for both roles). */
export interface PerftestConfig extends OobEndpointConfig {
  verb: PerftestVerb;
  lat: boolean;
  role: PerftestRole;
  size?: number;
  iters?: number;
  /**
   * perftest -D: a bandwidth test that runs for this many seconds instead of a number of
   * iterations, measured between `marginS` after the start and `marginS` before the end
   * (perftest -f; by default a quarter of the duration, rounded down to whole seconds, as
   * force_dependecies sets it, although perftest's help says 2), so start-up and wind-down stay out of the figures. Bandwidth tests:
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
  /** Connect the QP wrong on purpose (RC, not with -R). */
  mismatch?: Mismatch;
  /**
   * perftest -q: QPs of a bandwidth test (default 1). Each QP moves `iters` messages (tot_iters =
   * iters × num_of_qps in run_iter_bw), all on one pair of completion queues and one memory region.
   */
  qps?: number;
  /**
   * perftest -c (default RC): UC for WRITE and SEND, UD for SEND only (change_conn_type). A UD
   * message is one packet: its size is cut to the path MTU, as perftest does.
   */
  connection?: Connection;
  /**
   * perftest -a: run the test at every size from 2 bytes to 8 MiB (2^1 .. 2^23), `iters` messages
   * each, on one connection (the buffer sized for the largest); write and read, bandwidth and
   * latency. The report exchanged with the peer is the last size's, as perftest's.
   */
  allSizes?: boolean;
  /**
   * perftest -b: a bidirectional bandwidth test: both ends send (and, for SEND, receive) at once,
   * and each reports the sum of both directions. Give it to both ends.
   */
  bidirectional?: boolean;
  /** Fill every buffer with a known pattern and check what arrives (both ends must be this implementation). */
  verify?: boolean;
  /** Report bandwidth to the peer in Gb/s instead of MB/s (perftest --report_gbits). */
  reportGbits?: boolean;
  /**
   * perftest --perform_warm_up (write, read and atomic bandwidth): requests before the measured
   * loop, not counted. perftest posts one tx depth per QP; this stack keeps going until the rate
   * settles (at most 1 s), since its code and its peer's are compiled while they run (apps/perftest/warm-up.ts).
   */
  performWarmUp?: boolean;
  /**
   * perftest -R (--rdma_cm): the test QP connected through the RDMA CM, and the whole exchange
   * carried by a second, CM-connected QP instead of TCP (both on `port`, TCP port space). The
   * client's `server` must then be an IPv4 address.
   */
  rdmaCm?: boolean;
  /** perftest --retry_count with -R: the retry count of the test connection's CM REQ (default 7), the QPs' retry_cnt. */
  retryCount?: number;
  /** perftest --dont_xchg_versions: skip the version, system-data and MTU exchanges. */
  dontXchgVersions?: boolean;
  /** perftest -i (--ib-port): the device port; this stack's devices have port 1 only (DEF_IB_PORT). */
  ibPort?: number;
  /**
   * perftest -I (--inline_size): messages up to this many bytes go inline (IBV_SEND_INLINE, the
   * QP's max_inline_data), 0..1024 (MAX_INLINE); WRITE and SEND only (" Inline feature not
   * available on READ/Atomic verbs"). Default 0, perftest's for a device it has no table entry for.
   */
  inlineSize?: number;
  /**
   * perftest -l (--post_list): bandwidth tests post lists of this many WRs per post call; the CQ
   * moderation becomes the list size and the iterations must be a multiple of it (force_dependecies).
   */
  postList?: number;
  /**
   * perftest --run_infinitely (write, read and atomic bandwidth): the client runs until `stop` says
   * so, and reports each period of `durationS` seconds (perftest's -D, default 5) through `onPeriod`.
   */
  runInfinitely?: boolean;
  /** --run_infinitely: polled by the loop; true ends the run (the CLI sets it on SIGINT or SIGTERM). */
  stop?: () => boolean;
  /** --run_infinitely: the report of one period (print_bw_infinite_mode). */
  onPeriod?: (r: BwReport) => void;
  /** The connection, once made and before the measured loop (where perftest prints its addresses). */
  onConnected?: (c: PerftestConnectionInfo) => void;
  /** Every out-of-band read during set-up (default 10 s). */
  stepTimeoutMs?: number;
  /** -R: the CM's response timeout and retries (librdmacm's 20 and 15 by default). */
  cm?: CmTiming;
  /** The measured loop, and any read that waits while the peer runs (default 5 min). */
  runTimeoutMs?: number;
  /** Called with the peer's GID before the QP is connected (e.g. to learn its MAC from the host's neighbour table). */
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  /** How the loops wait while a completion queue is empty (default: the next turn of the event loop; a host device gives its own, HostDevice.idleWait). */
  idleWait?: () => Promise<void>;
}

const MIN_ITERS = 5;
/** perftest -a: sizes 2^1 .. 2^23 (its MAX_SIZE, 8 MiB). */
const ALL_SIZES_MAX = 1 << 23;
/** perftest's UC_MAX_RX: a UC or UD SEND test's default receive depth is the iterations up to this. */
const UC_MAX_RX = 16000;
/** perftest's DEF_RX_SEND. */
const DEF_RX_SEND = 512;
/** perftest's MAX_INLINE. */
const MAX_INLINE = 1024;
/** perftest's DEF_DURATION: --run_infinitely reports every this many seconds unless -D says otherwise. */
export const DEF_DURATION_S = 5;
/** perftest's MIN_QP_NUM and MAX_QP_NUM (perftest_parameters.h). */
const MAX_QPS = 16384;
/**
 * perftest's margin of duration mode when -f is not given: force_dependecies sets it to
 * duration / 4 in integer seconds (so -D 2 measures the whole run), whatever its help says ("default=2sec").
 */
export function defaultMarginS(durationS: number): number {
  return Math.floor(durationS / 4);
}
const MAX_SIZE = 1 << 28;
const MSG_SIZE_CQ_MOD_LIMIT = 8192;
/** The most outstanding READs and atomics the device takes (rxe's value). */
export const DEVICE_MAX_RD_ATOMIC = 128;

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
  mismatch: Mismatch | null;
  verify: boolean;
  rdmaCm: boolean;
  /** QPs (perftest -q); 1 for latency tests. */
  qps: number;
  connection: Connection;
  /** The message sizes run, in order: [size], or every power of two from 2 to 8 MiB with -a (then `size` is the largest). */
  sizes: number[];
  /** perftest -b. */
  duplex: boolean;
  /** perftest --perform_warm_up: the client warms up before its measured loop. */
  warmUp: boolean;
  /** perftest -I: messages up to this size are posted inline (0: none). */
  inlineSize: number;
  /** perftest -l: WRs per post call (1: every WR that fits, in one call). */
  postList: number;
  /** perftest --run_infinitely: the client runs until stopped, reporting every `durationS` seconds. */
  runInfinitely: boolean;
  /** Whether this side measures perftest's BW peak (bw-peak.ts); perftest's noPeak is the opposite. */
  measurePeak: boolean;
}

/** Applies perftest's defaults and checks (parser() and force_dependecies()). */
export function resolveConfig(dev: Device, c: PerftestConfig): ResolvedConfig {
  const { verb, lat, role } = c;
  const isAtomic = verb === Verb.ATOMIC;
  const connection = c.connection ?? Connection.RC;
  if (!Object.values(Connection).includes(connection)) throw configError('connection', `must be RC, UC or UD, got ${JSON.stringify(connection)}`);
  // change_conn_type: " UC connection not possible in READ/ATOMIC verbs", " UD connection only possible in SEND verb".
  if (connection === Connection.UC && (verb === Verb.READ || isAtomic))
    throw configError('connection', `UC is not possible with ${verb.toUpperCase()} (perftest: "UC connection not possible in READ/ATOMIC verbs")`);
  if (connection === Connection.UD && verb !== Verb.SEND)
    throw configError('connection', `UD is only possible with SEND (perftest: "UD connection only possible in SEND verb")`);
  if (connection !== Connection.RC && c.rdmaCm === true) throw configError('connection', `${connection} with the RDMA CM (-R) is not implemented`);
  const duplex = c.bidirectional ?? false;
  if (duplex) {
    if (lat) throw configError('bidirectional', 'applies to bandwidth tests (the latency tests are ping-pongs already)');
    if (c.rdmaCm === true) throw configError('bidirectional', 'with the RDMA CM (-R) is not implemented');
    if (c.allSizes === true) throw configError('bidirectional', 'with all sizes (-a) is not implemented');
    if (c.durationS !== undefined) throw configError('bidirectional', 'with duration mode (-D) is not implemented');
  }
  const warmUp = c.performWarmUp ?? false;
  if (warmUp) {
    // perftest: "valid in Atomic, Read and Write BW tests".
    if (lat || verb === Verb.SEND)
      throw configError('performWarmUp', 'applies to the write, read and atomic bandwidth tests (perftest: "valid in Atomic, Read and Write BW tests")');
    if (duplex) throw configError('performWarmUp', 'with a bidirectional test (-b) is not implemented');
    if (c.allSizes === true) throw configError('performWarmUp', 'with all sizes (-a) is not implemented');
  }
  const allSizes = c.allSizes ?? false;
  if (allSizes) {
    if (c.size !== undefined) throw configError('size', 'and all sizes (-a) cannot be combined');
    // Duration mode: " Duration mode currently doesn't support running on all sizes" (force_dependecies).
    if (c.durationS !== undefined)
      throw configError('allSizes', 'and duration mode (-D) cannot be combined (perftest: "Duration mode currently doesn\'t support running on all sizes")');
    if (verb !== Verb.WRITE && verb !== Verb.READ)
      throw configError('allSizes', `is implemented for write and read (its SEND loop re-posts receives and synchronises at every size), not ${verb}`);
    if (connection !== Connection.RC) throw configError('allSizes', `is implemented for RC, not ${connection}`);
  }
  // force_dependecies: with -a the buffer is sized for MAX_SIZE (8 MiB).
  let size = allSizes ? ALL_SIZES_MAX : (c.size ?? (isAtomic ? 8 : lat ? 2 : 65536));
  if (isAtomic && size !== 8) throw configError('size', 'cannot be changed for atomic tests (always 8)');
  if (!Number.isInteger(size) || size < 1 || size > MAX_SIZE) throw configError('size', `must be 1..${MAX_SIZE}, got ${size}`);
  // --run_infinitely is a duration-mode run (force_dependecies: test_type = DURATION) whose -D is the report period.
  const infinite = c.runInfinitely ?? false;
  const durationS = c.durationS ?? (infinite ? DEF_DURATION_S : 0);
  const marginS = infinite ? 0 : (c.marginS ?? (durationS > 0 ? defaultMarginS(durationS) : 0));
  if (c.durationS !== undefined) {
    if (!(durationS > 0 && durationS <= 86_400)) throw configError('duration', `must be more than 0 and at most 86400 seconds, got ${durationS}`);
    if (lat && !infinite) throw configError('duration', 'applies to bandwidth tests (duration mode of the latency tests is not implemented)');
    if (c.iters !== undefined && !infinite) throw configError('duration', 'and iterations (-n) cannot be combined');
    if (c.verify === true && verb === Verb.ATOMIC)
      throw configError('duration', 'and --verify cannot be combined for atomics (the server checks the sums of a known number of iterations)');
  }
  if (c.marginS !== undefined && infinite) throw configError('margin', 'does not apply with --run_infinitely (each period is measured whole)');
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
  // A UD message is one packet: perftest cuts the size to the MTU (" Max msg size in UD is MTU").
  if (connection === Connection.UD) size = Math.min(size, mtuBytes(mtu));
  const gidIndex = c.gidIndex ?? defaultGidIndex(dev.gids);
  if (!Number.isInteger(gidIndex) || gidIndex < 0 || gidIndex >= dev.gids.length)
    throw configError('gidIndex', `${gidIndex} is not in the GID table (${dev.gids.length} entries)`);
  let txDepth = c.txDepth ?? (lat ? 1 : 128);
  if (!Number.isInteger(txDepth) || txDepth < 1 || txDepth > 1 << 15) throw configError('txDepth', `must be 1..32768, got ${txDepth}`);
  txDepth = Math.min(txDepth, iters);
  const recv = verb === Verb.SEND;
  let rxDepth = c.rxDepth ?? (recv ? DEF_RX_SEND : 1);
  if (!Number.isInteger(rxDepth) || rxDepth < 1 || rxDepth > 1 << 15) throw configError('rxDepth', `must be 1..32768, got ${rxDepth}`);
  if (recv) rxDepth = Math.min(rxDepth, iters);
  // force_dependecies: UC and UD have no RNR retry, so a bandwidth test's default receive depth covers every message it can.
  if (recv && !lat && connection !== Connection.RC && (c.rxDepth ?? DEF_RX_SEND) === DEF_RX_SEND) rxDepth = Math.min(iters, UC_MAX_RX);
  // Moderation is left on for large messages with -a (force_dependecies: it cannot follow the size during the run).
  let cqMod = lat ? 1 : size > MSG_SIZE_CQ_MOD_LIMIT && !allSizes ? 1 : 100;
  cqMod = Math.min(cqMod, txDepth);
  const qpTimeout = c.qpTimeout ?? 14;
  if (!Number.isInteger(qpTimeout) || qpTimeout < 0 || qpTimeout > 31) throw configError('qpTimeout', `must be 0..31, got ${qpTimeout}`);
  const rdmaCm = c.rdmaCm ?? false;
  const mismatch = c.mismatch ?? null;
  if (mismatch !== null && !Object.values(Mismatch).includes(mismatch)) throw configError('mismatch', `must be qpn or psn, got ${String(mismatch)}`);
  if (mismatch !== null && (connection !== Connection.RC || rdmaCm))
    throw configError('mismatch', 'applies to RC connected by the TCP exchange (the RDMA CM connects the QP itself)');
  if (rdmaCm && role === 'client' && (c.server === undefined || !/^\d{1,3}(\.\d{1,3}){3}$/.test(c.server))) {
    throw configError('server', `must be an IPv4 address with the RDMA CM (-R), got ${JSON.stringify(c.server ?? null)}`);
  }
  if (rdmaCm && c.listener !== undefined) throw configError('listener', 'is a TCP socket; with the RDMA CM (-R) the server listens through the CM on `port`');
  const qps = c.qps ?? 1;
  if (!Number.isInteger(qps) || qps < 1 || qps > MAX_QPS) throw configError('qps', `must be 1..${MAX_QPS}, got ${qps}`);
  // parser(), option -q: " Multiple QPs only available on bw tests".
  if (lat && qps > 1) throw configError('qps', 'more than one QP is only available in bandwidth tests (perftest: "Multiple QPs only available on bw tests")');
  if (rdmaCm && qps > 1) throw configError('qps', 'more than one QP with the RDMA CM (-R) is not implemented');
  const trafficClass = c.trafficClass ?? 0;
  if (!Number.isInteger(trafficClass) || trafficClass < 0 || trafficClass > 255) throw configError('trafficClass', `must be 0..255, got ${trafficClass}`);
  // parser(), -i: "IB Port can't be less than 1"; the stack's devices have one port, number 1.
  if (c.ibPort !== undefined && c.ibPort !== 1) throw configError('ibPort', `must be 1 (this stack's devices have port 1 only), got ${c.ibPort}`);
  const inlineSize = c.inlineSize ?? 0;
  if (!Number.isInteger(inlineSize) || inlineSize < 0 || inlineSize > MAX_INLINE)
    throw configError('inlineSize', `must be 0..${MAX_INLINE}, got ${inlineSize}`);
  if (c.inlineSize !== undefined && (verb === Verb.READ || isAtomic))
    throw configError('inlineSize', 'is not available with READ or atomics (perftest: "Inline feature not available on READ/Atomic verbs")');
  const postList = c.postList ?? 1;
  if (!Number.isInteger(postList) || postList < 1 || postList > 1 << 15) throw configError('postList', `must be 1..32768, got ${postList}`);
  if (postList > 1) {
    // force_dependecies: "Post list is supported in BW tests only"; "Number of iterations must be a multiple of post list size".
    if (lat) throw configError('postList', 'is supported in bandwidth tests only (perftest: "Post list is supported in BW tests only")');
    if (durationS === 0 && iters % postList !== 0)
      throw configError(
        'postList',
        `${postList} does not divide the iterations ${iters} (perftest: "Number of iterations must be a multiple of post list size")`,
      );
    if (postList > txDepth) throw configError('postList', `${postList} is more than the tx depth ${txDepth}: a list must fit the send queue`);
    if (duplex || rdmaCm || allSizes) throw configError('postList', 'with -b, -R or -a is not implemented');
    // "Post List requested - CQ moderation will be the size of the post list".
    cqMod = postList;
  }
  const runInfinitely = infinite;
  if (runInfinitely) {
    // force_dependecies: " run_infinitely exists only in BW tests for now."
    if (lat) throw configError('runInfinitely', 'exists only in bandwidth tests (perftest: "run_infinitely exists only in BW tests for now")');
    if (verb === Verb.SEND) throw configError('runInfinitely', 'is implemented for write, read and atomic, not send');
    if (c.iters !== undefined || allSizes) throw configError('runInfinitely', 'runs until stopped: it takes no iterations (-n) or sizes (-a)');
    if (c.verify === true)
      throw configError('runInfinitely', 'and --verify cannot be combined (perftest: "--data_validation is incompatible with --run_infinitely")');
    if (duplex || rdmaCm || warmUp) throw configError('runInfinitely', 'with -b, -R or --perform_warm_up is not implemented');
  }
  // force_dependecies sets noPeak in duration mode, with --run_infinitely, above 20000 iterations, and on a SEND test's server.
  const measurePeak = !lat && durationS === 0 && !runInfinitely && iters <= PEAK_MAX_ITERS && (role === 'client' || duplex);
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
    mismatch,
    verify: c.verify ?? false,
    warmUp,
    rdmaCm,
    qps,
    connection,
    sizes: allSizes ? Array.from({ length: 23 }, (_, i) => 2 << i) : [size],
    duplex,
    inlineSize,
    postList,
    runInfinitely,
    measurePeak,
  };
}
