/**
 * This end of one perftest test, client or server: its buffer, memory region,
 * completion queues and QP (ctx_init), the key messages it sends and checks,
 * the QP's connection (ctx_connect), its receives and the bandwidth reports
 * exchanged; the session (apps/oob/perftest-session.ts) calls it step by step.
 * QP attributes as perftest sets them: timeout -u (default 14), retry 7, RNR
 * retry 7, min RNR timer 12, GRH hop limit 255. Its measured loop is in
 * bandwidth.ts or latency.ts.
 */
import { internalError } from '../../base/programming-error';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import { Access, QpState, QpType, SendFlags, WrOpcode, type Mtu } from '../../stack/types';
import type { SendWr } from '../../stack/work-request';
import { isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { OobError, OobErrorCode } from '../oob/tcp-channel';
import { type BwReport, type PerftestDest, type PerftestVersion, DEFAULT_CACHE_LINE_SIZE, DEFAULT_CYCLE_BUFFER, emptyBwReport } from '../oob/perftest-messages';
import { type PerftestLocalSide, type SysData, PerftestVerb as Verb, perftestBinary } from '../oob/perftest-session';
import { nextTurn } from '../host/clock-pump';
import { DEVICE_MAX_RD_ATOMIC, type PerftestConfig, type ResolvedConfig } from './config';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { BufferLayout } from './buffer-layout';
import { Verifier } from './verification';
import { Measurement } from './measurement';
import { CompletionWaits } from './completion-waits';
import { noProgressBound } from '../host/no-progress-bound';
import { runBandwidth } from './bandwidth';
import { runLatency } from './latency';
import type { CmTestConnection } from './cm-test-connection';

const MIN_RNR_TIMER = 12;
/** perftest's retry_cnt and rnr_retry (ctx_modify_qp_to_rts: 7 and 7). */
const RETRY_CNT = 7;
const RNR_RETRY = 7;

/** What the measured loops work with, once the side is set up. */
export interface SideResources {
  qp: QueuePair;
  mr: MemoryRegion;
  sendCq: CompletionQueue;
  recvCq: CompletionQueue;
  layout: BufferLayout;
  verifier: Verifier;
}

export class PerftestSide implements PerftestLocalSide {
  readonly sysData: SysData = { cycleBuffer: DEFAULT_CYCLE_BUFFER, cacheLineSize: DEFAULT_CACHE_LINE_SIZE };
  readonly mtu: Mtu;
  readonly binary: string;
  agreedMtu: Mtu;
  peerVersion: PerftestVersion | null = null;
  layout: BufferLayout | null = null;
  buf = new Uint8Array(0);
  mr: MemoryRegion | null = null;
  qp: QueuePair | null = null;
  sendCq: CompletionQueue | null = null;
  recvCq: CompletionQueue | null = null;
  psn = 0;
  remote: PerftestDest | null = null;
  peerReport: BwReport | null = null;
  myReport: BwReport = emptyBwReport();
  verifier: Verifier | null = null;
  readonly measured = new Measurement();
  /** True once the peer's next out-of-band message has arrived (set by runPerftest). */
  peerDone: () => boolean = () => false;
  readonly waits: CompletionWaits;

  /** With -R: the test QP's RDMA CM connection (cm-test-connection.ts); null on the TCP exchange. */
  constructor(
    readonly dev: Device,
    readonly rc: ResolvedConfig,
    readonly cfg: PerftestConfig,
    readonly cmTest: CmTestConnection | null = null,
  ) {
    this.mtu = rc.mtu;
    this.agreedMtu = rc.mtu;
    this.binary = perftestBinary(rc.verb, rc.lat);
    // perftest's QP timers (connect() below): the no-progress bound follows from them unless the caller gives one.
    const bound = cfg.runTimeoutMs !== undefined ? { ms: cfg.runTimeoutMs, why: 'the run timeout given' } : noProgressBound({ timeout: rc.qpTimeout, retryCnt: RETRY_CNT, rnrRetry: RNR_RETRY, minRnrTimer: MIN_RNR_TIMER });
    this.waits = new CompletionWaits(this.binary, bound, cfg.idleWait ?? nextTurn, this);
  }

  setup(agreed: { sysData: SysData; mtu: Mtu; peerVersion: PerftestVersion }): void {
    const { rc, dev } = this;
    this.peerVersion = agreed.peerVersion;
    this.agreedMtu = agreed.mtu;
    const layout = new BufferLayout(rc, agreed.sysData);
    this.layout = layout;
    this.buf = new Uint8Array(layout.total);
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
    this.verifier = new Verifier(rc, this.buf, layout);
    if (rc.verify) this.verifier.fill();
  }

  /** The side's resources; only once it is set up. */
  resources(): SideResources {
    const { qp, mr, sendCq, recvCq, layout, verifier } = this;
    if (qp === null || mr === null || sendCq === null || recvCq === null || layout === null || verifier === null) throw internalError('run before set-up');
    return { qp, mr, sendCq, recvCq, layout, verifier };
  }

  dest(): PerftestDest {
    const { mr, layout } = this;
    if (mr === null || this.qp === null || layout === null) throw internalError('key message before set-up');
    const gid = this.dev.gids[this.rc.gidIndex] as Uint8Array;
    return { lid: 0, outReads: this.rc.outReads, qpn: this.qp.qpNum, psn: this.psn, rkey: mr.rkey, vaddr: mr.addr(layout.half), tailMarkersVaddr: 0n, gid, srqn: 0 };
  }

  onPeerDest(_i: number, d: PerftestDest, purpose: string): void {
    if (this.remote === null) {
      if (d.gid === null) throw new OobError(OobErrorCode.MALFORMED, 'perftest key message: the peer sent no GID, which RoCE needs', 'gid');
      const mine = this.dev.gids[this.rc.gidIndex] as Uint8Array;
      // ctx_check_gid_compatibility() is skipped with -R: the CM has chosen the path already.
      if (this.cmTest === null && isIpv4MappedGid(mine) !== isIpv4MappedGid(d.gid)) {
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
      qp.modify({ qpState: QpState.RTS, sqPsn: this.psn, timeout: rc.qpTimeout, retryCnt: RETRY_CNT, rnrRetry: RNR_RETRY, maxRdAtomic: Math.min(remote.outReads, DEVICE_MAX_RD_ATOMIC) });
    }
  }

  /** -R, server: listen for the test connection. */
  cmListen(): void {
    if (this.rc.role === 'server') this.cmTest?.listen();
  }

  /** -R: the QP connected through the RDMA CM, which moves it to RTR and RTS (cma_modify_qp_rtr/rts). */
  async cmConnect(): Promise<void> {
    const { qp, cmTest } = this;
    if (qp === null || cmTest === null) throw internalError('RDMA CM connection before set-up');
    await cmTest.connect(qp);
    this.psn = cmTest.localPsn();
    this.agreedMtu = qp.attr.pathMtu;
  }

  postReceives(): void {
    const { rc, qp, mr, layout } = this;
    if (qp === null || mr === null || layout === null) return;
    for (let j = 0; j < rc.rxDepth; j++) qp.postRecv({ wrId: j, sgList: [mr.sge(layout.recvOffset(j), rc.size)] });
  }

  /** Runs the measured loop of the test. */
  async run(): Promise<void> {
    if (this.rc.lat) await runLatency(this);
    else await runBandwidth(this);
  }

  /** An out-of-band wait once the QP is connected: watched (completion-waits.ts `watch`); `peerRuns` when the peer's run is what it waits for. */
  whileConnected<T>(wait: Promise<T>, what: string, peerRuns: boolean): Promise<T> {
    if (this.qp === null || this.remote === null) return wait;
    return this.waits.watch(wait, what, peerRuns);
  }

  report(): BwReport {
    return this.myReport;
  }

  onPeerReport(r: BwReport): void {
    this.peerReport = r;
  }

  /** Message `k` of the test, signaled or not. */
  sendWr(k: number, signaled: boolean): SendWr {
    const { rc, mr, remote, layout } = this;
    if (mr === null || remote === null || layout === null) throw internalError('post before connect');
    const off = layout.slotOffset(k);
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

  /** Checks done once the whole test is over (see verification.ts). */
  finalVerify(): void {
    this.verifier?.checkAtEnd();
  }

  release(): void {
    if (this.qp !== null) this.dev.destroyQp(this.qp);
    if (this.mr !== null) this.dev.deregMr(this.mr);
  }
}
