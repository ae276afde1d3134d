/**
 * rdma_server (rdma-core librdmacm/examples/rdma_server.c) on a `Device`: listen on port 7471 of
 * the TCP port space (rdma_getaddrinfo("0.0.0.0" or -s, port, RAI_PASSIVE), rdma_create_ep(),
 * rdma_listen()), take the first connect request (rdma_get_request()), post the 16-byte receive,
 * rdma_accept(id, NULL) and wait for ESTABLISHED, wait for the client's 16-byte SEND, SEND 16 bytes
 * back (inline), wait for its completion, rdma_disconnect() and wait for DISCONNECTED. Prints
 * "rdma_server: start" and "rdma_server: end 0".
 *
 * rdma_accept(id, NULL) answers with what the request offered, capped by the device (cma.c
 * rdma_accept(): initiator depth = min(the request's responder resources, max_qp_init_rd_atom),
 * responder resources = min(its initiator depth, max_qp_rd_atom)), RNR retry count 7
 * (ucma_copy_conn_param_to_kern()). Requests after the first are refused: the tool never takes
 * them (its listening ID is destroyed at the end, which rejects what is still pending).
 */
import { type CmTiming, cmStepBound } from '../host/cm-step-bound';
import type { NoProgressBound } from '../host/no-progress-bound';
import type { Device } from '../../stack/device';
import { RdmaCm, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { DEVICE_MAX_RD_ATOMIC, Endpoint, RDMA_EXAMPLE_DEFAULT_PORT, type RdmaExampleResult, checkAddress, v4Gid } from './endpoint';
import { RdmaExampleError, RdmaExampleErrorCode } from './rdma-example-error';

export interface RdmaServerConfig {
  /** -s: the address to listen on (default 0.0.0.0: any). */
  addr?: string;
  port?: number;
  /** Give up when a step makes no progress for this long (default: CM steps a bound from the CM's timers, data one from the QP's); the wait for the client is `listenTimeoutMs`. */
  stepTimeoutMs?: number;
  /** The CM's response timeout and retries for the REP and DREQ (librdmacm's 20 and 15 by default). */
  cm?: CmTiming;
  listenTimeoutMs?: number;
  onLine?: (line: string) => void;
  /** The server listens (rdma_listen done): its port. */
  onListening?: ((port: number) => void) | undefined;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export async function runRdmaServer(dev: Device, cfg: RdmaServerConfig): Promise<RdmaExampleResult> {
  const addr = cfg.addr ?? '0.0.0.0';
  const port = cfg.port ?? RDMA_EXAMPLE_DEFAULT_PORT;
  checkAddress(addr, port);
  // Bounds from the timers of what each wait is for, unless a step timeout is given.
  const given: NoProgressBound | null = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : null;
  const cmBound = given ?? cmStepBound(cfg.cm);
  const listenMs = cfg.listenTimeoutMs ?? 300_000;
  const idle = cfg.idleWait ?? nextTurn;
  const lines: string[] = [];
  const say = (l: string): void => {
    lines.push(l);
    cfg.onLine?.(l);
  };
  say('rdma_server: start');
  const rcm = new RdmaCm(dev);
  const ep = new Endpoint(dev);
  let request: RdmaCmId | null = null;
  const listener = rcm.listen(port, (e) => {
    if (e.type === 'CONNECT_REQUEST') {
      // A listener bound to one address takes only requests for it (the kernel finds no listener for
      // the others); one request is taken, the rest refused.
      if (request !== null || (addr !== '0.0.0.0' && e.id.localAddr !== addr)) e.id.reject();
      else request = e.id;
      return;
    }
    ep.onEvent(e);
  });
  cfg.onListening?.(port);
  try {
    // rdma_get_request().
    const deadline = Date.now() + listenMs;
    while (request === null) {
      if (Date.now() > deadline) throw new RdmaExampleError(RdmaExampleErrorCode.TIMEOUT, `no connect request within ${listenMs} ms`);
      await idle();
    }
    const id: RdmaCmId = request;
    ep.id = id;
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(id.peerAddr));
    const offered = id.cmId.conn;
    // rdma_accept(id, NULL), then the receive: the tool posts it before rdma_accept(); here accept() gives
    // the QP to the ID and sends the REP in one go, and nothing from the client can arrive before the next line.
    id.accept(ep.qp, {
      responderResources: Math.min(offered.responderResources, DEVICE_MAX_RD_ATOMIC),
      initiatorDepth: Math.min(offered.initiatorDepth, DEVICE_MAX_RD_ATOMIC),
      rnrRetryCount: 7,
    });
    ep.postRecv();
    const t0 = dev.clock.now();
    // ucma_complete(): rdma_accept() of a synchronous ID returns with ESTABLISHED (the RTU, or the first packet).
    await ep.waitUntil(() => ep.events.some((e) => e.type === 'ESTABLISHED'), 'ESTABLISHED after the accept', cmBound, idle);
    await ep.waitCompletion('recv', ep.dataBound(given), idle);
    ep.postSend();
    await ep.waitCompletion('send', ep.dataBound(given), idle);
    await ep.disconnect(cmBound, idle);
    say('rdma_server: end 0');
    return ep.result('rdma_server', port, t0, lines);
  } finally {
    listener.close();
    ep.close();
    rcm.close();
  }
}
