/**
 * What rdma_server.c and rdma_client.c (rdma-core librdmacm/examples, v44 as Debian ships it)
 * share: the endpoint rdma_create_ep() makes for them and the synchronous waits of librdmacm's
 * rdma_verbs.h (rdma_get_send_comp(), rdma_get_recv_comp()) and of an ID without an event channel
 * (ucma_complete(): rdma_connect, rdma_accept and rdma_disconnect each wait for the next event).
 *
 * The endpoint: an RC QP with max_send_wr = max_recv_wr = 1, one SGE each way, max_inline_data 16
 * and sq_sig_all = 1, its own send and receive CQs (rdma_create_qp() with no CQs makes them,
 * ucma_create_cqs()); `recv_msg` and `send_msg`, 16 bytes each, both static in the tools and so
 * all zero; the receive is registered (rdma_reg_msgs()), the send goes inline (IBV_SEND_INLINE, as
 * both tools choose when the QP reports max_inline_data >= 16). The stack reads inline data through
 * a registered region of the PD, so `send_msg` is registered too, with no access rights.
 *
 * Neither tool checks what it received, nor a completion's status: rdma_get_*_comp() return once a
 * completion is there. We check that the status is success (ROCE_ERR_RDMA_EXAMPLE_COMPLETION
 * otherwise) and that the message is 16 bytes, and bound every wait.
 */
import { type NoProgressBound, noProgressBound } from '../host/no-progress-bound';
import type { Device } from '../../stack/device';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import type { RdmaCmEvent, RdmaCmId } from '../../stack/cm/rdma-cm';
import { RdmaExampleError, RdmaExampleErrorCode } from './rdma-example-error';

/** Both tools' `static const char *port = "7471"`. */
export const RDMA_EXAMPLE_DEFAULT_PORT = 7471;
/** `send_msg[16]`, `recv_msg[16]`. */
export const RDMA_EXAMPLE_MSG_LEN = 16;
/**
 * What rdma_connect(id, NULL) offers (ucma_copy_conn_param_to_kern() with the ID's defaults from
 * the device, cma.c rdma_connect()): responder resources = max_qp_rd_atom and initiator depth =
 * max_qp_init_rd_atom, 128 each on rxe (RXE_MAX_QP_RD_ATOM, RXE_MAX_QP_INIT_RD_ATOM) and the
 * stack's own limit (stack/qp-attributes.ts); retry and RNR retry counts 7.
 */
export const DEVICE_MAX_RD_ATOMIC = 128;

export interface RdmaExampleResult {
  ok: boolean;
  test: 'rdma_server' | 'rdma_client';
  role: 'server' | 'client';
  port: number;
  /** The SEND went inline (IBV_SEND_INLINE). */
  inline: boolean;
  /** The 16 bytes sent and received, as hex. */
  sent: string;
  received: string;
  /** What the connection was made with (REQ/REP): our responder resources and initiator depth. */
  responderResources: number;
  initiatorDepth: number;
  /** The DISCONNECTED event came (the peer's DREP, or its DREQ) before the run ended. */
  disconnected: boolean;
  local: { addr: string; port: number; qpn: number };
  remote: { addr: string; port: number; qpn: number };
  seconds: number;
  /** The lines the tool would have printed. */
  lines: string[];
  problems: string[];
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The IPv4-mapped GID of a dotted quad. */
export function v4Gid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  ip.split('.').forEach((p, i) => (g[12 + i] = Number(p)));
  return g;
}

/** rdma_create_ep()'s QP and CQs, and the two messages. */
export class Endpoint {
  readonly pd;
  readonly sendCq: CompletionQueue;
  readonly recvCq: CompletionQueue;
  readonly qp: QueuePair;
  readonly recvMr: MemoryRegion;
  readonly sendMr: MemoryRegion;
  id: RdmaCmId | null = null;
  /** The CM events of the ID, in order (what rdma_get_cm_event() would return). */
  readonly events: RdmaCmEvent[] = [];
  disconnected = false;
  recvWc: WorkCompletion | null = null;
  sendWc: WorkCompletion | null = null;

  constructor(readonly dev: Device) {
    this.pd = dev.allocPd();
    this.sendCq = dev.createCq(1);
    this.recvCq = dev.createCq(1);
    this.qp = dev.createQp(this.pd, {
      qpType: QpType.RC,
      sendCq: this.sendCq,
      recvCq: this.recvCq,
      cap: { maxSendWr: 1, maxRecvWr: 1, maxSendSge: 1, maxRecvSge: 1, maxInlineData: RDMA_EXAMPLE_MSG_LEN },
    });
    this.recvMr = dev.regMr(this.pd, new Uint8Array(RDMA_EXAMPLE_MSG_LEN), Access.LOCAL_WRITE);
    this.sendMr = dev.regMr(this.pd, new Uint8Array(RDMA_EXAMPLE_MSG_LEN), 0);
  }

  onEvent = (e: RdmaCmEvent): void => {
    this.events.push(e);
    if (e.type === 'DISCONNECTED') this.disconnected = true;
  };

  /** The QP's inline capacity as ibv_query_qp() reports it: the tools send inline when it is at least 16. */
  get inline(): boolean {
    return this.qp.cap.maxInlineData >= RDMA_EXAMPLE_MSG_LEN;
  }

  /** rdma_post_recv(id, NULL, recv_msg, 16, mr). */
  postRecv(): void {
    this.qp.postRecv({ wrId: 1, sgList: [this.recvMr.sge(0, RDMA_EXAMPLE_MSG_LEN)] });
  }

  /** rdma_post_send(id, NULL, send_msg, 16, send_mr, send_flags): signalled (sq_sig_all), inline when the QP allows it. */
  postSend(): void {
    this.qp.postSend({
      wrId: 2,
      opcode: WrOpcode.SEND,
      sgList: [this.sendMr.sge(0, RDMA_EXAMPLE_MSG_LEN)],
      sendFlags: SendFlags.SIGNALED | (this.inline ? SendFlags.INLINE : 0),
    });
  }

  private take(): void {
    for (const wc of this.sendCq.poll(1)) this.sendWc = this.check(wc, 'send');
    for (const wc of this.recvCq.poll(1)) {
      this.recvWc = this.check(wc, 'receive');
      if (wc.byteLen !== RDMA_EXAMPLE_MSG_LEN)
        throw new RdmaExampleError(RdmaExampleErrorCode.PROTOCOL, `received a message of ${wc.byteLen} bytes, not ${RDMA_EXAMPLE_MSG_LEN}`);
    }
  }

  private check(wc: WorkCompletion, what: string): WorkCompletion {
    if (wc.status === WcStatus.SUCCESS) return wc;
    const why = `${what} completion failed status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'}${wc.vendorErr !== '' ? `: ${wc.vendorErr}` : ''})`;
    if (this.disconnected && wc.status === WcStatus.WR_FLUSH_ERR)
      throw new RdmaExampleError(RdmaExampleErrorCode.PROTOCOL, `the peer disconnected before the exchange was through: ${why}`);
    throw new RdmaExampleError(RdmaExampleErrorCode.COMPLETION, why);
  }

  /** Waits until `done` holds, taking completions and failing on a refused or lost connection. */
  async waitUntil(done: () => boolean, what: string, bound: NoProgressBound, idle: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + bound.ms;
    for (;;) {
      // The CM's verdict first: a REJ moves the QP to ERR, which flushes the posted receive.
      const bad = this.events.find((e) => e.type === 'REJECTED' || e.type === 'UNREACHABLE' || e.type === 'CONNECT_ERROR');
      if (bad !== undefined) throw cmFailure(bad);
      this.take();
      if (done()) return;
      if (Date.now() > deadline) throw new RdmaExampleError(RdmaExampleErrorCode.TIMEOUT, `no ${what} within ${bound.ms} ms (${bound.why})`);
      await idle();
    }
  }

  /** rdma_get_recv_comp() / rdma_get_send_comp(): a disconnect before the completion ends the run. */
  async waitCompletion(which: 'send' | 'recv', bound: NoProgressBound, idle: () => Promise<void>): Promise<void> {
    const what = which === 'send' ? 'send completion' : 'receive completion';
    await this.waitUntil(
      () => {
        if ((which === 'send' ? this.sendWc : this.recvWc) !== null) return true;
        if (this.disconnected) throw new RdmaExampleError(RdmaExampleErrorCode.PROTOCOL, `the peer disconnected before the ${what}`);
        return false;
      },
      what,
      bound,
      idle,
    );
  }

  /**
   * rdma_disconnect(): DREQ (or nothing when the peer's DREQ came first and was answered), then the
   * next event, DISCONNECTED; the tools ignore how that ends, so a peer that never answers leaves
   * `disconnected` false after the CM's DREQ retries or `bound`, and is no error.
   */
  async disconnect(bound: NoProgressBound, idle: () => Promise<void>): Promise<void> {
    this.id?.disconnect();
    const deadline = Date.now() + bound.ms;
    while (!this.disconnected && Date.now() <= deadline) {
      this.sendCq.poll(1);
      this.recvCq.poll(1);
      await idle();
    }
  }

  /** The bound of a wait for this endpoint's data: from its QP's timers (apps/host/no-progress-bound.ts), or `given`. */
  dataBound(given: NoProgressBound | null): NoProgressBound {
    if (given !== null) return given;
    const a = this.qp.attr;
    return noProgressBound({ timeout: a.timeout, retryCnt: a.retryCnt, rnrRetry: a.rnrRetry, minRnrTimer: a.minRnrTimer });
  }

  result(test: 'rdma_server' | 'rdma_client', port: number, t0: number, lines: string[]): RdmaExampleResult {
    const id = this.id as RdmaCmId;
    const c = id.cmId.conn;
    return {
      ok: true,
      test,
      role: test === 'rdma_server' ? 'server' : 'client',
      port,
      inline: this.inline,
      sent: hex(this.sendMr.buffer),
      received: hex(this.recvMr.buffer),
      responderResources: c.responderResources,
      initiatorDepth: c.initiatorDepth,
      disconnected: this.disconnected,
      local: { addr: id.localAddr, port: id.localPort, qpn: this.qp.qpNum },
      remote: { addr: id.peerAddr, port: id.peerPort, qpn: this.qp.attr.destQpNum },
      seconds: (this.dev.clock.now() - t0) / 1e9,
      lines,
      problems: [],
    };
  }

  close(): void {
    this.id?.destroy();
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing: nothing more to give back
    }
  }
}

/** How ucma_complete() turns the event into rdma_connect()'s or rdma_accept()'s error. */
export function cmFailure(e: RdmaCmEvent): RdmaExampleError {
  if (e.type === 'REJECTED')
    return new RdmaExampleError(
      RdmaExampleErrorCode.REJECTED,
      `rdma_connect: Connection refused (RDMA_CM_EVENT_REJECTED, REJ reason ${e.reason}: ${e.reasonText})`,
    );
  if (e.type === 'UNREACHABLE') return new RdmaExampleError(RdmaExampleErrorCode.UNREACHABLE, `RDMA_CM_EVENT_UNREACHABLE: ${e.why}`);
  if (e.type === 'CONNECT_ERROR') return new RdmaExampleError(RdmaExampleErrorCode.UNREACHABLE, `RDMA_CM_EVENT_CONNECT_ERROR: ${e.why}`);
  return new RdmaExampleError(RdmaExampleErrorCode.PROTOCOL, `unexpected event ${e.type}`);
}

/** Checks a port and an IPv4 address. */
export function checkAddress(addr: string, port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw new RdmaExampleError(RdmaExampleErrorCode.CONFIG, `invalid port ${port}`);
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(addr))
    throw new RdmaExampleError(RdmaExampleErrorCode.CONFIG, `only IPv4 addresses are supported, not ${JSON.stringify(addr)}`);
}
