/**
 * udaddy (rdma-core librdmacm/examples/udaddy.c) on a `Device`: UD "connections" of librdmacm's
 * UDP port space (RDMA_PS_UDP, service ID 0x0000000001110000 | port; port 7174, udaddy's fixed
 * `port`), resolved by SIDR rather than connected, then datagrams both ways:
 *
 *   client: per connection, address and route resolution, verify_test_params() (-S no larger than
 *           the active MTU), init_node() and post_recvs(), rdma_connect() = SIDR_REQ with the IP CM
 *           header; RDMA_CM_EVENT_ESTABLISHED carries the server's QPN and Q_Key and an address
 *           handle (resolved_handler()). Then "initiating data transfers": -C unsignaled
 *           SEND_WITH_IMMs of -S bytes per connection (the immediate is the client's QPN), and
 *           "receiving data transfers": -C completions per connection (the server's replies).
 *   server: rdma_listen(); per CONNECT_REQUEST (connect_handler()) verify_test_params(),
 *           init_node(), post_recvs(), rdma_accept() = SIDR_REP with the QPN and the port space's
 *           Q_Key, or rdma_reject() = SIDR_REP "rejected" ("udaddy: failing connection
 *           request"). Then "receiving data transfers": -C completions per connection, the first
 *           giving the reply address handle (ibv_create_ah_from_wc() on the GRH area, reply-ah.ts)
 *           and the client's QPN (the immediate data); "sending replies": -C signaled sends back,
 *           and -C completions of them.
 *
 * The text lines are udaddy's printf()s, "test complete" and "return status N" last. The status
 * is udaddy's `ret`: 0, or the failing rdma_cm event's status (printed as "udaddy: event: %s,
 * error: %d": the SIDR_REP status, or -ETIMEDOUT when the SIDR_REQ went unanswered after the CM's
 * retries), or -EINVAL for a -S larger than the MTU on the client. A failure ends in a
 * UdaddyError carrying that status.
 *
 * Where roce-ts bounds what udaddy leaves unbounded: udaddy waits for ever for a client and for
 * every completion (a lost datagram, which UD never resends, hangs it); here a server waits at
 * most `listenTimeoutMs` for its clients and each data wait ends after `stepTimeoutMs` without
 * progress (UdaddyError TIMEOUT). The resolution itself is bounded by the CM: 1 + 15 SIDR_REQs,
 * one per response timeout (cma.c cma_resolve_ib_udp(): timeout_ms = 1 << (20 - 8), 15 retries).
 * udaddy counts every completion alike; an error completion is also listed in `problems`.
 */
import { type CmTiming, cmConnectTiming, cmStepBound } from '../host/cm-step-bound';
import type { NoProgressBound } from '../host/no-progress-bound';
import type { Device } from '../../stack/device';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import { mtuBytes } from '../../stack/mtu';
import { RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { PortSpace } from '../../packets/cm/service-id';
import { nextTurn } from '../host/clock-pump';
import { GRH_LEN, replyAhAttr } from './reply-ah';
import { UdaddyNode } from './udaddy-node';
import { UdaddyError, UdaddyErrorCode } from './udaddy-error';

/** udaddy's defaults: `port = "7174"`, `connections = 1`, `message_count = 10`, `message_size = 100`. */
export const UDADDY_DEFAULT_PORT = 7174;
export const UDADDY_DEFAULT_CONNECTIONS = 1;
export const UDADDY_DEFAULT_COUNT = 10;
export const UDADDY_DEFAULT_SIZE = 100;
/** The only port space udaddy can use on RoCE (-p 0x111; RDMA_PS_IPOIB needs an InfiniBand link, cma.c cma_acquire_dev()). */
export const UDADDY_PORT_SPACE = PortSpace.UDP;

const EINVAL = 22;
const ETIMEDOUT = 110;

export interface UdaddyConfig {
  role: 'client' | 'server';
  /** Client: the server's IPv4 address (udaddy -s). */
  dst?: string;
  /** -b: the address to bind: the server's listening address, the client's source address. */
  src?: string;
  /** Port of the UDP port space (udaddy's is fixed at 7174). */
  port?: number;
  /** -c: connections (client: resolved; server: accepted). */
  connections?: number;
  /** -C: messages each way per connection (0: none; also when -S is 0, as create_message()). */
  messageCount?: number;
  /** -S: message size in bytes (no larger than the active MTU). */
  messageSize?: number;
  /** -t: type of service of the client's datagrams (the address handle's traffic class). */
  tos?: number;
  /** Give up a data wait after this long without progress (default 10 s), and a server's wait for its clients after `listenTimeoutMs` (default 300 s). */
  stepTimeoutMs?: number;
  /** The SIDR_REQ's response timeout and retries (librdmacm's 20 and 15 by default). */
  cm?: CmTiming;
  listenTimeoutMs?: number;
  /** Learns the peer's MAC before the CM talks to it (HostDevice.ensureNeighbor). */
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  /** How the loops wait while nothing happens (HostDevice.idleWait). */
  idleWait?: () => Promise<void>;
  /** Each of udaddy's output lines, as it is printed. */
  onLine?: (line: string) => void;
  onListening?: ((port: number) => void) | undefined;
}

export interface UdaddyEnd {
  addr: string;
  port: number;
  qpn: number;
  qkey: number;
}

export interface UdaddyNodeResult {
  local: UdaddyEnd;
  remote: UdaddyEnd;
  /** Sends posted, receive completions and their bytes (message size + 40 each). */
  sent: number;
  received: number;
  receivedBytes: number;
}

export interface UdaddyResult {
  ok: boolean;
  test: 'udaddy';
  role: 'client' | 'server';
  port: number;
  connections: number;
  messageCount: number;
  messageSize: number;
  /** udaddy's "return status". */
  returnStatus: number;
  /** Connections resolved (client) or accepted (server). */
  connected: number;
  /** Server: connection requests refused (SIDR_REP status 2). */
  rejected: number;
  nodes: UdaddyNodeResult[];
  /** From the first resolved connection to the end. */
  seconds: number;
  /** udaddy's output. */
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

const isV4 = (a: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(a);

interface Checked {
  port: number;
  connections: number;
  messageCount: number;
  messageSize: number;
}

function checkConfig(cfg: UdaddyConfig): Checked {
  const port = cfg.port ?? UDADDY_DEFAULT_PORT;
  const connections = cfg.connections ?? UDADDY_DEFAULT_CONNECTIONS;
  const messageSize = cfg.messageSize ?? UDADDY_DEFAULT_SIZE;
  // create_message(): "if (!message_size) message_count = 0".
  const messageCount = messageSize === 0 ? 0 : (cfg.messageCount ?? UDADDY_DEFAULT_COUNT);
  const bad = (what: string): UdaddyError => new UdaddyError(UdaddyErrorCode.CONFIG, what, -EINVAL);
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw bad(`invalid port ${port}`);
  if (!Number.isInteger(connections) || connections < 1) throw bad(`invalid number of connections ${connections}`);
  if (!Number.isInteger(messageCount) || messageCount < 0) throw bad(`invalid message count ${messageCount}`);
  if (!Number.isInteger(messageSize) || messageSize < 0) throw bad(`invalid message size ${messageSize}`);
  if (cfg.role === 'client' && (cfg.dst === undefined || !isV4(cfg.dst))) throw bad(`-s ${cfg.dst ?? '(none)'}: the server's IPv4 address is required`);
  if (cfg.src !== undefined && !isV4(cfg.src)) throw bad(`-b ${cfg.src}: only IPv4 addresses are supported`);
  if (cfg.tos !== undefined && (!Number.isInteger(cfg.tos) || cfg.tos < 0 || cfg.tos > 0xff)) throw bad(`invalid type of service ${cfg.tos}`);
  return { port, connections, messageCount, messageSize };
}

/** Why a failure ended the run: udaddy's lines, then the error. */
class Ending {
  constructor(readonly error: UdaddyError) {}
}

/** How long a UD data wait lasts without a completion (UD has no transport timer to derive it from). */
export const UD_DATA_WAIT_MS = 10_000;

/** What the configuration asks for, checked, the bounds of the waits, and the active MTU. */
interface UdaddyPlan extends Checked {
  /** A data wait's bound without a completion. */
  stepMs: number;
  /** The SIDR resolution's bound. */
  sidrBound: NoProgressBound;
  listenMs: number;
  /** The active MTU in bytes: a datagram is one packet. */
  mtu: number;
}

// UD has no transport timer (a lost datagram is never resent, IBTA vol. 1 §9.8), so nothing bounds a
// data wait but a fixed time: 10 s unless a step timeout is given. The SIDR resolution is bounded by
// the SIDR_REQ's own response wait and retries (apps/host/cm-step-bound.ts).
function planUdaddy(dev: Device, cfg: UdaddyConfig): UdaddyPlan {
  const c = checkConfig(cfg);
  const stepMs = cfg.stepTimeoutMs ?? UD_DATA_WAIT_MS;
  const sidrBound: NoProgressBound = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : cmStepBound(cfg.cm, true);
  const listenMs = cfg.listenTimeoutMs ?? 300_000;
  return { ...c, stepMs, sidrBound, listenMs, mtu: mtuBytes(dev.maxMtu()) };
}

/** One run of udaddy: its configuration, the CM and its event channel, the connections, and what happened so far. */
interface UdaddySession {
  dev: Device;
  cfg: UdaddyConfig;
  c: UdaddyPlan;
  idle: () => Promise<void>;
  rcm: RdmaCm;
  nodes: UdaddyNode[];
  /** The event channel: what rdma_get_cm_event() would return, in order. */
  queued: RdmaCmEvent[];
  /** udaddy's output. */
  lines: string[];
  problems: string[];
  rejected: number;
  /** When the first connection was resolved or accepted, or null. */
  t0: number | null;
}

function say(s: UdaddySession, line: string): void {
  s.lines.push(line);
  s.cfg.onLine?.(line);
}

/** verify_test_params(): "message_size %d is larger than active mtu %d" (a datagram is one packet). */
function verifyParams(s: UdaddySession): boolean {
  const { c } = s;
  if (c.messageCount > 0 && c.messageSize > c.mtu) {
    say(s, `udaddy: message_size ${c.messageSize} is larger than active mtu ${c.mtu}`);
    return false;
  }
  return true;
}

/** The device must hold -b (rdma_bind_addr() / rdma_resolve_addr() with a source address). */
function checkBind(s: UdaddySession, what: string): void {
  const { cfg, dev } = s;
  if (cfg.src === undefined) return;
  const g = v4Gid(cfg.src);
  if (!dev.gids.some((x) => x.every((v, i) => v === g[i]))) {
    say(s, what);
    throw new Ending(new UdaddyError(UdaddyErrorCode.CONFIG, `${what}: ${cfg.src} is not an address of ${dev.name}`, -1));
  }
}

/** The failure event's line (cma_handler()), then the error it ends the run with. */
function eventFailure(s: UdaddySession, e: RdmaCmEvent): Ending {
  if (e.type === 'UNREACHABLE') {
    say(s, `udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: ${e.status}`);
    return new Ending(new UdaddyError(UdaddyErrorCode.UNREACHABLE, `event RDMA_CM_EVENT_UNREACHABLE, error: ${e.status} (${e.why})`, e.status));
  }
  const name = e.type === 'REJECTED' ? 'RDMA_CM_EVENT_REJECTED' : 'RDMA_CM_EVENT_CONNECT_ERROR';
  say(s, `udaddy: event: ${name}, error: ${-EINVAL}`);
  return new Ending(new UdaddyError(UdaddyErrorCode.UNREACHABLE, `event ${name}, error: ${-EINVAL}`, -EINVAL));
}

/**
 * poll_cqs(): `message_count` completions from every connected node's CQ; the server's first
 * batch gives the reply address handle (create_reply_ah()).
 */
async function pollCqs(s: UdaddySession, what: string): Promise<void> {
  const { c } = s;
  const { stepMs } = c;
  for (const n of s.nodes) {
    if (!n.connected) continue;
    let done = 0;
    let deadline = Date.now() + stepMs;
    while (done < c.messageCount) {
      const wcs = n.cq.poll(8);
      if (wcs.length > 0) {
        if (n.ah === null) createReplyAh(s, n, wcs[0] as WorkCompletion);
        for (const wc of wcs) take(s, n, wc);
        done += wcs.length;
        deadline = Date.now() + stepMs;
        continue;
      }
      if (Date.now() > deadline) {
        throw new Ending(
          new UdaddyError(
            UdaddyErrorCode.TIMEOUT,
            `connection ${n.index}: ${done} of ${c.messageCount} completions (${what}) after ${stepMs} ms without progress; a lost datagram is not resent on UD`,
            -ETIMEDOUT,
          ),
        );
      }
      await s.idle();
    }
  }
}

function take(s: UdaddySession, n: UdaddyNode, wc: WorkCompletion): void {
  n.completions++;
  if (wc.status !== WcStatus.SUCCESS) {
    s.problems.push(
      `connection ${n.index}: completion status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'}${wc.vendorErr !== '' ? `: ${wc.vendorErr}` : ''})`,
    );
    return;
  }
  if (wc.opcode === WcOpcode.RECV) {
    n.received++;
    n.receivedBytes += wc.byteLen;
  }
}

/** create_reply_ah(): the AH from the completion and the GRH area, the client's QPN from the immediate, our own Q_Key. */
function createReplyAh(s: UdaddySession, n: UdaddyNode, wc: WorkCompletion): void {
  const { dev } = s;
  const attr = n.mr === null ? null : replyAhAttr(n.mr.buffer.subarray(0, GRH_LEN), dev.gids);
  if (attr !== null) {
    try {
      n.ah = dev.createAh(n.pd, attr);
    } catch {
      n.ah = null;
    }
  }
  if (n.ah === null) {
    say(s, 'udaddy: failed to create reply AH');
    throw new Ending(
      new UdaddyError(
        UdaddyErrorCode.ADDR_ERROR,
        `connection ${n.index}: no address handle for the reply to the datagram from QP 0x${wc.srcQp.toString(16)}`,
        -1,
      ),
    );
  }
  n.remoteQpn = wc.immData >>> 0;
  n.remoteQkey = n.qp.attr.qkey;
}

/** run_client() up to its data: every connection's node, receives and SIDR_REQ, then connect_events() until all are resolved or one fails. */
async function resolveClient(s: UdaddySession): Promise<void> {
  const { cfg, dev, c, nodes, queued } = s;
  const { mtu, sidrBound } = c;
  const dst = cfg.dst as string;
  say(s, 'udaddy: starting client');
  checkBind(s, 'udaddy: failure getting addr');
  say(s, 'udaddy: connecting');
  const peerGid = v4Gid(dst);
  let connectsLeft = c.connections;
  let failure: Ending | null = null;
  for (let i = 0; i < c.connections && failure === null; i++) {
    // rdma_resolve_addr() and rdma_resolve_route(): the neighbour, then the path.
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(peerGid);
    // route_handler().
    if (!verifyParams(s)) {
      failure = new Ending(new UdaddyError(UdaddyErrorCode.CONFIG, `message_size ${c.messageSize} is larger than active mtu ${mtu}`, -EINVAL));
      break;
    }
    const n = new UdaddyNode(dev, i, c.messageCount, c.messageSize);
    nodes.push(n);
    n.postRecvs();
    n.id = s.rcm.resolveUd({ dst, port: c.port, ...cmConnectTiming(cfg.cm) }, (e) => queued.push(e));
  }
  // connect_events(): until every connection is resolved or one fails.
  const resolveBy = Date.now() + sidrBound.ms;
  while (failure === null && connectsLeft > 0) {
    const e = queued.shift();
    if (e === undefined) {
      if (Date.now() > resolveBy) {
        throw new Ending(
          new UdaddyError(
            UdaddyErrorCode.TIMEOUT,
            `${c.connections - connectsLeft} of ${c.connections} connections resolved within ${sidrBound.ms} ms (${sidrBound.why})`,
            -ETIMEDOUT,
          ),
        );
      }
      await s.idle();
      continue;
    }
    const n = nodes.find((x) => x.id === e.id);
    if (n === undefined) continue;
    if (e.type === 'ESTABLISHED' && e.ud !== undefined) {
      // cma.c cma_sidr_rep_handler() → cma_set_qkey(): a Q_Key other than the ID's is ADDR_ERROR, -EINVAL.
      if (e.ud.qkey !== n.qp.attr.qkey) {
        say(s, `udaddy: event: RDMA_CM_EVENT_ADDR_ERROR, error: ${-EINVAL}`);
        failure = new Ending(
          new UdaddyError(
            UdaddyErrorCode.ADDR_ERROR,
            `event RDMA_CM_EVENT_ADDR_ERROR, error: ${-EINVAL}: the SIDR_REP's Q_Key 0x${e.ud.qkey.toString(16)} is not the port space's 0x${n.qp.attr.qkey.toString(16)}`,
            -EINVAL,
          ),
        );
        break;
      }
      // resolved_handler().
      n.remoteQpn = e.ud.qpn;
      n.remoteQkey = e.ud.qkey;
      n.ah = cfg.tos === undefined ? e.ud.ah : dev.createAh(n.pd, { ...e.ud.ah.attr, trafficClass: cfg.tos });
      n.connected = true;
      s.t0 ??= dev.clock.now();
      connectsLeft--;
    } else if (e.type === 'UNREACHABLE' || e.type === 'REJECTED' || e.type === 'CONNECT_ERROR') {
      failure = eventFailure(s, e);
    }
  }
  if (failure !== null) throw failure;
}

/** The client's data: its datagrams, then the server's replies. */
async function clientTransfers(s: UdaddySession): Promise<void> {
  if (s.c.messageCount > 0) {
    say(s, 'initiating data transfers');
    for (const n of s.nodes) n.postSends(false);
    say(s, 'receiving data transfers');
    await pollCqs(s, 'replies');
    say(s, 'data transfers complete');
  }
}

/** run_server() up to its data: listen, then connect_events() until `connections` requests are accepted or one fails. */
async function acceptClients(s: UdaddySession): Promise<void> {
  const { cfg, dev, c, nodes, queued } = s;
  const { listenMs } = c;
  say(s, 'udaddy: starting server');
  checkBind(s, 'udaddy: bind address failed');
  s.rcm.listen(c.port, (e) => queued.push(e), UDADDY_PORT_SPACE);
  cfg.onListening?.(c.port);
  // connect_events(): until `connections` requests are accepted or one fails.
  const deadline = Date.now() + listenMs;
  let connectsLeft = c.connections;
  while (connectsLeft > 0) {
    const e = queued.shift();
    if (e === undefined) {
      if (Date.now() > deadline)
        throw new Ending(
          new UdaddyError(UdaddyErrorCode.TIMEOUT, `${c.connections - connectsLeft} of ${c.connections} clients within ${listenMs} ms`, -ETIMEDOUT),
        );
      await s.idle();
      continue;
    }
    if (e.type !== 'CONNECT_REQUEST') continue;
    // connect_handler().
    const id = e.id;
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(id.peerAddr));
    if (!verifyParams(s)) {
      say(s, 'udaddy: failing connection request');
      id.reject();
      s.rejected++;
      // connect_error(), and cma_handler() returns the error: connect_events() stops here.
      connectsLeft--;
      break;
    }
    const n = new UdaddyNode(dev, nodes.length, c.messageCount, c.messageSize);
    nodes.push(n);
    n.postRecvs();
    n.id = id;
    id.accept(n.qp);
    n.connected = true;
    s.t0 ??= dev.clock.now();
    connectsLeft--;
  }
  // Requests udaddy never took from its event channel are refused when its IDs go away
  // (cm.c cm_destroy_id() in SIDR_REQ_RCVD: a SIDR_REP with IB_SIDR_REJECT).
  for (const e of queued.splice(0)) {
    if (e.type === 'CONNECT_REQUEST') {
      e.id.reject();
      s.rejected++;
    }
  }
}

/** The server's data: the client's datagrams, then a reply to each through the reply AH. */
async function serverTransfers(s: UdaddySession): Promise<void> {
  if (s.c.messageCount > 0) {
    say(s, 'receiving data transfers');
    await pollCqs(s, 'datagrams from the client');
    say(s, 'sending replies');
    for (const n of s.nodes) n.postSends(true);
    await pollCqs(s, 'the replies sent');
    say(s, 'data transfers complete');
  }
}

/** A run that gets here is udaddy's `ret = 0`: its closing lines and the figures. */
function reportUdaddy(s: UdaddySession): UdaddyResult {
  const { cfg, c, nodes } = s;
  say(s, 'test complete');
  say(s, 'return status 0');
  return {
    ok: s.problems.length === 0,
    test: 'udaddy',
    role: cfg.role,
    port: c.port,
    connections: c.connections,
    messageCount: c.messageCount,
    messageSize: c.messageSize,
    returnStatus: 0,
    connected: nodes.filter((n) => n.connected).length,
    rejected: s.rejected,
    nodes: nodes.map((n) => nodeResult(n, cfg.role === 'client' ? c.port : 0)),
    seconds: s.t0 === null ? 0 : (s.dev.clock.now() - s.t0) / 1e9,
    lines: s.lines,
    problems: s.problems,
  };
}

/** Runs one end of udaddy: plan, set up, resolve or accept, the datagrams, the report; an Ending prints udaddy's last lines first. */
export async function runUdaddy(dev: Device, cfg: UdaddyConfig): Promise<UdaddyResult> {
  const c = planUdaddy(dev, cfg);
  const s: UdaddySession = {
    dev,
    cfg,
    c,
    idle: cfg.idleWait ?? nextTurn,
    rcm: new RdmaCm(dev),
    nodes: [],
    queued: [],
    lines: [],
    problems: [],
    rejected: 0,
    t0: null,
  };
  try {
    if (cfg.role === 'client') {
      await resolveClient(s);
      await clientTransfers(s);
    } else {
      await acceptClients(s);
      await serverTransfers(s);
    }
  } catch (e) {
    if (e instanceof Ending) {
      say(s, 'test complete');
      say(s, `return status ${e.error.status}`);
    }
    close(s.rcm, s.nodes);
    throw e instanceof Ending ? e.error : e;
  }
  const result = reportUdaddy(s);
  close(s.rcm, s.nodes);
  return result;
}

function nodeResult(n: UdaddyNode, clientPeerPort: number): UdaddyNodeResult {
  const id: RdmaCmId | null = n.id;
  return {
    local: { addr: id?.localAddr ?? '', port: id?.localPort ?? 0, qpn: n.qp.qpNum, qkey: n.qp.attr.qkey },
    remote: { addr: id?.peerAddr ?? '', port: id?.peerPort ?? clientPeerPort, qpn: n.remoteQpn, qkey: n.remoteQkey },
    sent: n.sent,
    received: n.received,
    receivedBytes: n.receivedBytes,
  };
}

/** destroy_nodes() and the listener: IDs forgotten, QPs given back, QP 1 given back. */
function close(rcm: RdmaCm, nodes: readonly UdaddyNode[]): void {
  for (const n of nodes) {
    n.id?.destroy();
    n.close();
  }
  rcm.close();
}
