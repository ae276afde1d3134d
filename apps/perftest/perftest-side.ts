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
import type { WarmUpReport } from './warm-up';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { Mtu } from '../../stack/mtu';
import type { SendWr } from '../../stack/work-request';
import { isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { psnAdd } from '../../base/psn';
import { OobError, OobErrorCode } from '../oob/tcp-channel';
import { type BwReport, type PerftestDest, type PerftestVersion, DEFAULT_CACHE_LINE_SIZE, DEFAULT_CYCLE_BUFFER, emptyBwReport } from '../oob/perftest-messages';
import { type PerftestLocalSide, type SysData, PerftestVerb as Verb, perftestBinary } from '../oob/perftest-session';
import { nextTurn } from '../host/clock-pump';
import { Connection, DEVICE_MAX_RD_ATOMIC, Mismatch, type PerftestConfig, type ResolvedConfig } from './config';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { BufferLayout } from './buffer-layout';
import { Verifier } from './verification';
import { Measurement, type SizeResult, sizeResult } from './measurement';
import { CompletionWaits } from './completion-waits';
import { noProgressBound } from '../host/no-progress-bound';
import { runBandwidth } from './bandwidth';
import { runLatency } from './latency';
import { connectionInfo } from './result';
import type { CmTestConnection } from './cm-test-connection';

const MIN_RNR_TIMER = 12;
/** perftest's DEFF_QKEY, the Q_Key of its UD QPs. */
const UD_QKEY = 0x11111111;
const QP_TYPE = { [Connection.RC]: QpType.RC, [Connection.UC]: QpType.UC, [Connection.UD]: QpType.UD } as const;
/** perftest's retry_cnt and rnr_retry (ctx_modify_qp_to_rts: 7 and 7). */
const RETRY_CNT = 7;
const RNR_RETRY = 7;

/** What the measured loops work with, once the side is set up. */
export interface SideResources {
  /** QP 0 (the only one of a latency test). */
  qp: QueuePair;
  /** Every QP (perftest -q), all on `sendCq` and `recvCq`. */
  qps: readonly QueuePair[];
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
  /** The test's QPs (perftest -q; one by default). */
  qps: QueuePair[] = [];
  sendCq: CompletionQueue | null = null;
  recvCq: CompletionQueue | null = null;
  /** Each QP's first PSN. */
  psns: number[] = [];
  /** The peer's key message for each QP, as first received. */
  remotes: PerftestDest[] = [];
  /** UD: where each QP's SENDs go (the peer's QP behind an address handle), once connected. */
  private udDests: NonNullable<SendWr['ud']>[] = [];
  private pd: ReturnType<Device['allocPd']> | null = null;
  peerReport: BwReport | null = null;
  myReport: BwReport = emptyBwReport();
  verifier: Verifier | null = null;
  /** What the loop of the current size measured. */
  measured = new Measurement();
  /** The warm-up before the measured loop (--perform_warm_up), or null. */
  warmUp: WarmUpReport | null = null;
  /** perftest -a: what each size measured, in order (empty for a run of one size). */
  readonly sizeResults: SizeResult[] = [];
  /** The test's parameters as resolved; `rc` is the current size's (they differ only with -a). */
  readonly fullRc: ResolvedConfig;
  /** True once the peer's next out-of-band message has arrived (set by runPerftest). */
  peerDone: () => boolean = () => false;
  readonly waits: CompletionWaits;

  /** With -R: the test QP's RDMA CM connection (cm-test-connection.ts); null on the TCP exchange. */
  constructor(
    readonly dev: Device,
    public rc: ResolvedConfig,
    readonly cfg: PerftestConfig,
    readonly cmTest: CmTestConnection | null = null,
  ) {
    this.fullRc = rc;
    this.mtu = rc.mtu;
    this.agreedMtu = rc.mtu;
    this.binary = perftestBinary(rc.verb, rc.lat);
    // perftest's QP timers (connect() below): the no-progress bound follows from them unless the caller gives one.
    const bound =
      cfg.runTimeoutMs !== undefined
        ? { ms: cfg.runTimeoutMs, why: 'the run timeout given' }
        : noProgressBound({ timeout: rc.qpTimeout, retryCnt: RETRY_CNT, rnrRetry: RNR_RETRY, minRnrTimer: MIN_RNR_TIMER });
    this.waits = new CompletionWaits(this.binary, bound, cfg.idleWait ?? nextTurn, this);
  }

  /** QP 0 (null before set-up). */
  get qp(): QueuePair | null {
    return this.qps[0] ?? null;
  }

  /** QP 0's first PSN. */
  get psn(): number {
    return this.psns[0] ?? 0;
  }

  /** The peer's key message for QP 0 (null before it arrived). */
  get remote(): PerftestDest | null {
    return this.remotes[0] ?? null;
  }

  setup(agreed: { sysData: SysData; mtu: Mtu; peerVersion: PerftestVersion }): void {
    const { rc, dev } = this;
    this.peerVersion = agreed.peerVersion;
    this.agreedMtu = agreed.mtu;
    const layout = new BufferLayout(rc, agreed.sysData);
    this.layout = layout;
    this.buf = new Uint8Array(layout.total);
    const pd = dev.allocPd();
    this.pd = pd;
    this.mr = dev.regMr(pd, this.buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
    // create_cqs: one send and one receive CQ for all the QPs, tx (rx) depth × num_of_qps deep.
    this.sendCq = dev.createCq(Math.max(16, rc.txDepth * 2 * rc.qps));
    this.recvCq = dev.createCq(Math.max(16, rc.rxDepth * 2 * rc.qps));
    for (let q = 0; q < rc.qps; q++) {
      const qp = dev.createQp(pd, {
        qpType: QP_TYPE[rc.connection],
        sendCq: this.sendCq,
        recvCq: this.recvCq,
        // perftest -I: the QP's max_inline_data is the inline size (ctx_qp_create).
        cap: { maxSendWr: Math.max(rc.txDepth, 2), maxRecvWr: Math.max(rc.rxDepth, 2), maxSendSge: 1, maxRecvSge: 1, maxInlineData: rc.inlineSize },
      });
      // ctx_init leaves the QP in INIT (ctx_modify_qp_to_init), so receives can be posted before connecting:
      // UD with the Q_Key, UC with the access its verbs need, RC with every access.
      if (rc.connection === Connection.UD) qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: UD_QKEY });
      else if (rc.connection === Connection.UC)
        qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: Access.LOCAL_WRITE | Access.REMOTE_WRITE });
      else
        qp.modify({
          qpState: QpState.INIT,
          pkeyIndex: 0,
          portNum: 1,
          qpAccessFlags: Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC,
        });
      this.qps.push(qp);
      this.psns.push(dev.randomPsn());
    }
    this.verifier = new Verifier(rc, this.buf, layout);
    if (rc.verify) this.verifier.fill();
  }

  /** The side's resources; only once it is set up. */
  resources(): SideResources {
    const { qp, qps, mr, sendCq, recvCq, layout, verifier } = this;
    if (qp === null || mr === null || sendCq === null || recvCq === null || layout === null || verifier === null) throw internalError('run before set-up');
    return { qp, qps, mr, sendCq, recvCq, layout, verifier };
  }

  /** The key message of QP `i` (set_up_connection: its QPN and PSN, and its area of the second half). */
  dest(i: number): PerftestDest {
    const { mr, layout } = this;
    const qp = this.qps[i];
    if (mr === null || qp === undefined || layout === null) throw internalError('key message before set-up');
    const gid = this.dev.gids[this.rc.gidIndex] as Uint8Array;
    return {
      lid: 0,
      outReads: this.rc.outReads,
      qpn: qp.qpNum,
      psn: this.psns[i] ?? 0,
      rkey: mr.rkey,
      vaddr: mr.addr(layout.targetBase(i)),
      tailMarkersVaddr: 0n,
      gid,
      srqn: 0,
    };
  }

  onPeerDest(i: number, d: PerftestDest, purpose: string): void {
    const r = this.remotes[i];
    if (r === undefined) {
      if (i !== this.remotes.length) throw internalError(`key message of QP ${i} before QP ${this.remotes.length}`);
      if (d.gid === null) throw new OobError(OobErrorCode.MALFORMED, 'perftest key message: the peer sent no GID, which RoCE needs', 'gid');
      const mine = this.dev.gids[this.rc.gidIndex] as Uint8Array;
      // ctx_check_gid_compatibility() is skipped with -R: the CM has chosen the path already.
      if (this.cmTest === null && isIpv4MappedGid(mine) !== isIpv4MappedGid(d.gid)) {
        throw new PerftestError(
          PerftestErrorCode.INCOMPATIBLE,
          `GID types differ: this side uses ${ipv6ToString(mine)}, the peer ${ipv6ToString(d.gid)} (use GIDs of the same IP version, perftest -x)`,
          'gid',
        );
      }
      if (d.outReads < 1)
        throw new OobError(OobErrorCode.MALFORMED, `perftest key message: field out_reads must be at least 1, got ${d.outReads}`, 'out_reads');
      if (d.qpn === 0 || d.qpn === 1) throw new OobError(OobErrorCode.MALFORMED, `perftest key message: field qpn must name a user QP, got ${d.qpn}`, 'qpn');
      this.remotes.push(d);
      return;
    }
    // Later key messages repeat the same values (they are barriers); a change means the peer is confused.
    for (const [field, a, b] of [
      ['qpn', r.qpn, d.qpn],
      ['psn', r.psn, d.psn],
      ['rkey', r.rkey, d.rkey],
      ['vaddr', r.vaddr, d.vaddr],
    ] as const) {
      if (a !== b)
        throw new OobError(
          OobErrorCode.MALFORMED,
          `perftest key message (${purpose}${this.rc.qps > 1 ? `, QP ${i}` : ''}): field ${field} changed from 0x${a.toString(16)} to 0x${b.toString(16)}`,
          field,
        );
    }
  }

  /** ctx_connect: every QP to RTR with its peer's QPN and PSN (and to RTS when this side sends). */
  async connect(): Promise<void> {
    const { qps, remotes } = this;
    const first = remotes[0];
    if (qps.length === 0 || remotes.length !== qps.length || first === undefined || first.gid === null) throw internalError('connect before the key exchange');
    if (this.cfg.beforeConnect !== undefined) await this.cfg.beforeConnect(first.gid);
    for (let q = 0; q < qps.length; q++) this.connectQp(qps[q] as QueuePair, remotes[q] as PerftestDest, this.psns[q] ?? 0);
  }

  /**
   * ctx_modify_qp_to_rtr / _rts for one QP: RC with its timers and READ/atomic depths; UC with the
   * path, the peer's QPN and PSNs only; UD with the state only (and an address handle to the peer,
   * ibv_create_ah). Only a side that sends goes on to RTS (latency tests, and the client of a
   * bandwidth test).
   */
  private connectQp(qp: QueuePair, remote: PerftestDest, psn: number): void {
    const { rc } = this;
    if (remote.gid === null) throw new OobError(OobErrorCode.MALFORMED, 'perftest key message: the peer sent no GID, which RoCE needs', 'gid');
    const ahAttr = { dgid: remote.gid, sgidIndex: rc.gidIndex, hopLimit: 0xff, trafficClass: rc.trafficClass };
    const sends = rc.lat || rc.role === 'client' || rc.duplex;
    switch (rc.connection) {
      case Connection.RC:
        qp.modify({
          qpState: QpState.RTR,
          ahAttr,
          pathMtu: this.agreedMtu,
          destQpNum: rc.mismatch === Mismatch.QPN ? (remote.qpn + 1) & 0xffffff : remote.qpn,
          rqPsn: remote.psn,
          maxDestRdAtomic: rc.outReads,
          minRnrTimer: MIN_RNR_TIMER,
        });
        if (sends)
          qp.modify({
            qpState: QpState.RTS,
            sqPsn: rc.mismatch === Mismatch.PSN ? psnAdd(psn, 1) : psn,
            timeout: rc.qpTimeout,
            retryCnt: RETRY_CNT,
            rnrRetry: RNR_RETRY,
            maxRdAtomic: Math.min(remote.outReads, DEVICE_MAX_RD_ATOMIC),
          });
        break;
      case Connection.UC:
        qp.modify({ qpState: QpState.RTR, ahAttr, pathMtu: this.agreedMtu, destQpNum: remote.qpn, rqPsn: remote.psn });
        if (sends) qp.modify({ qpState: QpState.RTS, sqPsn: psn });
        break;
      case Connection.UD:
        qp.modify({ qpState: QpState.RTR });
        if (sends) {
          qp.modify({ qpState: QpState.RTS, sqPsn: psn });
          if (this.pd === null) throw internalError('connect before set-up');
          this.udDests.push({ ah: this.dev.createAh(this.pd, ahAttr), remoteQpn: remote.qpn, remoteQkey: UD_QKEY });
        }
        break;
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
    this.psns[0] = cmTest.localPsn();
    this.agreedMtu = qp.attr.pathMtu;
  }

  /** ctx_set_recv_wqes: rx depth receives on every QP (receive `j` of QP `q` is wr_id j × qps + q). */
  postReceives(): void {
    const { rc, qps, mr, layout } = this;
    if (mr === null || layout === null) return;
    qps.forEach((qp, q) => {
      for (let j = 0; j < rc.rxDepth; j++) qp.postRecv({ wrId: j * rc.qps + q, sgList: [mr.sge(layout.recvOffset(j, q), layout.recvLength)] });
    });
  }

  /** Runs the measured loop of the test. */
  async run(): Promise<void> {
    const { fullRc } = this;
    this.cfg.onConnected?.(connectionInfo(this, fullRc, this.peerVersion?.text ?? ''));
    if (fullRc.sizes.length === 1) {
      await this.runSize();
      return;
    }
    // perftest -a (RUN_ALL): the same loop at every size, on the same QP and buffer, with no
    // exchange in between (write_bw.c, read_bw.c, write_lat.c, read_lat.c); each size's figures kept.
    const full = this.layout;
    if (full === null || this.verifier === null) throw internalError('run before set-up');
    for (const size of fullRc.sizes) {
      this.rc = { ...fullRc, size };
      this.layout = full.forSize(this.rc);
      this.verifier.retarget(this.rc, this.layout);
      if (this.rc.verify) this.verifier.fill();
      this.measured = new Measurement();
      await this.runSize();
      this.sizeResults.push(sizeResult(this.measured, this.rc));
    }
  }

  private async runSize(): Promise<void> {
    if (this.rc.lat) await runLatency(this);
    else await runBandwidth(this);
  }

  /** An out-of-band wait once the QP is connected: watched (completion-waits.ts `watch`); `peerRuns` when the peer's run is what it waits for. */
  whileConnected<T>(wait: Promise<T>, what: string, peerRuns: boolean): Promise<T> {
    if (this.qps.length === 0 || this.remotes.length === 0) return wait;
    return this.waits.watch(wait, what, peerRuns);
  }

  report(): BwReport {
    return this.myReport;
  }

  onPeerReport(r: BwReport): void {
    this.peerReport = r;
  }

  /** Message `k` of QP `q`, signaled or not; its wr_id is k × qps + q. */
  sendWr(k: number, signaled: boolean, q = 0): SendWr {
    const { rc, mr, layout } = this;
    const remote = this.remotes[q];
    if (mr === null || remote === undefined || layout === null) throw internalError('post before connect');
    const off = layout.slotOffset(k);
    const local = layout.sendBase(q) + off;
    const wrId = k * rc.qps + q;
    // perftest posts a message inline when its size is at most the inline size (use_inl, WRITE and SEND).
    const inline = rc.size <= rc.inlineSize && (rc.verb === Verb.WRITE || rc.verb === Verb.SEND) ? SendFlags.INLINE : 0;
    const flags = (signaled ? SendFlags.SIGNALED : 0) | inline;
    switch (rc.verb) {
      case Verb.WRITE:
        return {
          wrId,
          opcode: WrOpcode.RDMA_WRITE,
          sgList: [mr.sge(local, rc.size)],
          sendFlags: flags,
          rdma: { remoteAddr: remote.vaddr + BigInt(off), rkey: remote.rkey },
        };
      case Verb.READ:
        return {
          wrId,
          opcode: WrOpcode.RDMA_READ,
          sgList: [mr.sge(local, rc.size)],
          sendFlags: flags,
          rdma: { remoteAddr: remote.vaddr + BigInt(off), rkey: remote.rkey },
        };
      case Verb.SEND: {
        const ud = this.udDests[q];
        return { wrId, opcode: WrOpcode.SEND, sgList: [mr.sge(local, rc.size)], sendFlags: flags, ...(ud !== undefined ? { ud } : {}) };
      }
      case Verb.ATOMIC: {
        const fa = rc.atomicType === 'FETCH_AND_ADD';
        return {
          wrId,
          opcode: fa ? WrOpcode.ATOMIC_FETCH_AND_ADD : WrOpcode.ATOMIC_CMP_AND_SWP,
          sgList: [mr.sge(local, 8)],
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
    for (const qp of this.qps) this.dev.destroyQp(qp);
    if (this.mr !== null) this.dev.deregMr(this.mr);
  }
}
