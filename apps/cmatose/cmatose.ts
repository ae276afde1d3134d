/**
 * ucmatose (rdma-core librdmacm/examples/cmatose.c, v44 as Debian ships it) on a `Device`:
 * `connections` RC connections made through the RDMA CM (TCP port space, port 7471 by default),
 * then `messageCount` SENDs of `messageSize` bytes each way on every connection, then the
 * disconnects. The order is cmatose's:
 *
 *   client (run_client): every connection's QP is made, its `messageCount` receives posted
 *     (route_handler(): init_node(), post_recvs()) and its REQ sent with responder resources 1,
 *     initiator depth 1, retry count 5 and RNR retry count 0 (the rest of rdma_conn_param is
 *     memset to 0); once every connection is ESTABLISHED ("connect_events"): "receiving data
 *     transfers" (all of connection 0's receives, then connection 1's, ...), "sending replies"
 *     (`messageCount` SENDs per connection from the same buffer the receives landed in, so each
 *     connection echoes the last message it got), "data transfers complete"; then it waits for
 *     the server's DREQs (disconnect_events(), answering each with rdma_disconnect: the DREP).
 *   server (run_server): each CONNECT_REQUEST gets a node (QP, `messageCount` receives posted)
 *     and rdma_accept(id, NULL) (connect_handler()); a request beyond `connections` is refused
 *     ("cmatose: failing connection request", rdma_reject: REJ reason 28). Once all are
 *     ESTABLISHED: "initiating data transfers" (the SENDs of every connection), "completing
 *     sends", "receiving data transfers", "data transfers complete", "cmatose: disconnecting"
 *     (rdma_disconnect of each: the DREQs), then "disconnected" when every DREP is in.
 *
 * Every SEND is signalled (sq_sig_all = 1); both CQs and both queues hold max(messageCount, 1)
 * entries; -S 0 means no messages at all (create_message()). ucmatose's data is whatever malloc
 * returned and it checks none of it; our server fills connection i's buffer with the bytes i, i+1,
 * ... (mod 256) and reports how many connections sent back exactly that (the echo).
 *
 * Where we are stricter than ucmatose: its poll_cqs() counts any completion, ours must succeed
 * (an error is ROCE_ERR_CMATOSE_COMPLETION), a DISCONNECTED before the messages are through is an
 * error, and every wait is bounded (`stepTimeoutMs`).
 */
import { type CmTiming, cmConnectTiming, cmStepBound } from '../host/cm-step-bound';
import { type NoProgressBound, noProgressBound } from '../host/no-progress-bound';
import type { Device } from '../../stack/device';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import { RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { CmatoseError, CmatoseErrorCode } from './cmatose-error';

/** cmatose.c: `static const char *port = "7471"`, `connections = 1`, `message_count = 10`, `message_size = 100`. */
export const CMATOSE_DEFAULT_PORT = 7471;
export const CMATOSE_DEFAULT_CONNECTIONS = 1;
export const CMATOSE_DEFAULT_COUNT = 10;
export const CMATOSE_DEFAULT_SIZE = 100;

export interface CmatoseConfig {
  role: 'client' | 'server';
  /** Client: the server's address (-s). Server: the address to accept on (-b; undefined or 0.0.0.0: any). */
  addr?: string;
  port?: number;
  connections?: number;
  messageCount?: number;
  messageSize?: number;
  /** -t: type of service of the client's connections (the path's traffic class). */
  tos?: number;
  /** Give up when a step makes no progress for this long (default: CM steps a bound from the CM's timers, data steps one from the QPs'); a server waits `listenTimeoutMs` for its first client. */
  stepTimeoutMs?: number;
  /** The CM's response timeout and retries (librdmacm's 20 and 15 by default). */
  cm?: CmTiming;
  listenTimeoutMs?: number;
  /** ucmatose's progress lines, as it prints them ("cmatose: starting client", ...). */
  onLine?: (line: string) => void;
  /** The server listens (rdma_listen done): its port. */
  onListening?: ((port: number) => void) | undefined;
  /** Learns the peer's MAC before the CM talks to it (HostDevice.ensureNeighbor). */
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export interface CmatoseConnection {
  index: number;
  local: { addr: string; port: number; qpn: number };
  remote: { addr: string; port: number; qpn: number };
  /** Messages received and SENDs completed on this connection. */
  received: number;
  sent: number;
}

export interface CmatoseResult {
  ok: boolean;
  test: 'cmatose';
  role: 'client' | 'server';
  connections: number;
  messageCount: number;
  messageSize: number;
  /** Connections that reached ESTABLISHED, and requests refused because all `connections` were taken (server). */
  established: number;
  refused: number;
  /** Server: connections whose replies are byte for byte the message it sent them. */
  echoed: number;
  /** From the first connection's establishment to the end. */
  seconds: number;
  perConnection: CmatoseConnection[];
  /** The lines ucmatose would have printed. */
  lines: string[];
  problems: string[];
}

/** The IPv4-mapped GID of a dotted quad. */
function v4Gid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  ip.split('.').forEach((p, i) => (g[12 + i] = Number(p)));
  return g;
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

function checkConfig(cfg: CmatoseConfig): { port: number; connections: number; count: number; size: number } {
  const port = cfg.port ?? CMATOSE_DEFAULT_PORT;
  const connections = cfg.connections ?? CMATOSE_DEFAULT_CONNECTIONS;
  const size = cfg.messageSize ?? CMATOSE_DEFAULT_SIZE;
  // create_message(): "if (!message_size) message_count = 0".
  const count = size === 0 ? 0 : (cfg.messageCount ?? CMATOSE_DEFAULT_COUNT);
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw new CmatoseError(CmatoseErrorCode.CONFIG, `invalid port ${port}`);
  if (!Number.isInteger(connections) || connections < 1) throw new CmatoseError(CmatoseErrorCode.CONFIG, `invalid number of connections ${connections}`);
  if (!Number.isInteger(count) || count < 0) throw new CmatoseError(CmatoseErrorCode.CONFIG, `invalid message count ${count}`);
  if (!Number.isInteger(size) || size < 0) throw new CmatoseError(CmatoseErrorCode.CONFIG, `invalid message size ${size}`);
  if (cfg.role === 'client' && (cfg.addr === undefined || !IPV4.test(cfg.addr)))
    throw new CmatoseError(CmatoseErrorCode.CONFIG, `the server's address must be IPv4, not ${JSON.stringify(cfg.addr)}`);
  if (cfg.role === 'server' && cfg.addr !== undefined && !IPV4.test(cfg.addr))
    throw new CmatoseError(CmatoseErrorCode.CONFIG, `the bind address must be IPv4, not ${JSON.stringify(cfg.addr)}`);
  return { port, connections, count, size };
}

/** struct cmatest_node: one connection's PD, two CQs, QP and message buffer (init_node(), create_message()). */
class Node {
  readonly pd;
  readonly sendCq: CompletionQueue;
  readonly recvCq: CompletionQueue;
  readonly qp: QueuePair;
  /** The one buffer of the connection: every receive lands in it, every SEND is made from it. */
  readonly mr: MemoryRegion | null;
  id: RdmaCmId | null = null;
  connected = false;
  disconnected = false;
  received = 0;
  sent = 0;

  constructor(
    readonly index: number,
    readonly dev: Device,
    readonly count: number,
    readonly size: number,
  ) {
    const cqe = count > 0 ? count : 1;
    this.pd = dev.allocPd();
    this.sendCq = dev.createCq(cqe);
    this.recvCq = dev.createCq(cqe);
    this.qp = dev.createQp(this.pd, {
      qpType: QpType.RC,
      sendCq: this.sendCq,
      recvCq: this.recvCq,
      cap: { maxSendWr: cqe, maxRecvWr: cqe, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.mr = count > 0 ? dev.regMr(this.pd, new Uint8Array(size), Access.LOCAL_WRITE) : null;
  }

  /** post_recvs(): `count` receives of `size` bytes, all into the one buffer. */
  postRecvs(): void {
    const mr = this.mr;
    if (mr === null) return;
    for (let i = 0; i < this.count; i++) this.qp.postRecv({ wrId: this.index, sgList: [mr.sge(0, this.size)] });
  }

  /** post_sends(): `count` SENDs of the buffer, signalled (sq_sig_all). */
  postSends(): void {
    const mr = this.mr;
    if (!this.connected || mr === null) return;
    for (let i = 0; i < this.count; i++)
      this.qp.postSend({ wrId: this.index, opcode: WrOpcode.SEND, sgList: [mr.sge(0, this.size)], sendFlags: SendFlags.SIGNALED });
  }

  /** Takes the completions of both CQs; a failed one is an error unless the connection is already going down. */
  poll(): void {
    for (const cq of [this.sendCq, this.recvCq]) {
      for (const wc of cq.poll(8)) this.complete(wc);
    }
  }

  private complete(wc: WorkCompletion): void {
    if (wc.status !== WcStatus.SUCCESS) {
      if (this.disconnected && wc.status === WcStatus.WR_FLUSH_ERR) return;
      throw new CmatoseError(
        CmatoseErrorCode.COMPLETION,
        `connection ${this.index}: completion failed status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'}${wc.vendorErr !== '' ? `: ${wc.vendorErr}` : ''}) after ${this.sent} sends and ${this.received} receives`,
      );
    }
    if (wc.opcode === WcOpcode.RECV) {
      if (wc.byteLen !== this.size)
        throw new CmatoseError(CmatoseErrorCode.PROTOCOL, `connection ${this.index}: a message of ${wc.byteLen} bytes, not ${this.size}`);
      this.received++;
    } else if (wc.opcode === WcOpcode.SEND) {
      this.sent++;
    }
  }

  info(): CmatoseConnection {
    const id = this.id;
    return {
      index: this.index,
      local: { addr: id?.localAddr ?? '', port: id?.localPort ?? 0, qpn: this.qp.qpNum },
      remote: { addr: id?.peerAddr ?? '', port: id?.peerPort ?? 0, qpn: this.qp.attr.destQpNum },
      received: this.received,
      sent: this.sent,
    };
  }

  close(): void {
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing: nothing more to give back
    }
  }
}

/** rdma_event_str() of the events that end a connect (cma_handler()). */
function cmFailure(e: RdmaCmEvent): CmatoseError {
  if (e.type === 'REJECTED')
    return new CmatoseError(CmatoseErrorCode.REJECTED, `event: RDMA_CM_EVENT_REJECTED, error: ${e.reason} (REJ reason ${e.reason}: ${e.reasonText})`);
  if (e.type === 'UNREACHABLE') return new CmatoseError(CmatoseErrorCode.UNREACHABLE, `event: RDMA_CM_EVENT_UNREACHABLE (${e.why})`);
  if (e.type === 'CONNECT_ERROR') return new CmatoseError(CmatoseErrorCode.UNREACHABLE, `event: RDMA_CM_EVENT_CONNECT_ERROR (${e.why})`);
  return new CmatoseError(CmatoseErrorCode.PROTOCOL, `unexpected event ${e.type}`);
}

/** The server's pattern for connection `index`: bytes index, index+1, ... (mod 256). */
function serverMessage(buf: Uint8Array, index: number): void {
  for (let i = 0; i < buf.length; i++) buf[i] = (index + i) & 0xff;
}

/** What the configuration asks for, checked, and the bounds of the waits. */
interface CmatosePlan {
  port: number;
  connections: number;
  count: number;
  size: number;
  /** The step timeout given, which replaces every other bound; else null. */
  given: NoProgressBound | null;
  /** The CM's connection and disconnect steps. */
  cmBound: NoProgressBound;
  listenMs: number;
}

// Each wait's bound follows from the timers of what it waits for: the CM's for the connection and
// disconnect steps (apps/host/cm-step-bound.ts), the QPs' for the data (apps/host/no-progress-bound.ts),
// both for the client's wait for the server's DREQs, which come after the server's data; a step
// timeout given replaces them all.
function planCmatose(cfg: CmatoseConfig): CmatosePlan {
  const { port, connections, count, size } = checkConfig(cfg);
  const given: NoProgressBound | null = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : null;
  const cmBound: NoProgressBound = given ?? cmStepBound(cfg.cm);
  const listenMs = cfg.listenTimeoutMs ?? 300_000;
  return { port, connections, count, size, given, cmBound, listenMs };
}

/** One run of cmatose: its configuration, the CM, the connections and the event channel, and what happened so far. */
interface CmatoseSession {
  dev: Device;
  cfg: CmatoseConfig;
  plan: CmatosePlan;
  idle: () => Promise<void>;
  rcm: RdmaCm;
  nodes: Node[];
  nodeOf: Map<RdmaCmId, Node>;
  /** The event channel: what rdma_get_cm_event() would return, in order. */
  events: RdmaCmEvent[];
  /** The lines ucmatose would have printed. */
  lines: string[];
  established: number;
  refused: number;
  /** When the first connection was established, or null. */
  t0: number | null;
}

function say(s: CmatoseSession, l: string): void {
  s.lines.push(l);
  s.cfg.onLine?.(l);
}

/** The data steps' bound: from the QPs' timers as the CM set them. */
function dataBound(s: CmatoseSession): NoProgressBound {
  if (s.plan.given !== null) return s.plan.given;
  const a = s.nodes[0]?.qp.attr;
  return a === undefined ? s.plan.cmBound : noProgressBound({ timeout: a.timeout, retryCnt: a.retryCnt, rnrRetry: a.rnrRetry, minRnrTimer: a.minRnrTimer });
}

/** The client's wait for the server's data and then its DREQs. */
function bothBound(s: CmatoseSession): NoProgressBound {
  if (s.plan.given !== null) return s.plan.given;
  const d = dataBound(s);
  const { cmBound } = s.plan;
  return { ms: cmBound.ms + d.ms, why: `the peer's data (${d.why}) then its DREQ (${cmBound.why})` };
}

/** cma_handler() for the events that arrived; a CONNECT_REQUEST goes to connect_handler() (server). */
async function handleEvents(s: CmatoseSession): Promise<void> {
  while (s.events.length > 0) {
    const e = s.events.shift() as RdmaCmEvent;
    switch (e.type) {
      case 'CONNECT_REQUEST':
        await connectRequest(s, e.id);
        break;
      case 'ESTABLISHED': {
        const n = s.nodeOf.get(e.id);
        if (n === undefined || n.connected) break;
        n.connected = true;
        s.established++;
        s.t0 ??= s.dev.clock.now();
        break;
      }
      case 'REJECTED':
      case 'UNREACHABLE':
      case 'CONNECT_ERROR':
        throw cmFailure(e);
      case 'DISCONNECTED': {
        // The DREP has gone out with the event (RdmaCmId answers a DREQ at once), as rdma_disconnect() would send it.
        const n = s.nodeOf.get(e.id);
        if (n !== undefined) n.disconnected = true;
        break;
      }
      default:
        break;
    }
  }
}

/** connect_handler(): a node for the request, its receives posted, rdma_accept(id, NULL); beyond `connections`, rdma_reject. */
async function connectRequest(s: CmatoseSession, id: RdmaCmId): Promise<void> {
  const { cfg, nodes } = s;
  const bound = cfg.addr !== undefined && cfg.addr !== '0.0.0.0' ? cfg.addr : null;
  if (nodes.length === s.plan.connections || (bound !== null && id.localAddr !== bound)) {
    say(s, 'cmatose: failing connection request');
    s.refused++;
    id.reject();
    return;
  }
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(id.peerAddr));
  const n = new Node(nodes.length, s.dev, s.plan.count, s.plan.size);
  nodes.push(n);
  n.id = id;
  s.nodeOf.set(id, n);
  if (n.mr !== null) serverMessage(n.mr.buffer, n.index);
  // connect_handler() posts the receives before rdma_accept(); here accept() gives the QP to the ID
  // (INIT), moves it to RTS and sends the REP in one go, and the receives follow at once: nothing
  // from the peer can arrive in between.
  id.accept(n.qp);
  n.postRecvs();
}

/** Runs the event loop until `done`, polling the CQs; `what` names the wait in the timeout error. */
async function waitUntil(s: CmatoseSession, done: () => boolean, what: string, bound: NoProgressBound = s.plan.cmBound): Promise<void> {
  const deadline = Date.now() + bound.ms;
  for (;;) {
    await handleEvents(s);
    for (const n of s.nodes) n.poll();
    if (done()) return;
    if (Date.now() > deadline) throw new CmatoseError(CmatoseErrorCode.TIMEOUT, `no progress within ${bound.ms} ms while ${what} (${bound.why})`);
    await s.idle();
  }
}

/** A DISCONNECTED before the messages are through ends the run. */
function noEarlyDisconnect(s: CmatoseSession, phase: string): void {
  const n = s.nodes.find((x) => x.disconnected);
  if (n !== undefined)
    throw new CmatoseError(
      CmatoseErrorCode.PROTOCOL,
      `the peer disconnected connection ${n.index} while ${phase} (${n.received} of ${s.plan.count} messages received, ${n.sent} sent)`,
    );
}

/** run_client() up to connect_events(): every connection's node, receives and REQ, until all are ESTABLISHED. */
async function connectClient(s: CmatoseSession): Promise<void> {
  const { cfg, nodes } = s;
  const { connections, count, size, port } = s.plan;
  const dst = cfg.addr as string;
  say(s, 'cmatose: starting client');
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(dst));
  say(s, 'cmatose: connecting');
  for (let i = 0; i < connections; i++) {
    const n = new Node(i, s.dev, count, size);
    nodes.push(n);
    const id = s.rcm.connect(
      {
        dst,
        port,
        qp: n.qp,
        ...(cfg.tos !== undefined ? { tos: cfg.tos } : {}),
        ...cmConnectTiming(cfg.cm),
        param: { responderResources: 1, initiatorDepth: 1, retryCount: 5, rnrRetryCount: 0 },
      },
      (e) => s.events.push(e),
    );
    n.id = id;
    s.nodeOf.set(id, n);
    // route_handler() posts the receives before rdma_connect(); the QP is in INIT from the start of
    // connect (no REP can come back before this line runs), and still in RESET if there is no route.
    if (n.qp.state === QpState.INIT) n.postRecvs();
  }
  await waitUntil(s, () => s.established === connections, `connecting (${s.established} of ${connections} established)`);
}

/** The client's data transfers: all the server's messages in, then its replies; then disconnect_events(). */
async function clientTransfers(s: CmatoseSession): Promise<void> {
  const { nodes } = s;
  const { count } = s.plan;
  if (count > 0) {
    say(s, 'receiving data transfers');
    await waitUntil(
      s,
      () => {
        noEarlyDisconnect(s, 'receiving');
        return nodes.every((n) => n.received >= count);
      },
      'receiving data transfers',
      dataBound(s),
    );
    say(s, 'sending replies');
    for (const n of nodes) n.postSends();
    say(s, 'data transfers complete');
  }
  // disconnect_events(): until the server has disconnected every connection.
  await waitUntil(s, () => nodes.every((n) => n.disconnected), "waiting for the server's disconnects", bothBound(s));
}

/** run_server() up to its connections: listen, and accept (connect_handler()) until all are ESTABLISHED. */
async function acceptClients(s: CmatoseSession): Promise<void> {
  const { connections, port, listenMs } = s.plan;
  say(s, 'cmatose: starting server');
  const listener = s.rcm.listen(port, (e) => s.events.push(e));
  s.cfg.onListening?.(port);
  try {
    await waitUntil(s, () => s.established === connections, `accepting connections (${s.established} of ${connections} established)`, {
      ms: listenMs,
      why: 'the time a server waits for its clients',
    });
  } finally {
    listener.close();
  }
}

/** The server's data transfers (its SENDs, then the replies), then its DREQs and the DREPs. */
async function serverTransfers(s: CmatoseSession): Promise<void> {
  const { nodes } = s;
  const { count } = s.plan;
  if (count > 0) {
    say(s, 'initiating data transfers');
    for (const n of nodes) n.postSends();
    say(s, 'completing sends');
    await waitUntil(
      s,
      () => {
        noEarlyDisconnect(s, 'sending');
        return nodes.every((n) => n.sent >= count);
      },
      'completing sends',
      dataBound(s),
    );
    say(s, 'receiving data transfers');
    await waitUntil(
      s,
      () => {
        noEarlyDisconnect(s, 'receiving');
        return nodes.every((n) => n.received >= count);
      },
      'receiving data transfers',
      dataBound(s),
    );
    say(s, 'data transfers complete');
  }
  say(s, 'cmatose: disconnecting');
  for (const n of nodes) n.id?.disconnect();
  await waitUntil(s, () => nodes.every((n) => n.disconnected), 'waiting for the DREPs');
  say(s, 'disconnected');
}

/** The closing lines and the figures; a server counts the connections that echoed its message. */
function reportCmatose(s: CmatoseSession): CmatoseResult {
  const { nodes } = s;
  const { connections, count, size } = s.plan;
  say(s, 'test complete');
  say(s, 'return status 0');
  let echoed = 0;
  if (s.cfg.role !== 'client') {
    const want = new Uint8Array(size);
    for (const n of nodes) {
      serverMessage(want, n.index);
      if (n.mr !== null && n.received > 0 && n.mr.buffer.every((b, i) => b === want[i])) echoed++;
    }
  }
  return {
    ok: true,
    test: 'cmatose',
    role: s.cfg.role,
    connections,
    messageCount: count,
    messageSize: size,
    established: s.established,
    refused: s.refused,
    echoed,
    seconds: s.t0 === null ? 0 : (s.dev.clock.now() - s.t0) / 1e9,
    perConnection: nodes.map((n) => n.info()),
    lines: s.lines,
    problems: [],
  };
}

/** Runs one end of ucmatose: plan, set up, connect or accept, the data transfers and disconnects, the report. */
export async function runCmatose(dev: Device, cfg: CmatoseConfig): Promise<CmatoseResult> {
  const plan = planCmatose(cfg);
  const s: CmatoseSession = {
    dev,
    cfg,
    plan,
    idle: cfg.idleWait ?? nextTurn,
    rcm: new RdmaCm(dev),
    nodes: [],
    nodeOf: new Map(),
    events: [],
    lines: [],
    established: 0,
    refused: 0,
    t0: null,
  };
  try {
    if (cfg.role === 'client') {
      await connectClient(s);
      await clientTransfers(s);
    } else {
      await acceptClients(s);
      await serverTransfers(s);
    }
    return reportCmatose(s);
  } finally {
    for (const n of s.nodes) n.id?.destroy();
    s.rcm.close();
    for (const n of s.nodes) n.close();
  }
}
