/**
 * rdma_client (rdma-core librdmacm/examples/rdma_client.c) on a `Device`: connect to port 7471 of
 * the server (rdma_getaddrinfo(-s, -p), rdma_create_ep()), post the 16-byte receive,
 * rdma_connect(id, NULL) and wait for ESTABLISHED, SEND 16 bytes (inline), wait for the send's
 * completion and then for the server's 16 bytes, rdma_disconnect() and wait for DISCONNECTED.
 * Prints "rdma_client: start" and "rdma_client: end 0".
 *
 * rdma_connect(id, NULL) offers the device's limits: responder resources max_qp_rd_atom and
 * initiator depth max_qp_init_rd_atom (DEVICE_MAX_RD_ATOMIC), retry count 7 and RNR retry count 7
 * (ucma_copy_conn_param_to_kern() without a conn_param). A refused connection is rdma_connect()'s
 * ECONNREFUSED ("rdma_connect: Connection refused"); here with the REJ reason from the wire.
 */
import { type CmTiming, cmConnectTiming, cmStepBound } from '../host/cm-step-bound';
import type { NoProgressBound } from '../host/no-progress-bound';
import type { Device } from '../../stack/device';
import { QpState } from '../../stack/qp-type-and-state';
import { RdmaCm } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { DEVICE_MAX_RD_ATOMIC, Endpoint, RDMA_EXAMPLE_DEFAULT_PORT, type RdmaExampleResult, checkAddress, v4Gid } from './endpoint';

export interface RdmaClientConfig {
  /** -s: the server's address. */
  addr: string;
  port?: number;
  /** Give up when a step makes no progress for this long (default: CM steps a bound from the CM's timers, data one from the QP's). */
  stepTimeoutMs?: number;
  /** The CM's response timeout and retries (librdmacm's 20 and 15 by default). */
  cm?: CmTiming;
  onLine?: (line: string) => void;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export async function runRdmaClient(dev: Device, cfg: RdmaClientConfig): Promise<RdmaExampleResult> {
  const port = cfg.port ?? RDMA_EXAMPLE_DEFAULT_PORT;
  checkAddress(cfg.addr, port);
  // Bounds from the timers of what each wait is for, unless a step timeout is given.
  const given: NoProgressBound | null = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : null;
  const cmBound = given ?? cmStepBound(cfg.cm);
  const idle = cfg.idleWait ?? nextTurn;
  const lines: string[] = [];
  const say = (l: string): void => {
    lines.push(l);
    cfg.onLine?.(l);
  };
  say('rdma_client: start');
  const rcm = new RdmaCm(dev);
  const ep = new Endpoint(dev);
  try {
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(cfg.addr));
    ep.id = rcm.connect(
      {
        dst: cfg.addr,
        port,
        qp: ep.qp,
        ...cmConnectTiming(cfg.cm),
        param: { responderResources: DEVICE_MAX_RD_ATOMIC, initiatorDepth: DEVICE_MAX_RD_ATOMIC, retryCount: 7, rnrRetryCount: 7 },
      },
      ep.onEvent,
    );
    // rdma_post_recv() comes before rdma_connect() in the tool; the QP is in INIT from the start of
    // connect (no REP can come back before this line runs), and still in RESET if there is no route.
    if (ep.qp.state === QpState.INIT) ep.postRecv();
    await ep.waitUntil(() => ep.events.some((e) => e.type === 'ESTABLISHED'), 'ESTABLISHED (the REP)', cmBound, idle);
    const t0 = dev.clock.now();
    ep.postSend();
    await ep.waitCompletion('send', ep.dataBound(given), idle);
    await ep.waitCompletion('recv', ep.dataBound(given), idle);
    await ep.disconnect(cmBound, idle);
    say('rdma_client: end 0');
    return ep.result('rdma_client', port, t0, lines);
  } finally {
    ep.close();
    rcm.close();
  }
}
