/**
 * perftest's out-of-band channel with -R (work_rdma_cm, which turns use_rdma_cm on in parser()):
 * no TCP socket, but an RC QP of its own connected through the RDMA CM on the test's port (TCP
 * port space, default 18515), over which every message of the exchange goes as one SEND
 * (perftest_communication.c):
 *
 *   - create_comm_struct(): one RC QP, tx and rx depth 1, verb SEND;
 *   - establish_connection(): the client rdma_client_connect() (resolve address and route, the
 *     QP, one receive posted, rdma_connect with responder resources and initiator depth 0, retry
 *     count -- default 7 -- and RNR retry 7, no private data of its own; any event but ESTABLISHED
 *     is a failure, there is no retry); the server rdma_server_connect() (bind, listen, the first
 *     CONNECT_REQUEST, the QP, one receive posted, rdma_accept, then rdma_destroy_id of the
 *     listening ID: the port is free again for the test connection);
 *   - ctx_xchg_data_rdma() / ctx_hand_shake(): the client SENDs then waits for a receive, the
 *     server the other way round; each receive is sizeof(struct pingpong_dest) = 56 bytes and is
 *     posted again once read (rdma_read_data, rdma_read_keys);
 *   - ctx_close_connection(): only the closing key exchange, no "done";
 *   - the comm ID is never disconnected explicitly: it goes when the process ends (the kernel
 *     destroys the ID, which sends a DREQ). `destroy()` does the same, after the test connection.
 */
import { type CmTiming, cmConnectTiming } from '../host/cm-step-bound';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcOpcode, WcStatus } from '../../stack/work-completion';
import type { RdmaCm, RdmaCmEvent, RdmaCmId } from '../../stack/cm/rdma-cm';
import { OobError, OobErrorCode } from '../oob/tcp-channel';
import type { OobTransport } from '../oob/perftest-session';
import { PINGPONG_DEST_STRUCT_SIZE } from '../oob/perftest-dest-struct';
import { cmEventFailure, v4Gid } from './cm-events';
import { PerftestError, PerftestErrorCode } from './perftest-error';

/** Receives kept posted (perftest posts one; more only spare the sender RNR NAKs). */
const RECV_SLOTS = 4;
const MSG = PINGPONG_DEST_STRUCT_SIZE;

export interface CmCommOptions {
  /** How long a SEND may take to complete. */
  stepMs: number;
  idle: () => Promise<void>;
  beforeConnect?: ((peerGid: Uint8Array) => void | Promise<void>) | undefined;
  /** The CM's response timeout and retries (default librdmacm's). */
  cm?: CmTiming | undefined;
}

export class CmCommChannel implements OobTransport {
  private readonly qp: QueuePair;
  private readonly sendCq: CompletionQueue;
  private readonly recvCq: CompletionQueue;
  private readonly sendMr: MemoryRegion;
  private readonly recvMr: MemoryRegion;
  private readonly arrived: Uint8Array[] = [];
  private readonly events: RdmaCmEvent[] = [];
  private id: RdmaCmId | null = null;
  private closed = false;
  private disconnected = false;

  private constructor(
    private readonly dev: Device,
    private readonly o: CmCommOptions,
  ) {
    const pd = dev.allocPd();
    this.sendCq = dev.createCq(4);
    this.recvCq = dev.createCq(RECV_SLOTS * 2);
    this.qp = dev.createQp(pd, {
      qpType: QpType.RC,
      sendCq: this.sendCq,
      recvCq: this.recvCq,
      cap: { maxSendWr: 2, maxRecvWr: RECV_SLOTS, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.sendMr = dev.regMr(pd, new Uint8Array(MSG), Access.LOCAL_WRITE);
    this.recvMr = dev.regMr(pd, new Uint8Array(MSG * RECV_SLOTS), Access.LOCAL_WRITE);
  }

  private readonly onEvent = (e: RdmaCmEvent): void => {
    this.events.push(e);
    if (e.type === 'DISCONNECTED') this.disconnected = true;
  };

  private postRecvs(): void {
    for (let k = 0; k < RECV_SLOTS; k++) this.qp.postRecv({ wrId: k, sgList: [this.recvMr.sge(k * MSG, MSG)] });
  }

  /**
   * rdma_client_connect(): connects to `dst`:`port`, waiting at most `connectMs`; a refused or
   * unanswered REQ is a PerftestError (REJECTED, UNREACHABLE).
   */
  static async connect(rcm: RdmaCm, dst: string, port: number, connectMs: number, o: CmCommOptions): Promise<CmCommChannel> {
    const ch = new CmCommChannel(rcm.dev, o);
    try {
      if (o.beforeConnect !== undefined) await o.beforeConnect(v4Gid(dst));
      ch.id = rcm.connect(
        { dst, port, qp: ch.qp, ...cmConnectTiming(o.cm), param: { responderResources: 0, initiatorDepth: 0, retryCount: 7, rnrRetryCount: 7 } },
        ch.onEvent,
      );
      // The receive goes up before the REQ is answered (post_one_recv_wqe before rdma_connect).
      if (ch.qp.state === QpState.INIT) ch.postRecvs();
      const deadline = Date.now() + connectMs;
      for (;;) {
        if (ch.events.some((e) => e.type === 'ESTABLISHED')) return ch;
        const bad = ch.events.find((e) => e.type !== 'ESTABLISHED');
        if (bad !== undefined) throw cmEventFailure(bad, `the RDMA CM connection to ${dst}:${port} (perftest's communication QP)`);
        if (Date.now() > deadline)
          throw new PerftestError(PerftestErrorCode.UNREACHABLE, `no answer from ${dst}:${port} through the RDMA CM within ${connectMs} ms`);
        await o.idle();
      }
    } catch (e) {
      ch.destroy();
      throw e;
    }
  }

  /** rdma_server_connect(): listens on `port` until the first CONNECT_REQUEST (at most `acceptMs`), accepts it, stops listening. */
  static async accept(
    rcm: RdmaCm,
    port: number,
    acceptMs: number,
    o: CmCommOptions & { onListening?: ((port: number) => void) | undefined },
  ): Promise<CmCommChannel> {
    const ch = new CmCommChannel(rcm.dev, o);
    let pending: RdmaCmId | null = null;
    const listener = rcm.listen(port, (e) => {
      if (e.type === 'CONNECT_REQUEST') {
        // rdma_listen's backlog is num_of_qps (1): one client at a time.
        if (pending !== null) e.id.reject();
        else pending = e.id;
        return;
      }
      ch.onEvent(e);
    });
    try {
      o.onListening?.(port);
      const deadline = Date.now() + acceptMs;
      while (pending === null) {
        if (Date.now() > deadline)
          throw new PerftestError(PerftestErrorCode.TIMEOUT, `no client connected through the RDMA CM on port ${port} within ${acceptMs} ms`);
        await o.idle();
      }
      const id: RdmaCmId = pending;
      if (o.beforeConnect !== undefined) await o.beforeConnect(v4Gid(id.peerAddr));
      ch.id = id;
      id.accept(ch.qp, { responderResources: 0, initiatorDepth: 0, rnrRetryCount: 7 });
      // Posted before the client can have sent (nothing runs between the accept and this).
      ch.postRecvs();
      return ch;
    } catch (e) {
      ch.destroy();
      throw e;
    } finally {
      // rdma_destroy_id(cm_id_control): the test connection listens again on the same port.
      listener.close();
    }
  }

  /** Takes what has arrived off the receive queue (each message copied out, its receive posted again). */
  private drain(): void {
    for (const wc of this.recvCq.poll(RECV_SLOTS)) {
      if (wc.status !== WcStatus.SUCCESS) {
        if (wc.status === WcStatus.WR_FLUSH_ERR) continue;
        throw new OobError(
          OobErrorCode.CLOSED,
          `receive on perftest's RDMA CM communication QP failed: status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'})`,
        );
      }
      if (wc.opcode !== WcOpcode.RECV) continue;
      const slot = Number(wc.wrId);
      this.arrived.push(this.recvMr.buffer.slice(slot * MSG, slot * MSG + wc.byteLen));
      this.qp.postRecv({ wrId: slot, sgList: [this.recvMr.sge(slot * MSG, MSG)] });
    }
  }

  get available(): number {
    if (!this.closed) this.drain();
    return this.arrived.reduce((n, m) => n + m.length, 0);
  }

  /** rdma_write_data(): one SEND of `b`, waited for until its completion. */
  async writeExact(b: Uint8Array): Promise<void> {
    if (this.closed || this.disconnected)
      throw new OobError(OobErrorCode.CLOSED, `cannot send ${b.length} bytes: perftest's RDMA CM communication connection is closed`);
    if (b.length > MSG) throw new OobError(OobErrorCode.BAD_VALUE, `a message on perftest's communication QP is at most ${MSG} bytes, got ${b.length}`);
    this.sendMr.buffer.set(b);
    this.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [this.sendMr.sge(0, b.length)], sendFlags: SendFlags.SIGNALED });
    this.dev.flush();
    const deadline = Date.now() + this.o.stepMs;
    for (;;) {
      for (const wc of this.sendCq.poll(2)) {
        if (wc.status !== WcStatus.SUCCESS) {
          throw new OobError(
            OobErrorCode.CLOSED,
            `SEND on perftest's RDMA CM communication QP failed: status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'})`,
          );
        }
        return;
      }
      if (this.disconnected) throw new OobError(OobErrorCode.CLOSED, "the peer disconnected perftest's RDMA CM communication connection");
      if (Date.now() > deadline)
        throw new OobError(OobErrorCode.TIMEOUT, `a SEND of ${b.length} bytes on perftest's communication QP did not complete within ${this.o.stepMs} ms`);
      await this.o.idle();
    }
  }

  /** rdma_read_data(): the next message, which must be `n` bytes. */
  async readExact(n: number, what: string, timeoutMs: number): Promise<Uint8Array> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.closed) throw new OobError(OobErrorCode.CLOSED, `connection closed locally while waiting for ${what}`, what);
      this.drain();
      const m = this.arrived.shift();
      if (m !== undefined) {
        if (m.length !== n) throw new OobError(OobErrorCode.MALFORMED, `${what}: a message of ${n} bytes was expected, the peer sent ${m.length}`, what);
        return m;
      }
      if (this.disconnected)
        throw new OobError(OobErrorCode.CLOSED, `the peer disconnected perftest's RDMA CM communication connection while this side waited for ${what}`, what);
      if (Date.now() > deadline) throw new OobError(OobErrorCode.TIMEOUT, `no ${what} within ${timeoutMs} ms`, what);
      await this.o.idle();
    }
  }

  /** The exchange is over (executeSession's end): nothing more is read or sent; the connection stays until `destroy`. */
  close(): void {
    this.closed = true;
  }

  /** As perftest's exit: the ID destroyed (a DREQ while connected), the QP given back. */
  destroy(): void {
    this.closed = true;
    this.id?.destroy();
    this.id = null;
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing: nothing more to give back
    }
  }
}
