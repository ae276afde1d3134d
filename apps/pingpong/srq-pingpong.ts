/**
 * ibv_srq_pingpong on a `Device` (rdma-core libibverbs/examples/srq_pingpong.c): `numQp` RC QPs
 * (default 16) sharing one receive queue (an SRQ of rx_depth, default 500) and one CQ, the
 * ping-pong of rc_pingpong on every QP at once.
 *
 * The exchange: always MAX_QP = 256 of rc_pingpong's 52-byte address messages each way, those of
 * QPs beyond `numQp` all zero; the client writes its 256, reads the server's 256, connects and
 * writes "done\0"; the server reads 256, connects, writes its 256 and reads "done".
 *
 * The loop: the client posts a SEND on every QP; a QP sends again once its previous SEND has
 * completed and a message has arrived on it (`pending`). `iters` counts SEND completions and
 * receives over all QPs together (`while (rcnt < iters || scnt < iters)`), so a QP whose turn
 * comes while fewer than `iters` SENDs have completed sends once more: each side may send up to
 * numQp − 1 messages beyond `iters`, and receives re-posted to the SRQ take them. Receives are
 * topped up to rx_depth whenever no more than numQp are left (as the tool). QP attributes are
 * rc_pingpong's (pp_connect_ctx); the SRQ's receives are all `size` bytes of one buffer.
 */
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { SharedReceiveQueue } from '../../stack/shared-receive-queue';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcStatus } from '../../stack/work-completion';
import { mtuBytes } from '../../stack/mtu';
import { defaultGidIndex, isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { OobError, OobErrorCode } from '../oob/tcp-channel';
import { openOobChannel } from '../oob/oob-endpoint';
import type { PingpongConfig } from './pingpong';
import {
  PINGPONG_DONE_SIZE,
  PINGPONG_MSG_SIZE,
  type PingpongDest,
  asciiUntilNul,
  checkDone,
  decodePingpongDest,
  encodeDone,
  encodePingpongDest,
} from '../oob/pingpong-messages';
import { PerftestError, PerftestErrorCode, configError } from '../perftest/perftest-error';
import { nonZeroCounters } from '../perftest/result';
import { progressMarkAll } from '../perftest/completion-waits';
import { qpStateReport } from '../perftest/qp-state-report';
import { type PingpongPlanBase, checkedSizesAndBounds } from './pingpong-plan';
import { qpHealth } from '../host/qp-health';
import { nextTurn } from '../host/clock-pump';
import { addCounters, newCounters, type Counters } from '../../stack/counters';

/** srq_pingpong's MAX_QP: the exchange always carries this many address messages. */
export const SRQ_MAX_QP = 256;
const SEND_WRID = 1;
const RECV_WRID = 2;
const TOOL_FILL = 0x7b;

/** The run's parameters: rc_pingpong's, but for its transport and -c, and the SRQ's QP count. */
export interface SrqPingpongConfig extends Omit<PingpongConfig, 'type' | 'validate' | 'gidIndex'> {
  /** QPs on the SRQ (srq_pingpong -q, default 16, less than 256). */
  numQp?: number;
  /** Source GID index (default: the first IPv4-mapped GID); RoCE needs one. */
  gidIndex?: number;
}

export interface SrqPingpongResult {
  ok: boolean;
  test: 'srq_pingpong';
  role: 'client' | 'server';
  numQp: number;
  msgSize: number;
  iterations: number;
  /** Bytes as the tool counts them (size × iters × 2). */
  bytes: number;
  /** SENDs completed and messages received by this side (each at least `iterations`). */
  sends: number;
  receives: number;
  /** Messages received on each QP (every QP carried its share). */
  receivesPerQp: number[];
  seconds: number;
  mbps: number;
  usecPerIter: number;
  mtu: number;
  /** Each QP: this side's QPN and PSN and the peer's. */
  qpPairs: { local: { qpn: number; psn: number }; remote: { qpn: number; psn: number } }[];
  gid: { local: string; remote: string };
  /** The QPs' counters added up (rxe names), the ones that are not zero. */
  counters: Partial<Counters>;
  problems: string[];
  warnings: string[];
}

/** What the configuration asks for, checked: QP count, depths, sizes, MTU, GID index and time bounds. */
interface SrqPlan extends PingpongPlanBase {
  numQp: number;
}

function planSrqPingpong(dev: Device, cfg: SrqPingpongConfig): SrqPlan {
  const numQp = cfg.numQp ?? 16;
  const rxDepth = cfg.rxDepth ?? 500;
  if (!Number.isInteger(numQp) || numQp < 1 || numQp >= SRQ_MAX_QP)
    throw configError('numQp', `must be 1..${SRQ_MAX_QP - 1} (srq_pingpong: "num_qp must be less than ${SRQ_MAX_QP}"), got ${numQp}`);
  if (!Number.isInteger(rxDepth) || rxDepth < 1 || rxDepth > 1 << 15) throw configError('rxDepth', `must be 1..32768, got ${rxDepth}`);
  if (numQp > rxDepth)
    throw configError(
      'rxDepth',
      `${rxDepth} is too small for ${numQp} QPs (srq_pingpong: "rx_depth is too small for num_qp QPs -- must have at least one receive per QP")`,
    );
  const common = checkedSizesAndBounds(dev, cfg, cfg.size ?? 4096);
  const gidIndex = cfg.gidIndex ?? defaultGidIndex(dev.gids);
  if (gidIndex < 0 || gidIndex >= dev.gids.length) throw configError('gidIndex', `${gidIndex} is not in the GID table (${dev.gids.length} entries)`);
  return { ...common, numQp, rxDepth, gidIndex };
}

/** This side's verbs objects, what it tells the peer, and what the peer told it. */
interface SrqEnd {
  pd: ProtectionDomain;
  mr: MemoryRegion;
  cq: CompletionQueue;
  srq: SharedReceiveQueue;
  /** The QPs made so far (all are destroyed at the end, however far set-up got). */
  qps: QueuePair[];
  psns: number[];
  /** QPN -> index of the QP. */
  qpIndex: Map<number, number>;
  /** Receives outstanding on the SRQ. */
  routs: number;
  /** This side's GID (set with the QPs). */
  myGid: Uint8Array;
  /** The peer's address message for each QP. */
  remotes: PingpongDest[];
}

/** pp_init_ctx: one buffer (0x7b), one CQ of rx_depth + num_qp, the SRQ; the QPs follow in createQps. */
function setUpSrq(dev: Device, plan: SrqPlan): SrqEnd {
  const buf = new Uint8Array(plan.size).fill(TOOL_FILL);
  const pd = dev.allocPd();
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE);
  const cq = dev.createCq(plan.rxDepth + plan.numQp);
  const srq = dev.createSrq(pd, { maxWr: plan.rxDepth, maxSge: 1 });
  return { pd, mr, cq, srq, qps: [], psns: [], qpIndex: new Map(), routs: 0, myGid: new Uint8Array(16), remotes: [] };
}

/** pp_init_ctx, continued: num_qp RC QPs on the SRQ in INIT, then rx_depth receives on the SRQ. */
function createQps(dev: Device, plan: SrqPlan, end: SrqEnd): void {
  const { numQp, rxDepth, gidIndex } = plan;
  const { cq, srq } = end;
  for (let i = 0; i < numQp; i++) {
    const qp = dev.createQp(end.pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, srq, cap: { maxSendWr: 1, maxRecvWr: 0, maxSendSge: 1, maxRecvSge: 1 } });
    qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: 0 });
    end.qps.push(qp);
    end.psns.push(dev.randomPsn());
    end.qpIndex.set(qp.qpNum, i);
  }
  end.routs = postRecvs(plan, end, rxDepth);
  end.myGid = dev.gids[gidIndex] as Uint8Array;
}

/** Posts `n` receives of the message size on the SRQ; returns `n`. */
function postRecvs(plan: SrqPlan, end: SrqEnd, n: number): number {
  for (let i = 0; i < n; i++) end.srq.postRecv({ wrId: RECV_WRID, sgList: [end.mr.sge(0, plan.size)] });
  return n;
}

/** pp_connect_ctx for every QP, once the peer's address messages are in. */
async function connect(cfg: SrqPingpongConfig, plan: SrqPlan, end: SrqEnd): Promise<void> {
  const { numQp, gidIndex, mtu } = plan;
  const { remotes, myGid } = end;
  const first = remotes[0] as PingpongDest;
  for (let i = 0; i < numQp; i++) {
    const rem = remotes[i] as PingpongDest;
    if (rem.gid.subarray(8).every((b) => b === 0))
      throw new OobError(
        OobErrorCode.INCOMPATIBLE,
        `srq_pingpong address message ${i}: field gid is ${ipv6ToString(rem.gid)}; RoCE needs the peer's GID (run the peer with -g, and with as many QPs, -q ${numQp})`,
        'gid',
      );
    if (rem.qpn === 0)
      throw new OobError(OobErrorCode.MALFORMED, `srq_pingpong address message ${i}: no QP (the peer runs fewer QPs; give both -q ${numQp})`, 'qpn');
  }
  if (isIpv4MappedGid(myGid) !== isIpv4MappedGid(first.gid))
    throw new PerftestError(
      PerftestErrorCode.INCOMPATIBLE,
      `GID types differ: this side uses ${ipv6ToString(myGid)}, the peer ${ipv6ToString(first.gid)} (choose -g of the same IP version)`,
      'gid',
    );
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(first.gid);
  end.qps.forEach((qp, i) => {
    const rem = remotes[i] as PingpongDest;
    const ahAttr = { dgid: rem.gid, sgidIndex: gidIndex, hopLimit: 1, trafficClass: cfg.trafficClass ?? 0 };
    qp.modify({ qpState: QpState.RTR, pathMtu: mtu, destQpNum: rem.qpn, rqPsn: rem.psn, maxDestRdAtomic: 1, minRnrTimer: 12, ahAttr });
    qp.modify({ qpState: QpState.RTS, timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: end.psns[i] as number, maxRdAtomic: 1 });
  });
}

/** The peer's SRQ_MAX_QP address messages: one per QP of ours, and zeroed ones beyond. */
async function readAll(plan: SrqPlan, end: SrqEnd, read: (n: number, what: string, ms: number) => Promise<Uint8Array>): Promise<void> {
  const { numQp, stepMs } = plan;
  for (let i = 0; i < SRQ_MAX_QP; i++) {
    const msg = await read(PINGPONG_MSG_SIZE, `srq_pingpong address message ${i}`, stepMs);
    if (i < numQp) {
      end.remotes.push(decodePingpongDest(msg));
      continue;
    }
    // Beyond our QPs the peer's messages are its zeroed my_dest entries; a QPN there means it runs more QPs.
    const qpn = Number.parseInt(asciiUntilNul(msg).split(':')[1] ?? '0', 16);
    if (qpn !== 0)
      throw new OobError(
        OobErrorCode.INCOMPATIBLE,
        `srq_pingpong address message ${i}: the peer has QP 0x${qpn.toString(16)} there, so it runs more than ${numQp} QPs (give both -q the same)`,
        'qpn',
      );
  }
}

/** The address exchange (SRQ_MAX_QP messages each way) and the connection: the server connects before it answers, the client after. */
async function exchangeAndConnect(cfg: SrqPingpongConfig, plan: SrqPlan, end: SrqEnd): Promise<void> {
  const { numQp, stepMs } = plan;
  const zero: PingpongDest = { lid: 0, qpn: 0, psn: 0, gid: new Uint8Array(16) };
  const mine = (i: number): PingpongDest => (i < numQp ? { lid: 0, qpn: (end.qps[i] as QueuePair).qpNum, psn: end.psns[i] as number, gid: end.myGid } : zero);
  const ch = await openOobChannel(cfg, 300_000, () => configError('server', 'is needed for the client role'));
  try {
    const writeAll = async (): Promise<void> => {
      for (let i = 0; i < SRQ_MAX_QP; i++) await ch.writeExact(encodePingpongDest(mine(i)));
    };
    if (cfg.role === 'client') {
      await writeAll();
      await readAll(plan, end, (n, w, ms) => ch.readExact(n, w, ms));
      await ch.writeExact(encodeDone());
    } else {
      await readAll(plan, end, (n, w, ms) => ch.readExact(n, w, ms));
      await connect(cfg, plan, end);
      await writeAll();
      checkDone(await ch.readExact(PINGPONG_DONE_SIZE, 'srq_pingpong "done"', stepMs));
    }
  } finally {
    ch.close();
  }
  if (cfg.role === 'client') await connect(cfg, plan, end);
}

/** What the ping-pong loop leaves for the report. */
interface SrqRun {
  scnt: number;
  rcnt: number;
  receivesPerQp: number[];
  seconds: number;
}

/** The ping-pong on every QP at once (main loop of srq_pingpong.c): each QP sends again once its SEND completed and a message arrived on it. */
async function srqPingpongLoop(dev: Device, cfg: SrqPingpongConfig, plan: SrqPlan, end: SrqEnd): Promise<SrqRun> {
  const { numQp, rxDepth, size, iters, bound } = plan;
  const { qps, cq, mr, qpIndex } = end;
  const clock = dev.clock;
  const idle = cfg.idleWait ?? nextTurn;
  const pending = new Array<number>(numQp).fill(RECV_WRID);
  const receivesPerQp = new Array<number>(numQp).fill(0);
  const send = (i: number): void =>
    (qps[i] as QueuePair).postSend({ wrId: SEND_WRID, opcode: WrOpcode.SEND, sgList: [mr.sge(0, size)], sendFlags: SendFlags.SIGNALED });
  const start = clock.now();
  if (cfg.role === 'client') {
    for (let i = 0; i < numQp; i++) {
      send(i);
      pending[i] = SEND_WRID | RECV_WRID;
    }
  }
  let scnt = 0;
  let rcnt = 0;
  let deadline = Date.now() + bound.ms;
  let mark = progressMarkAll(qps);
  while (rcnt < iters || scnt < iters) {
    const wcs = cq.poll(numQp + rxDepth);
    if (wcs.length === 0) {
      const dead = qps.find((q) => q.state === QpState.ERR);
      if (dead !== undefined)
        throw new PerftestError(
          PerftestErrorCode.COMPLETION,
          `srq_pingpong: QP 0x${dead.qpNum.toString(16)} went to the error state: ${dead.errorReason}`,
          'qp',
        );
      const m = progressMarkAll(qps);
      if (m !== mark) {
        mark = m;
        deadline = Date.now() + bound.ms;
      }
      if (Date.now() > deadline)
        throw new PerftestError(
          PerftestErrorCode.TIMEOUT,
          `srq_pingpong: no progress within ${bound.ms} ms (${bound.why}; sent ${scnt}, received ${rcnt} of ${iters}) [${qpStateReport(qps[0] as QueuePair, dev.driver)}]`,
          'completion',
        );
      await idle();
      continue;
    }
    deadline = Date.now() + bound.ms;
    for (const wc of wcs) {
      if (wc.status !== WcStatus.SUCCESS)
        throw new PerftestError(
          PerftestErrorCode.COMPLETION,
          `srq_pingpong: failed status ${WC_STATUS_NAMES[wc.status] ?? wc.status} for wr_id ${wc.wrId}`,
          'completion',
        );
      const i = qpIndex.get(wc.qpNum);
      if (i === undefined)
        throw new PerftestError(PerftestErrorCode.COMPLETION, `srq_pingpong: couldn't find QPN ${wc.qpNum.toString(16).padStart(6, '0')}`, 'completion');
      const id = Number(wc.wrId);
      if (id === SEND_WRID) scnt++;
      else if (id === RECV_WRID) {
        if (--end.routs <= numQp) end.routs += postRecvs(plan, end, rxDepth - end.routs);
        rcnt++;
        receivesPerQp[i] = (receivesPerQp[i] as number) + 1;
      } else throw new PerftestError(PerftestErrorCode.COMPLETION, `srq_pingpong: completion for unknown wr_id ${id}`, 'completion');
      pending[i] = (pending[i] as number) & ~id;
      if (scnt < iters && pending[i] === 0) {
        send(i);
        pending[i] = RECV_WRID | SEND_WRID;
      }
    }
  }
  const seconds = Math.max(1e-9, (clock.now() - start) / 1e9);
  return { scnt, rcnt, receivesPerQp, seconds };
}

/** The figures, as the tool prints them, with every QP's health. */
function reportSrqPingpong(cfg: SrqPingpongConfig, plan: SrqPlan, end: SrqEnd, run: SrqRun): SrqPingpongResult {
  const { numQp, size, iters, mtu } = plan;
  const { qps, psns, remotes, myGid } = end;
  const { seconds } = run;
  const bytes = size * iters * 2;
  const round = (x: number): number => Math.round(x * 1e6) / 1e6;
  const problems: string[] = [];
  const warnings: string[] = [];
  qps.forEach((qp, i) => {
    const h = qpHealth(qp);
    problems.push(...h.problems.map((p) => `QP ${i}: ${p}`));
    warnings.push(...h.warnings.map((w) => `QP ${i}: ${w}`));
  });
  return {
    ok: problems.length === 0,
    test: 'srq_pingpong',
    role: cfg.role,
    numQp,
    msgSize: size,
    iterations: iters,
    bytes,
    sends: run.scnt,
    receives: run.rcnt,
    receivesPerQp: run.receivesPerQp,
    seconds: round(seconds),
    mbps: round((bytes * 8) / seconds / 1e6),
    usecPerIter: round((seconds * 1e6) / iters),
    mtu: mtuBytes(mtu),
    qpPairs: qps.map((qp, i) => ({
      local: { qpn: qp.qpNum, psn: psns[i] as number },
      remote: { qpn: (remotes[i] as PingpongDest).qpn, psn: (remotes[i] as PingpongDest).psn },
    })),
    gid: { local: ipv6ToString(myGid), remote: ipv6ToString((remotes[0] as PingpongDest).gid) },
    counters: nonZeroCounters(qps.reduce((sum, q) => addCounters(sum, q.counters), newCounters())),
    problems,
    warnings,
  };
}

/** Runs one end of ibv_srq_pingpong: plan, set up, exchange and connect, the ping-pong, the report. */
export async function runSrqPingpong(dev: Device, cfg: SrqPingpongConfig): Promise<SrqPingpongResult> {
  const plan = planSrqPingpong(dev, cfg);
  const end = setUpSrq(dev, plan);
  try {
    createQps(dev, plan, end);
    await exchangeAndConnect(cfg, plan, end);
    const run = await srqPingpongLoop(dev, cfg, plan, end);
    return reportSrqPingpong(cfg, plan, end, run);
  } finally {
    for (const qp of end.qps) dev.destroyQp(qp);
    dev.deregMr(end.mr);
  }
}
