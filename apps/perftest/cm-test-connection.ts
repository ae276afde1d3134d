/**
 * The test QP's connection with -R, as create_rdma_cm_connection() makes it and destroy_ctx()
 * ends it (perftest_communication.c, perftest_resources.c):
 *
 *   - same port and port space as the communication connection (TCP, rdma_cm_allocate_nodes()
 *     for RC); one CM ID per QP (one QP here);
 *   - client (rdma_cm_client_connection(), rdma_cm_route_handler()): rdma_connect with responder
 *     resources and initiator depth = out_reads for READ and atomic tests (0 otherwise), retry and
 *     RNR retry count = retry_count (7); any failure event ends the attempt, and the whole attempt
 *     is made again after 100 ms, 10 times at most (the server may not listen yet);
 *   - server (rdma_cm_server_connection(), rdma_cm_connection_request_handler()): listen, accept
 *     the request with the same parameters, min_rnr_timer 12 (MIN_RNR_TIMER, which the CM's RTR
 *     here already sets), stop listening; it does not wait for ESTABLISHED;
 *   - the end: the client disconnects (rdma_cm_disconnect_nodes(): DREQ, then waits for
 *     DISCONNECTED), the server calls rdma_disconnect() on its ID (a DREQ, or the DREP to the
 *     client's) without waiting; both then destroy the ID.
 */
import { type CmTiming, cmConnectTiming } from '../host/cm-step-bound';
import type { QueuePair } from '../../stack/queue-pair';
import type { RdmaCm, RdmaCmEvent, RdmaCmId, RdmaCmListener } from '../../stack/cm/rdma-cm';
import { cmEventFailure, v4Gid } from './cm-events';
import { PerftestError, PerftestErrorCode } from './perftest-error';

/** rdma_cm_client_connection(): attempts, and the pause between them (usleep(100000)). */
const CLIENT_ATTEMPTS = 10;
const CLIENT_RETRY_DELAY_MS = 100;

export interface CmTestOptions {
  role: 'client' | 'server';
  /** Client: the server's IPv4 address. */
  dst?: string | undefined;
  port: number;
  /** Responder resources and initiator depth offered (and accepted). */
  rdAtomic: number;
  stepMs: number;
  /**
   * Server: how long to wait for the client's REQ; client: how long to keep making attempts
   * after the 10 of perftest while the server refuses (a slow peer may take longer to listen).
   */
  connectMs: number;
  idle: () => Promise<void>;
  beforeConnect?: ((peerGid: Uint8Array) => void | Promise<void>) | undefined;
  /** The CM's response timeout and retries (default librdmacm's). */
  cm?: CmTiming | undefined;
  /**
   * The REQ's retry count (perftest's --retry_count, default 7): the retry_cnt of both ends' QPs,
   * as the kernel's CM gives the passive side the REQ's value (cm_req_handler()) and the active
   * side its own (cm_send_req()).
   */
  retryCount?: number | undefined;
  /** perftest -u with -R: rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) on both ends' test IDs (perftest_communication.c). */
  ackTimeout?: number | undefined;
  /**
   * Client: the traffic class of the test connection (perftest --tclass with -R sets it with
   * rdma_set_option(RDMA_OPTION_ID_TOS) on its cm_id); it goes into the REQ's path, which the
   * server's QP takes too.
   */
  tos?: number | undefined;
}

export class CmTestConnection {
  id: RdmaCmId | null = null;
  private listener: RdmaCmListener | null = null;
  private pending: RdmaCmId | null = null;
  private events: RdmaCmEvent[] = [];
  /** Client: connection attempts made (more than one when the server was not listening yet). */
  attempts = 0;

  constructor(
    private readonly rcm: RdmaCm,
    private readonly o: CmTestOptions,
  ) {}

  private readonly onEvent = (e: RdmaCmEvent): void => {
    this.events.push(e);
  };

  /** Server: rdma_listen on the port (before this side answers the barrier that precedes the connection). */
  listen(): void {
    if (this.listener !== null) return;
    this.listener = this.rcm.listen(this.o.port, (e) => {
      if (e.type === 'CONNECT_REQUEST') {
        // rdma_cm_connection_request_handler(): a request beyond num_of_qps is rejected.
        if (this.pending !== null || this.id !== null) e.id.reject();
        else this.pending = e.id;
        return;
      }
      this.onEvent(e);
    });
  }

  /** Connects `qp`: the client's attempts, or the server's accept of the request. */
  async connect(qp: QueuePair): Promise<void> {
    if (this.o.role === 'server') await this.accept(qp);
    else await this.connectClient(qp);
  }

  private async accept(qp: QueuePair): Promise<void> {
    this.listen();
    const { connectMs, idle } = this.o;
    const deadline = Date.now() + connectMs;
    try {
      while (this.pending === null) {
        if (Date.now() > deadline)
          throw new PerftestError(PerftestErrorCode.TIMEOUT, `the client did not connect the test QP through the RDMA CM within ${connectMs} ms`);
        await idle();
      }
      const id: RdmaCmId = this.pending;
      if (this.o.beforeConnect !== undefined) await this.o.beforeConnect(v4Gid(id.peerAddr));
      this.id = id;
      if (this.o.ackTimeout !== undefined) id.ackTimeout = this.o.ackTimeout;
      id.accept(qp, { responderResources: this.o.rdAtomic, initiatorDepth: this.o.rdAtomic, retryCount: this.o.retryCount ?? 7, rnrRetryCount: 7 });
    } finally {
      this.listener?.close();
      this.listener = null;
    }
  }

  private async connectClient(qp: QueuePair): Promise<void> {
    const { dst, port, stepMs, idle } = this.o;
    if (dst === undefined) throw new PerftestError(PerftestErrorCode.CONFIG, "the client needs the server's address", 'server');
    if (this.o.beforeConnect !== undefined) await this.o.beforeConnect(v4Gid(dst));
    let last: PerftestError | null = null;
    let lastType: RdmaCmEvent['type'] | null = null;
    const retryUntil = Date.now() + this.o.connectMs;
    for (let attempt = 0; attempt < CLIENT_ATTEMPTS || Date.now() < retryUntil; attempt++) {
      if (attempt > 0) await this.pause(CLIENT_RETRY_DELAY_MS);
      this.attempts++;
      this.events = [];
      const id = this.rcm.connect(
        {
          dst,
          port,
          qp,
          ...cmConnectTiming(this.o.cm),
          ...(this.o.tos !== undefined ? { tos: this.o.tos } : {}),
          ...(this.o.ackTimeout !== undefined ? { ackTimeout: this.o.ackTimeout } : {}),
          param: { responderResources: this.o.rdAtomic, initiatorDepth: this.o.rdAtomic, retryCount: this.o.retryCount ?? 7, rnrRetryCount: 7 },
        },
        this.onEvent,
      );
      const deadline = Date.now() + stepMs;
      for (;;) {
        if (this.events.some((e) => e.type === 'ESTABLISHED')) {
          this.id = id;
          return;
        }
        const bad = this.events.find((e) => e.type !== 'ESTABLISHED');
        if (bad !== undefined) {
          last = cmEventFailure(bad, `the RDMA CM connection of the test QP to ${dst}:${port}`);
          lastType = bad.type;
          break;
        }
        if (Date.now() > deadline) {
          id.destroy();
          throw new PerftestError(PerftestErrorCode.UNREACHABLE, `the test QP's RDMA CM connection to ${dst}:${port} was not answered within ${stepMs} ms`);
        }
        await idle();
      }
      id.destroy();
      // Only a refusal is worth another attempt: the server may be about to listen. The CM's own
      // retries have already run out behind UNREACHABLE.
      if (lastType !== 'REJECTED') break;
    }
    throw last ?? new PerftestError(PerftestErrorCode.UNREACHABLE, `the test QP could not be connected to ${dst}:${port}`);
  }

  private async pause(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) await this.o.idle();
  }

  /** The PSN this side's QP receives from (what it advertised in its REQ or REP). */
  localPsn(): number {
    return this.id?.cmId.conn.localPsn ?? 0;
  }

  /**
   * The end of the test connection (see the file comment); the wait for DISCONNECTED is bounded
   * by the step timeout and a missing answer is not an error (the test is over by then).
   */
  async disconnect(): Promise<void> {
    const id = this.id;
    if (id === null) return;
    id.disconnect();
    const deadline = Date.now() + (this.o.role === 'client' ? this.o.stepMs : Math.min(this.o.stepMs, 1000));
    while (!this.events.some((e) => e.type === 'DISCONNECTED') && Date.now() < deadline) await this.o.idle();
  }

  destroy(): void {
    this.listener?.close();
    this.listener = null;
    this.id?.destroy();
    this.id = null;
  }
}
