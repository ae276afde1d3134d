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
import type { Device } from '../../stack/device';
import { QpState } from '../../stack/types';
import { RdmaCm } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { DEVICE_MAX_RD_ATOMIC, Endpoint, RDMA_EXAMPLE_DEFAULT_PORT, type RdmaExampleResult, checkAddress, v4Gid } from './endpoint';

export interface RdmaClientConfig {
  /** -s: the server's address. */
  addr: string;
  port?: number;
  /** Give up when a step makes no progress for this long (default 10 s). */
  stepTimeoutMs?: number;
  onLine?: (line: string) => void;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export async function runRdmaClient(dev: Device, cfg: RdmaClientConfig): Promise<RdmaExampleResult> {
  const port = cfg.port ?? RDMA_EXAMPLE_DEFAULT_PORT;
  checkAddress(cfg.addr, port);
  const stepMs = cfg.stepTimeoutMs ?? 10_000;
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
      { dst: cfg.addr, port, qp: ep.qp, param: { responderResources: DEVICE_MAX_RD_ATOMIC, initiatorDepth: DEVICE_MAX_RD_ATOMIC, retryCount: 7, rnrRetryCount: 7 } },
      ep.onEvent,
    );
    // rdma_post_recv() comes before rdma_connect() in the tool; the QP is in INIT from the start of
    // connect (no REP can come back before this line runs), and still in RESET if there is no route.
    if (ep.qp.state === QpState.INIT) ep.postRecv();
    await ep.waitUntil(() => ep.events.some((e) => e.type === 'ESTABLISHED'), 'ESTABLISHED (the REP)', stepMs, idle);
    const t0 = dev.clock.now();
    ep.postSend();
    await ep.waitCompletion('send', stepMs, idle);
    await ep.waitCompletion('recv', stepMs, idle);
    await ep.disconnect(stepMs, idle);
    say('rdma_client: end 0');
    return ep.result('rdma_client', port, t0, lines);
  } finally {
    ep.close();
    rcm.close();
  }
}
