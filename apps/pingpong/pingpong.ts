/**
 * ibv_rc_pingpong on a `Device` (rdma-core libibverbs/examples/rc_pingpong.c):
 * the same 52-byte address exchange and closing "done", the same QP
 * attributes (path MTU -m, default 1024; max_dest_rd_atomic 1, min_rnr_timer
 * 12; timeout 14, retry 7, RNR retry 7, max_rd_atomic 1; GRH hop limit 1),
 * and the same traffic: rx_depth receives posted before the exchange, one
 * buffer for sending and receiving, the client sends first, and each side
 * sends again once its previous SEND has completed and a message has arrived.
 *
 * Order on the wire (pp_client_exch_dest / pp_server_exch_dest): the client
 * sends its 52 bytes; the server connects its QP (RTR, RTS) and answers with
 * its 52 bytes; the client replies "done\0" and closes, then connects its QP.
 *
 * `type` 'uc' and 'ud' play ibv_uc_pingpong and ibv_ud_pingpong, which share
 * the exchange and the loop: UC connects with path MTU, destination QPN and
 * PSNs only (no ACKs, no retries); UD takes Q_Key 0x11111111, moves to RTR and
 * RTS with nothing but the send PSN, sends through an address handle (hop
 * limit 1), sends from buf + 40 and receives size + 40 bytes (the GRH area).
 *
 * `validate` (-c/--chk): the tools fill their buffer with 0x7b and, with -c,
 * the client zeroes the first byte of each page before its first SEND; the
 * server checks those bytes at the end. Here the client fills its buffer with a
 * pattern whose page-start bytes are zero (so the tool's check holds) and checks
 * every message that comes back against it byte for byte (the tools echo their
 * buffer); the server checks that the first message is the tools' buffer (0x7b,
 * page starts 0 or 0x7b) or roce-ts's pattern, and that every later one equals it.
 */
import { qpHealth } from '../host/qp-health';
import type { Device } from '../../stack/device';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcStatus } from '../../stack/work-completion';
import { mtuBytes } from '../../stack/mtu';
import { defaultGidIndex, isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { OobError, OobErrorCode } from '../oob/tcp-channel';
import { type OobEndpointConfig, openOobChannel } from '../oob/oob-endpoint';
import {
  PINGPONG_DONE_SIZE,
  PINGPONG_MSG_SIZE,
  type PingpongDest,
  checkDone,
  decodePingpongDest,
  encodeDone,
  encodePingpongDest,
} from '../oob/pingpong-messages';
import { PerftestError, PerftestErrorCode, configError } from '../perftest/perftest-error';
import { latencyStats, type LatencyStats } from '../perftest/measurement';
import { nonZeroCounters } from '../perftest/result';
import { qpStateReport } from '../perftest/qp-state-report';
import { progressMark } from '../perftest/completion-waits';
import { type PingpongPlanBase, checkedSizesAndBounds } from './pingpong-plan';
import type { Counters } from '../../stack/counters';
import { nextTurn } from '../host/clock-pump';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { Clock } from '../../base/clock';
import { localAckTimeoutNs } from '../../stack/qp-attributes';

export type PingpongType = 'rc' | 'uc' | 'ud';

/** The run's parameters; how this end reaches the peer is OobEndpointConfig (connectTimeoutMs default: 30 s to connect, 300 s to wait for the client). */
export interface PingpongConfig extends OobEndpointConfig {
  /** Transport: rc (ibv_rc_pingpong, the default), uc (ibv_uc_pingpong) or ud (ibv_ud_pingpong). */
  type?: PingpongType;
  /** Check every message received (see the file comment). */
  validate?: boolean;
  /** Message size (default 4096; 2048 for UD, which must fit the path MTU). */
  size?: number;
  /** Round trips (default 1000). */
  iters?: number;
  /** Receive queue depth (default 500). */
  rxDepth?: number;
  /** Path MTU in bytes (default 1024). */
  mtu?: number;
  /** Source GID index; -1 sends an all-zero GID as the tool does without -g (default: the first IPv4-mapped GID). */
  gidIndex?: number;
  /** Traffic class of the QP's frames (DSCP and ECN; the tool itself sends 0). */
  trafficClass?: number;
  stepTimeoutMs?: number;
  runTimeoutMs?: number;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  /** How the loop waits while a completion queue is empty (default: the next turn of the event loop; a host device gives its own, HostDevice.idleWait). */
  idleWait?: () => Promise<void>;
  /**
   * RC: after the last completion, keep the QP up for a quiet spell of two local ACK timeouts so
   * that the peer's resent last SEND, whose ACK was lost, gets a fresh ACK (see
   * answerLastRetransmissions). For real-time devices: a composition root on a virtual clock
   * leaves it off (default off).
   */
  lingerAfterLast?: boolean;
}

export interface PingpongResult {
  ok: boolean;
  test: 'rc_pingpong' | 'uc_pingpong' | 'ud_pingpong';
  role: 'client' | 'server';
  msgSize: number;
  iterations: number;
  /** Bytes both ways, as the tool counts them (size x iters x 2). */
  bytes: number;
  /** SENDs and receives completed by this side. */
  messages: number;
  seconds: number;
  gbps: number;
  mbps: number;
  usecPerIter: number;
  /** Round trip per iteration (the time between two SENDs of this side), in microseconds. */
  latencyUs: LatencyStats | null;
  mtu: number;
  local: { lid: number; qpn: number; psn: number; gid: string };
  remote: { lid: number; qpn: number; psn: number; gid: string };
  /** The QP's counters (rxe names), the ones that are not zero. */
  counters: Partial<Counters>;
  /** Data checks of every received message (-c/--chk). */
  verify: { enabled: boolean; messagesChecked: number; bytesChecked: number; mismatches: number };
  problems: string[];
  /** What the run survived but a user should know (retries, dropped frames): see apps/host/qp-health.ts. */
  warnings: string[];
}

/** Bytes per page in the tools' -c check (sysconf(_SC_PAGESIZE) on x86-64). */
const PAGE_SIZE = 4096;
/** The tools' buffer fill (pp_init_ctx: memset(ctx->buf, 0x7b, size)). */
const TOOL_FILL = 0x7b;
/** ibv_ud_pingpong's Q_Key. */
const UD_QKEY = 0x11111111;
/** The GRH area in front of every UD receive. */
const GRH_BYTES = 40;

/** The client's payload with -c: distinct bytes, zero at every page start (what the tools' check wants). */
export function pingpongPattern(size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = i % PAGE_SIZE === 0 ? 0 : (i * 7 + (i >>> 12) * 13 + 1) & 0xff || 1;
  return b;
}

const SEND_WRID = 1;
const RECV_WRID = 2;

/**
 * After the last completion, an RC QP stays up for a quiet spell of two local ACK timeouts
 * (0.05..1 s) before it is destroyed: the ACK of the peer's last SEND may have been lost, and the
 * peer then resends that SEND when its own timer fires; the responder answers the duplicate with
 * a fresh ACK (IBTA C9-105). Without it the peer's retries reach no QP: rc_pingpong's final-ACK
 * race (docs/interop.md), which with rxe, whose retry_cnt 7 never runs out, leaves the peer
 * resending until it is killed. The spell starts again with every packet the QP receives, up to
 * eight spells in all.
 */
async function answerLastRetransmissions(qp: QueuePair, clock: Clock, idle: () => Promise<void>): Promise<void> {
  const quietNs = Math.min(1e9, Math.max(50e6, 2 * localAckTimeoutNs(qp.attr.timeout)));
  // A peer that keeps sending (a hostile one) cannot hold the command: eight spells at most.
  const until = clock.now() + 8 * quietNs;
  let seen = qp.counters.rcvd_pkts;
  let since = clock.now();
  while (qp.state !== QpState.ERR && clock.now() - since < quietNs && clock.now() < until) {
    await idle();
    if (qp.counters.rcvd_pkts !== seen) {
      seen = qp.counters.rcvd_pkts;
      since = clock.now();
    }
  }
}

/** What the configuration asks for, checked: transport, sizes, MTU, GID index and time bounds. */
interface PingpongPlan extends PingpongPlanBase {
  type: PingpongType;
  tool: PingpongResult['test'];
}

function planPingpong(dev: Device, cfg: PingpongConfig): PingpongPlan {
  const type: PingpongType = cfg.type ?? 'rc';
  const tool = `${type}_pingpong` as PingpongResult['test'];
  const common = checkedSizesAndBounds(dev, cfg, cfg.size ?? (type === 'ud' ? 2048 : 4096));
  const rxDepth = cfg.rxDepth ?? 500;
  if (!Number.isInteger(rxDepth) || rxDepth < 2 || rxDepth > 1 << 15) throw configError('rxDepth', `must be 2..32768, got ${rxDepth}`);
  if (type !== 'rc' && type !== 'uc' && type !== 'ud') throw configError('type', `must be rc, uc or ud, got ${String(type)}`);
  // ibv_ud_pingpong: "Requested size larger than port MTU" (a datagram is one packet).
  if (type === 'ud' && common.size > mtuBytes(dev.maxMtu()))
    throw configError('size', `${common.size} is larger than the port MTU (${mtuBytes(dev.maxMtu())}); a UD message is one packet`);
  const gidIndex = cfg.gidIndex ?? defaultGidIndex(dev.gids);
  if (gidIndex !== -1 && (gidIndex < 0 || gidIndex >= dev.gids.length))
    throw configError('gidIndex', `${gidIndex} is not in the GID table (${dev.gids.length} entries)`);
  return { ...common, type, tool, rxDepth, gidIndex };
}

/** This side's verbs objects and what it tells the peer. */
interface PingpongEnd {
  /** The GRH area in front of each UD receive (0 for RC and UC). */
  grh: number;
  buf: Uint8Array;
  /** The client's payload with -c, else null. */
  pattern: Uint8Array | null;
  pd: ReturnType<Device['allocPd']>;
  mr: MemoryRegion;
  cq: CompletionQueue;
  qp: QueuePair;
  /** Receives outstanding. */
  routs: number;
  psn: number;
  myGid: Uint8Array;
  me: PingpongDest;
}

/** pp_init_ctx: one buffer (0x7b; UD: 40 more bytes for the GRH), one CQ for both queues, QP in INIT; receives posted before the exchange. */
function setUpPingpong(dev: Device, cfg: PingpongConfig, plan: PingpongPlan): PingpongEnd {
  const { type, size, rxDepth, gidIndex } = plan;
  const grh = type === 'ud' ? GRH_BYTES : 0;
  const buf = new Uint8Array(size + grh).fill(TOOL_FILL);
  const pattern = cfg.validate === true && cfg.role === 'client' ? pingpongPattern(size) : null;
  if (pattern !== null) buf.set(pattern, grh);
  const pd = dev.allocPd();
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE);
  const cq = dev.createCq(rxDepth + 1);
  const qpType = type === 'ud' ? QpType.UD : type === 'uc' ? QpType.UC : QpType.RC;
  const qp = dev.createQp(pd, { qpType, sendCq: cq, recvCq: cq, cap: { maxSendWr: 1, maxRecvWr: rxDepth, maxSendSge: 1, maxRecvSge: 1 } });
  if (type === 'ud') qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: UD_QKEY });
  else qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: 0 });
  const routs = postRecvs(qp, mr, size + grh, rxDepth);
  const psn = dev.randomPsn();
  const myGid = gidIndex === -1 ? new Uint8Array(16) : (dev.gids[gidIndex] as Uint8Array);
  const me: PingpongDest = { lid: 0, qpn: qp.qpNum, psn, gid: myGid };
  return { grh, buf, pattern, pd, mr, cq, qp, routs, psn, myGid, me };
}

/** Posts `n` receives of `len` bytes at the buffer's start; returns `n`. */
function postRecvs(qp: QueuePair, mr: MemoryRegion, len: number, n: number): number {
  for (let i = 0; i < n; i++) qp.postRecv({ wrId: RECV_WRID, sgList: [mr.sge(0, len)] });
  return n;
}

/** Where a UD SEND goes: the peer's address handle, QPN and Q_Key. */
interface UdDest {
  ah: ReturnType<Device['createAh']>;
  remoteQpn: number;
  remoteQkey: number;
}

/** pp_connect_ctx: the QP to RTR and RTS toward the peer `rem`; for UD, the address handle to send through. */
async function connect(dev: Device, cfg: PingpongConfig, plan: PingpongPlan, end: PingpongEnd, rem: PingpongDest): Promise<UdDest | null> {
  const { type, tool, mtu, gidIndex } = plan;
  const { qp, psn, myGid } = end;
  // pp_connect_ctx: a GRH only when the peer's GID has an interface id; RoCE always needs one.
  const hasGid = rem.gid.subarray(8).some((b) => b !== 0);
  if (!hasGid)
    throw new OobError(
      OobErrorCode.INCOMPATIBLE,
      `${tool} address message: field gid is ${ipv6ToString(rem.gid)}; RoCE needs the peer's GID (run the peer with -g)`,
      'gid',
    );
  if (gidIndex === -1) throw new PerftestError(PerftestErrorCode.CONFIG, 'gidIndex -1 (no GID) cannot work on RoCE: give -g', 'gidIndex');
  if (isIpv4MappedGid(myGid) !== isIpv4MappedGid(rem.gid)) {
    throw new PerftestError(
      PerftestErrorCode.INCOMPATIBLE,
      `GID types differ: this side uses ${ipv6ToString(myGid)}, the peer ${ipv6ToString(rem.gid)} (choose -g of the same IP version)`,
      'gid',
    );
  }
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(rem.gid);
  const ahAttr = { dgid: rem.gid, sgidIndex: gidIndex, hopLimit: 1, trafficClass: cfg.trafficClass ?? 0 };
  if (type === 'rc') {
    qp.modify({ qpState: QpState.RTR, pathMtu: mtu, destQpNum: rem.qpn, rqPsn: rem.psn, maxDestRdAtomic: 1, minRnrTimer: 12, ahAttr });
    qp.modify({ qpState: QpState.RTS, timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: psn, maxRdAtomic: 1 });
    return null;
  } else if (type === 'uc') {
    // uc_pingpong.c pp_connect_ctx: RTR with path MTU, destination QPN, receive PSN and the address; RTS with the send PSN.
    qp.modify({ qpState: QpState.RTR, pathMtu: mtu, destQpNum: rem.qpn, rqPsn: rem.psn, ahAttr });
    qp.modify({ qpState: QpState.RTS, sqPsn: psn });
    return null;
  }
  // ud_pingpong.c pp_connect_ctx: RTR with the state only, RTS with the send PSN, then the address handle.
  qp.modify({ qpState: QpState.RTR });
  qp.modify({ qpState: QpState.RTS, sqPsn: psn });
  return { ah: dev.createAh(end.pd, ahAttr), remoteQpn: rem.qpn, remoteQkey: UD_QKEY };
}

/**
 * The address exchange (pp_client_exch_dest / pp_server_exch_dest) and the connection: the server
 * connects before it answers, the client once the exchange is over.
 */
async function exchangeAndConnect(
  dev: Device,
  cfg: PingpongConfig,
  plan: PingpongPlan,
  end: PingpongEnd,
): Promise<{ remote: PingpongDest; udDest: UdDest | null }> {
  const { tool, stepMs } = plan;
  let remote: PingpongDest;
  let udDest: UdDest | null = null;
  const ch = await openOobChannel(cfg, 300_000, () => configError('server', 'is needed for the client role'));
  try {
    if (cfg.role === 'client') {
      await ch.writeExact(encodePingpongDest(end.me));
      remote = decodePingpongDest(await ch.readExact(PINGPONG_MSG_SIZE, `${tool} address message`, stepMs));
      await ch.writeExact(encodeDone());
    } else {
      remote = decodePingpongDest(await ch.readExact(PINGPONG_MSG_SIZE, `${tool} address message`, stepMs));
      udDest = await connect(dev, cfg, plan, end, remote);
      await ch.writeExact(encodePingpongDest(end.me));
      checkDone(await ch.readExact(PINGPONG_DONE_SIZE, `${tool} "done"`, stepMs));
    }
  } finally {
    ch.close();
  }
  // The client connects its QP once the exchange is over (pp_client_exch_dest, then pp_connect_ctx).
  if (cfg.role === 'client') udDest = await connect(dev, cfg, plan, end, remote);
  return { remote, udDest };
}

/** -c: every received message checked (see the file comment). */
class MessageCheck {
  readonly verify: PingpongResult['verify'];
  readonly problems: string[] = [];
  /** The server's first message, which every later one must equal. */
  private firstSeen: Uint8Array | null = null;

  constructor(
    enabled: boolean,
    private readonly end: PingpongEnd,
    private readonly size: number,
  ) {
    this.verify = { enabled, messagesChecked: 0, bytesChecked: 0, mismatches: 0 };
  }

  /** Checks the message of `byteLen` bytes just received into the buffer. */
  check(byteLen: number): void {
    const { size, verify, problems } = this;
    const { buf, grh, pattern } = this.end;
    const got = buf.subarray(grh, grh + size);
    let bad = -1;
    if (byteLen !== size + grh) bad = -2;
    else if (pattern !== null) {
      for (let i = 0; i < size && bad < 0; i++) if (got[i] !== pattern[i]) bad = i;
    } else if (this.firstSeen !== null) {
      const firstSeen = this.firstSeen;
      for (let i = 0; i < size && bad < 0; i++) if (got[i] !== firstSeen[i]) bad = i;
    } else {
      // The first message: the tools' buffer (0x7b, page starts 0 with -c), or roce-ts's pattern.
      const ours = pingpongPattern(size);
      let toolBad = -1;
      let oursBad = -1;
      for (let i = 0; i < size && toolBad < 0; i++) {
        const v = got[i] as number;
        if (v !== TOOL_FILL && !(v === 0 && i % PAGE_SIZE === 0)) toolBad = i;
      }
      if (toolBad >= 0) for (let i = 0; i < size && oursBad < 0; i++) if (got[i] !== ours[i]) oursBad = i;
      bad = toolBad < 0 || oursBad < 0 ? -1 : toolBad;
      this.firstSeen = got.slice();
    }
    verify.messagesChecked++;
    verify.bytesChecked += size;
    if (bad !== -1) {
      verify.mismatches++;
      if (problems.length < 5) {
        const firstSeen = this.firstSeen;
        problems.push(
          bad === -2
            ? `message ${verify.messagesChecked}: ${byteLen} bytes received, expected ${size + grh}`
            : `message ${verify.messagesChecked}: invalid data at byte ${bad} (page ${Math.floor(bad / PAGE_SIZE)}): 0x${(got[bad] as number).toString(16)}, expected 0x${(pattern !== null ? (pattern[bad] as number) : firstSeen !== null && verify.messagesChecked > 1 ? (firstSeen[bad] as number) : TOOL_FILL).toString(16)}`,
        );
      }
    }
  }
}

/** What the ping-pong loop leaves for the report. */
interface PingpongRun {
  scnt: number;
  rcnt: number;
  /** The time of each SEND posted. */
  sendTimes: number[];
  start: number;
  end: number;
}

/** The ping-pong (main loop of rc_pingpong.c with parse_single_wc). */
async function pingpongLoop(
  dev: Device,
  cfg: PingpongConfig,
  plan: PingpongPlan,
  end: PingpongEnd,
  udDest: UdDest | null,
  checker: MessageCheck,
): Promise<PingpongRun> {
  const { tool, size, iters, rxDepth } = plan;
  const { qp, cq, mr, grh } = end;
  const runMs = plan.bound.ms;
  const clock = dev.clock;
  const idle = cfg.idleWait ?? nextTurn;
  const sendTimes: number[] = [];
  const postSend = (): void => {
    sendTimes.push(clock.now());
    if (udDest !== null) qp.postSend({ wrId: SEND_WRID, opcode: WrOpcode.SEND, sgList: [mr.sge(grh, size)], sendFlags: SendFlags.SIGNALED, ud: udDest });
    else qp.postSend({ wrId: SEND_WRID, opcode: WrOpcode.SEND, sgList: [mr.sge(0, size)], sendFlags: SendFlags.SIGNALED });
  };
  let pending = RECV_WRID;
  if (cfg.role === 'client') {
    postSend();
    pending |= SEND_WRID;
  }
  const start = cfg.role === 'client' ? (sendTimes[0] as number) : clock.now();
  let scnt = 0;
  let rcnt = 0;
  let deadline = Date.now() + runMs;
  let mark = progressMark(qp);
  while (rcnt < iters || scnt < iters) {
    const wcs = cq.poll(2);
    if (wcs.length === 0) {
      if (qp.state === QpState.ERR)
        throw new PerftestError(PerftestErrorCode.COMPLETION, `${tool}: QP 0x${qp.qpNum.toString(16)} went to the error state: ${qp.errorReason}`, 'qp');
      const m = progressMark(qp);
      if (m !== mark) {
        mark = m; // the transport moved (a response or a request taken): the no-progress clock starts again
        deadline = Date.now() + runMs;
      }
      if (Date.now() > deadline)
        throw new PerftestError(
          PerftestErrorCode.TIMEOUT,
          `${tool}: no progress within ${runMs} ms (${plan.bound.why}; sent ${scnt}, received ${rcnt} of ${iters}) [${qpStateReport(qp, dev.driver)}]`,
          'completion',
        );
      await idle();
      continue;
    }
    deadline = Date.now() + runMs; // progress: the no-progress clock starts again
    for (const wc of wcs) {
      if (wc.status !== WcStatus.SUCCESS) {
        // As client, the peer sends reply k only after receiving message k: with every reply in,
        // a last SEND that ran out of retries was delivered and only its ACK was lost, after which
        // the peer exited (rc_pingpong's final-ACK race under loss; see docs/interop.md).
        const race = cfg.role === 'client' && wc.status === WcStatus.RETRY_EXC_ERR && Number(wc.wrId) === SEND_WRID && rcnt === iters && scnt === iters - 1;
        const hint = race ? `; all ${iters} replies arrived, so the peer received this last message: only its ACK was lost before the peer exited` : '';
        throw new PerftestError(
          PerftestErrorCode.COMPLETION,
          `${tool}: failed status ${WC_STATUS_NAMES[wc.status] ?? wc.status} for wr_id ${wc.wrId}${wc.vendorErr ? ` (${wc.vendorErr})` : ''}${hint}`,
          'completion',
        );
      }
      const id = Number(wc.wrId);
      if (id === SEND_WRID) scnt++;
      else if (id === RECV_WRID) {
        if (checker.verify.enabled) checker.check(wc.byteLen);
        if (--end.routs <= 1) end.routs += postRecvs(qp, mr, size + grh, rxDepth - end.routs);
        rcnt++;
      } else throw new PerftestError(PerftestErrorCode.COMPLETION, `${tool}: completion for unknown wr_id ${id}`, 'completion');
      pending &= ~id;
      if (scnt < iters && pending === 0) {
        postSend();
        pending = RECV_WRID | SEND_WRID;
      }
    }
  }
  const stop = clock.now();
  if (plan.type === 'rc' && cfg.lingerAfterLast === true) await answerLastRetransmissions(qp, clock, idle);
  return { scnt, rcnt, sendTimes, start, end: stop };
}

/** The figures, as the tool prints them, with the data checks and the QP's health. */
function reportPingpong(
  cfg: PingpongConfig,
  plan: PingpongPlan,
  end: PingpongEnd,
  remote: PingpongDest,
  run: PingpongRun,
  checker: MessageCheck,
): PingpongResult {
  const { tool, size, iters, mtu } = plan;
  const { qp, psn, myGid } = end;
  const { scnt, rcnt, sendTimes } = run;
  const { verify, problems } = checker;
  const seconds = Math.max(1e-9, (run.end - run.start) / 1e9);
  const bytes = size * iters * 2;
  const samples: number[] = [];
  for (let i = 0; i + 1 < sendTimes.length; i++) samples.push(((sendTimes[i + 1] as number) - (sendTimes[i] as number)) / 1000);
  const round = (x: number): number => Math.round(x * 1e6) / 1e6;
  const health = qpHealth(qp);
  problems.push(...health.problems);
  return {
    ok: verify.mismatches === 0 && health.problems.length === 0,
    test: tool,
    role: cfg.role,
    msgSize: size,
    iterations: iters,
    bytes,
    messages: scnt + rcnt,
    seconds: round(seconds),
    gbps: round((bytes * 8) / seconds / 1e9),
    mbps: round((bytes * 8) / seconds / 1e6),
    usecPerIter: round((seconds * 1e6) / iters),
    latencyUs: latencyStats(samples),
    mtu: mtuBytes(mtu),
    local: { lid: 0, qpn: qp.qpNum, psn, gid: ipv6ToString(myGid) },
    remote: { lid: remote.lid, qpn: remote.qpn, psn: remote.psn, gid: ipv6ToString(remote.gid) },
    counters: nonZeroCounters(qp.counters),
    verify,
    problems,
    warnings: health.warnings,
  };
}

/** Runs one end of ibv_rc/uc/ud_pingpong: plan, set up, exchange and connect, the ping-pong, the report. */
export async function runPingpong(dev: Device, cfg: PingpongConfig): Promise<PingpongResult> {
  const plan = planPingpong(dev, cfg);
  const end = setUpPingpong(dev, cfg, plan);
  try {
    const { remote, udDest } = await exchangeAndConnect(dev, cfg, plan, end);
    const checker = new MessageCheck(cfg.validate === true, end, plan.size);
    const run = await pingpongLoop(dev, cfg, plan, end, udDest, checker);
    return reportPingpong(cfg, plan, end, remote, run, checker);
  } finally {
    dev.destroyQp(end.qp);
    dev.deregMr(end.mr);
  }
}
