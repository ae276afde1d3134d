/**
 * One queue of the host (the model is Linux drivers/nvme/host/rdma.c): an RC QP connected through
 * the RDMA CM with the NVMe private data (queue ID, host receive and send queue sizes), a receive
 * posted for each CQE the controller may send, and command issue: the capsule (SQE and in-capsule
 * data) in a SEND, then the wait for its CQE, bounded by the QP's timers (a lost controller shows
 * as no progress, or as the QP's retries running out).
 */
import type { Device } from '../../stack/device';
import { QpType, QpState } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcFlags, WcOpcode, WcStatus } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { ProtectionDomain } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { RdmaCm, RdmaCmEvent, RdmaCmId } from '../../stack/cm/rdma-cm';
import { emitCommandCapsule, decodeResponseCapsule } from '../../ulp/nvme-rdma/capsule';
import type { Cqe } from '../../ulp/nvme-rdma/cqe';
import type { Sqe } from '../../ulp/nvme-rdma/sqe';
import type { FabricsCommand } from '../../ulp/nvme-rdma/fabrics-command';
import { emitNvmeCmReq, parseNvmeCmRej, cmRejStatusName } from '../../ulp/nvme-rdma/cm-private-data';
import { type NoProgressBound, noProgressBound } from '../host/no-progress-bound';
import { type CmTiming, cmConnectTiming } from '../host/cm-step-bound';
import { progressMark } from '../perftest/completion-waits';
import { NvmfError, NvmfErrorCode } from './nvmf-error';

/** The largest capsule the host sends: the SQE and 8 KiB in the capsule. */
const CAPSULE_MAX = 64 + 8192;

/** A CQE, and whether it came in a SEND with Invalidate of which key. */
export interface Response {
  cqe: Cqe;
  invalidated: number | null;
}

export interface HostQueueOptions {
  dst: string;
  port: number;
  qid: number;
  /** Entries of the send queue (hsqsize + 1). */
  size: number;
  cntlid: number;
  cm?: CmTiming | undefined;
  /** A fixed no-progress bound (--timeout), else one from the QP's timers. */
  stepTimeoutMs?: number | undefined;
  idle: () => Promise<void>;
  cmBound: NoProgressBound;
}

export class HostQueue {
  readonly pd: ProtectionDomain;
  readonly qp: QueuePair;
  readonly cq: CompletionQueue;
  private readonly capsuleMr: MemoryRegion;
  /** The Keep Alive capsule's own buffer: one may go out while a command's capsule waits in the send queue. */
  private readonly keepAliveMr: MemoryRegion;
  /** The command ID of the Keep Alive sent and not yet answered, or null. */
  private keepAliveCid: number | null = null;
  /** The answer to the last Keep Alive, until keepAlive() hands it over. */
  private keepAliveAnswer: Response | null = null;
  /** Keep Alives this queue sent by keepAlive(). */
  keepAlivesSent = 0;
  private readonly cqeMr: MemoryRegion;
  private readonly events: RdmaCmEvent[] = [];
  private readonly responses: Response[] = [];
  id: RdmaCmId | null = null;
  private nextCid = 0;
  /** The controller's receive queue size from its REP. */
  crqsize = 0;

  constructor(
    readonly dev: Device,
    readonly o: HostQueueOptions,
  ) {
    this.pd = dev.allocPd();
    this.cq = dev.createCq(o.size * 4 + 8);
    this.qp = dev.createQp(this.pd, {
      qpType: QpType.RC,
      sendCq: this.cq,
      recvCq: this.cq,
      cap: { maxSendWr: o.size * 2 + 4, maxRecvWr: o.size, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.capsuleMr = dev.regMr(this.pd, new Uint8Array(CAPSULE_MAX), 0);
    this.keepAliveMr = dev.regMr(this.pd, new Uint8Array(64), 0);
    this.cqeMr = dev.regMr(this.pd, new Uint8Array(o.size * 16), Access.LOCAL_WRITE);
  }

  get qid(): number {
    return this.o.qid;
  }

  /** Registers `bytes` for the controller to read and write (a keyed SGL names it). */
  register(bytes: Uint8Array): MemoryRegion {
    return this.dev.regMr(this.pd, bytes, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
  }

  /** The RDMA CM connection with the NVMe private data; a REJ says the NVMe-oF status. */
  async connect(rcm: RdmaCm): Promise<void> {
    const o = this.o;
    this.id = rcm.connect(
      {
        dst: o.dst,
        port: o.port,
        qp: this.qp,
        param: {
          // hrqsize: the CQEs this host can take; hsqsize: its send queue, 0-based (nvme_rdma_route_resolved()).
          privateData: emitNvmeCmReq({ recfmt: 0, qid: o.qid, hrqsize: o.size, hsqsize: o.size - 1, cntlid: o.cntlid }),
          responderResources: 1,
          initiatorDepth: 1,
          retryCount: 7,
          rnrRetryCount: 7,
        },
        ...cmConnectTiming(o.cm),
      },
      (e) => this.events.push(e),
    );
    for (let i = 0; i < o.size; i++) this.qp.postRecv({ wrId: BigInt(i), sgList: [this.cqeMr.sge(i * 16, 16)] });
    const deadline = Date.now() + o.cmBound.ms;
    for (;;) {
      const est = this.events.find((e) => e.type === 'ESTABLISHED');
      if (est !== undefined && est.type === 'ESTABLISHED') {
        const p = est.privateData;
        if (p.length >= 4) this.crqsize = new DataView(p.buffer, p.byteOffset).getUint16(2, true);
        return;
      }
      this.checkCm(`queue ${o.qid}'s connection`);
      if (Date.now() > deadline) throw new NvmfError(NvmfErrorCode.UNREACHABLE, `queue ${o.qid}: no connection within ${o.cmBound.ms} ms (${o.cmBound.why})`);
      await o.idle();
    }
  }

  private checkCm(what: string): void {
    for (const e of this.events) {
      if (e.type === 'REJECTED') {
        const p = e.privateData;
        let nvme = '';
        try {
          const rej = parseNvmeCmRej(new DataView(p.buffer, p.byteOffset, p.byteLength), 0, p.byteLength);
          nvme = `; NVMe-oF status ${rej.status} (${cmRejStatusName(rej.status)})`;
        } catch {
          // a REJ without the NVMe record: the CM's reason alone
        }
        throw new NvmfError(NvmfErrorCode.REJECTED, `${what} was refused: REJ reason ${e.reason} (${e.reasonText})${nvme}`);
      }
      if (e.type === 'UNREACHABLE' || e.type === 'CONNECT_ERROR') throw new NvmfError(NvmfErrorCode.UNREACHABLE, `${what}: ${e.why}`);
      if (e.type === 'DISCONNECTED') throw new NvmfError(NvmfErrorCode.PROTOCOL, `the controller disconnected queue ${this.o.qid} while waiting for ${what}`);
    }
  }

  private bound(): NoProgressBound {
    if (this.o.stepTimeoutMs !== undefined) return { ms: this.o.stepTimeoutMs, why: 'the step timeout given' };
    const a = this.qp.attr;
    return noProgressBound({ timeout: a.timeout, retryCnt: a.retryCnt, rnrRetry: a.rnrRetry, minRnrTimer: a.minRnrTimer });
  }

  /** Posts a work request of the host's own (REG_MR) and waits for its completion. */
  async local(wr: Parameters<QueuePair['postSend']>[0], what: string): Promise<void> {
    this.qp.postSend({ ...wr, wrId: 0xfffen, sendFlags: SendFlags.SIGNALED });
    await this.waitUntil(
      what,
      () => this.localDone,
      () => (this.localDone = false),
    );
  }
  private localDone = false;

  /** Sends the command capsule and waits for its CQE. The command ID is chosen here. */
  async submit(sqe: Omit<Sqe, 'commandId'>, fabrics: FabricsCommand | null, data: Uint8Array | undefined, what: string): Promise<Response> {
    const commandId = this.nextCid;
    this.nextCid = (this.nextCid + 1) & 0xffff;
    const capsule = emitCommandCapsule({ ...sqe, commandId }, fabrics, data);
    if (capsule.length > CAPSULE_MAX) throw new NvmfError(NvmfErrorCode.CONFIG, `a ${capsule.length}-byte capsule exceeds ${CAPSULE_MAX}`);
    this.capsuleMr.buffer.set(capsule, 0);
    this.qp.postSend({ wrId: 0xffffn, opcode: WrOpcode.SEND, sgList: [this.capsuleMr.sge(0, capsule.length)], sendFlags: SendFlags.SIGNALED });
    let got: Response | null = null;
    await this.waitUntil(
      `the CQE of ${what}`,
      () => {
        const i = this.responses.findIndex((r) => r.cqe.commandId === commandId);
        if (i >= 0) got = this.responses.splice(i, 1)[0] ?? null;
        return got !== null;
      },
      () => undefined,
    );
    return got as unknown as Response;
  }

  /**
   * Sends a Keep Alive (the SQE given, command ID chosen here) unless one is still unanswered, and
   * takes the answer of the last one: a host keeps the controller's keep-alive timer from expiring
   * (NVMe base specification 2.0 §3.9.5); Linux sends one every KATO / 2 (nvme_keep_alive_work_period()).
   * It waits for nothing: the flow it runs beside (a wait on another queue) goes on. Returns the
   * answer to the one before, when it came since the last call, for the caller to judge.
   */
  keepAlive(sqe: Omit<Sqe, 'commandId'>): Response | null {
    this.drain('the answer to a Keep Alive');
    const answer = this.keepAliveAnswer;
    this.keepAliveAnswer = null;
    if (answer !== null && answer.cqe.status >>> 1 !== 0) return answer;
    if (this.keepAliveCid !== null) return answer;
    const commandId = this.nextCid;
    this.nextCid = (this.nextCid + 1) & 0xffff;
    const capsule = emitCommandCapsule({ ...sqe, commandId }, null, undefined);
    this.keepAliveMr.buffer.set(capsule, 0);
    this.qp.postSend({ wrId: 0xfffdn, opcode: WrOpcode.SEND, sgList: [this.keepAliveMr.sge(0, capsule.length)], sendFlags: SendFlags.SIGNALED });
    this.keepAliveCid = commandId;
    this.keepAlivesSent++;
    return answer;
  }

  /** Takes what the completion queue holds: CQEs into `responses` (their receives posted again), local completions; an error completion throws. */
  private drain(what: string): void {
    for (const wc of this.cq.poll(16)) {
      if (wc.status !== WcStatus.SUCCESS) {
        const why = this.qp.state === QpState.ERR && this.qp.errorReason !== '' ? `; the QP is in the error state: ${this.qp.errorReason}` : '';
        throw new NvmfError(
          NvmfErrorCode.COMPLETION,
          `queue ${this.o.qid}: completion ${WC_STATUS_NAMES[wc.status] ?? wc.status}${wc.vendorErr !== '' ? ` (${wc.vendorErr})` : ''} while waiting for ${what}${why}`,
        );
      }
      if (wc.opcode === WcOpcode.RECV) {
        const slot = Number(wc.wrId);
        const bytes = this.cqeMr.buffer.subarray(slot * 16, slot * 16 + wc.byteLen);
        let cqe: Cqe;
        try {
          cqe = decodeResponseCapsule(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.length);
        } catch (e) {
          throw new NvmfError(NvmfErrorCode.PROTOCOL, `queue ${this.o.qid}: a malformed response capsule: ${(e as Error).message}`);
        }
        this.qp.postRecv({ wrId: BigInt(slot), sgList: [this.cqeMr.sge(slot * 16, 16)] });
        const res: Response = { cqe, invalidated: (wc.wcFlags & WcFlags.WITH_INV) !== 0 ? wc.immData >>> 0 : null };
        if (cqe.commandId === this.keepAliveCid) {
          this.keepAliveCid = null;
          this.keepAliveAnswer = res;
        } else this.responses.push(res);
      } else if (wc.wrId === 0xfffen) this.localDone = true;
    }
  }

  private async waitUntil(what: string, done: () => boolean, after: () => void): Promise<void> {
    const bound = this.bound();
    let deadline = Date.now() + bound.ms;
    let mark = progressMark(this.qp);
    for (;;) {
      this.drain(what);
      if (done()) {
        after();
        return;
      }
      this.checkCm(what);
      const m = progressMark(this.qp);
      if (m !== mark) {
        mark = m;
        deadline = Date.now() + bound.ms;
      }
      if (Date.now() > deadline)
        throw new NvmfError(NvmfErrorCode.TIMEOUT, `queue ${this.o.qid}: no ${what}: no progress within ${bound.ms} ms (${bound.why})`);
      await this.o.idle();
    }
  }

  /** DREQ, then the DREP (or the CM's bound). */
  async disconnect(): Promise<void> {
    const id = this.id;
    if (id === null) return;
    id.disconnect();
    const deadline = Date.now() + this.o.cmBound.ms;
    while (!this.events.some((e) => e.type === 'DISCONNECTED')) {
      this.cq.poll(16);
      if (Date.now() > deadline)
        throw new NvmfError(NvmfErrorCode.TIMEOUT, `queue ${this.o.qid}: no DREP within ${this.o.cmBound.ms} ms (${this.o.cmBound.why})`);
      await this.o.idle();
    }
  }

  /** Gives the queue back; a queue still connected (a run that failed) sends its DREQ first, so the controller ends the association. */
  close(): void {
    if (this.id !== null && !this.events.some((e) => e.type === 'DISCONNECTED')) {
      try {
        this.id.disconnect();
      } catch {
        // not connected: nothing to tell the controller
      }
    }
    this.id?.destroy();
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing
    }
  }
}
