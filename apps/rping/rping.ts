/**
 * rping (librdmacm examples/rping.c) on a `Device`: an RC QP connected through the RDMA CM (TCP
 * port space, port 7174 by default, responder resources and initiator depth 1, retry and RNR
 * retry 7 as rping_init_conn_param()), then rping's loop, one 16-byte buffer advertisement
 * (rdma-info.ts) per step:
 *
 *   client: SEND its start buffer (address, R_Key, size)  → server: RDMA READ of it, then a SEND "go ahead"
 *   client: SEND its rdma buffer                          → server: RDMA WRITE of what it read (strlen + 1 bytes), then a SEND
 *   client: -V compares the two buffers, -v prints "ping data: …"
 *
 * COUNT times (0: forever), then the client disconnects (DREQ). The server runs, as rping's
 * does, until its client disconnects (rping_test_server() has no count) and prints
 * "server ping data: …" with -v after each READ. One receive (16 bytes) is kept posted,
 * reposted after each arrives (rping_cq_event_handler()).
 */
import type { Device } from '../../stack/device';
import { QpType, QpState } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import { RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { RDMA_INFO_LEN, decodeRdmaInfo, encodeRdmaInfo, type RdmaInfo } from './rdma-info';
import { RPING_MAX_BUFSIZE, RPING_MIN_BUFSIZE, cString, cStringBytes, fillPingData } from './ping-data';
import { RpingError, RpingErrorCode } from './rping-error';
import { type NoProgressBound, noProgressBound } from '../host/no-progress-bound';
import { type CmTiming, cmConnectTiming, cmStepBound } from '../host/cm-step-bound';
import { progressMark } from '../perftest/completion-waits';

/** rping's default port (cb->port = htobe16(7174)). */
export const RPING_DEFAULT_PORT = 7174;
/** rping's default -S. */
export const RPING_DEFAULT_SIZE = 64;
/** RPING_SQ_DEPTH. */
const SQ_DEPTH = 16;

export interface RpingConfig {
  role: 'client' | 'server';
  /** Client: the server's IPv4 address. Server: the address to listen on (0.0.0.0: any). */
  addr: string;
  port?: number;
  /** Pings (client; 0 = until interrupted, as rping). */
  count?: number;
  /** Ping data size (-S, 26..65535, default 64). */
  size?: number;
  /** -V: the client compares what came back with what it sent. */
  validate?: boolean;
  /** -v: each ping's data, as rping prints it ("ping data: …" / "server ping data: …"). */
  onPingData?: (line: string) => void;
  /** Give up when nothing happens for this long (default: the CM steps a bound from the CM's timers, the pings one from the QP's; a server waits `listenTimeoutMs` for its client). */
  stepTimeoutMs?: number;
  /** The CM's response timeout and retries (librdmacm's 20 and 15 by default): they bound the connection and disconnect steps. */
  cm?: CmTiming;
  listenTimeoutMs?: number;
  /** Learns the peer's MAC before the CM talks to it (HostDevice.ensureNeighbor). */
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  /** How the loop waits while nothing happens (HostDevice.idleWait). */
  idleWait?: () => Promise<void>;
  onListening?: ((port: number) => void) | undefined;
  /**
   * The REQ's retry count and RNR retry count (the client; rping_init_conn_param()'s 7 and 7 by
   * default), and the REP's RNR retry count (the server): the peer's CM gives its QP those
   * (the kernel's cm_req_handler() and cm_rep_handler(), cm_init_qp_rts_attr()).
   */
  retryCount?: number;
  rnrRetryCount?: number;
  /** Called once the QP is connected (RTS), before the first ping: `roce probe` arms its events there. */
  onConnected?: (qp: QueuePair) => void;
  /** Every work completion the pings take, as it is taken. */
  onCompletion?: (wc: WorkCompletion) => void;
}

export interface RpingResult {
  ok: boolean;
  test: 'rping';
  role: 'client' | 'server';
  size: number;
  /** Pings completed (a server: READ and WRITE both done). */
  pings: number;
  /** From the connection's establishment to the end. */
  seconds: number;
  local: { addr: string; port: number; qpn: number };
  remote: { addr: string; port: number; qpn: number };
  /** -V (client): pings compared and found equal. */
  verified: number;
  /** -v: the lines printed. */
  pingData: string[];
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

function checkConfig(cfg: RpingConfig): { size: number; count: number; port: number } {
  const size = cfg.size ?? RPING_DEFAULT_SIZE;
  const count = cfg.count ?? 0;
  const port = cfg.port ?? RPING_DEFAULT_PORT;
  // rping.c main(): "Invalid size %d (valid range is %zd to %d)".
  if (!Number.isInteger(size) || size < RPING_MIN_BUFSIZE || size > RPING_MAX_BUFSIZE)
    throw new RpingError(RpingErrorCode.CONFIG, `invalid size ${size} (valid range is ${RPING_MIN_BUFSIZE} to ${RPING_MAX_BUFSIZE})`);
  if (!Number.isInteger(count) || count < 0) throw new RpingError(RpingErrorCode.CONFIG, `invalid count ${count}`);
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw new RpingError(RpingErrorCode.CONFIG, `invalid port ${port}`);
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(cfg.addr)) throw new RpingError(RpingErrorCode.CONFIG, `-a ${cfg.addr}: only IPv4 addresses are supported`);
  return { size, count, port };
}

/** The resources of one rping connection (rping_setup_qp() and rping_setup_buffers()). */
class Conn {
  readonly pd;
  readonly cq;
  readonly qp: QueuePair;
  readonly recvMr: MemoryRegion;
  readonly sendMr: MemoryRegion;
  readonly rdmaMr: MemoryRegion;
  readonly startMr: MemoryRegion | null;
  id: RdmaCmId | null = null;
  readonly events: RdmaCmEvent[] = [];
  disconnected = false;

  constructor(
    readonly dev: Device,
    size: number,
    client: boolean,
  ) {
    this.pd = dev.allocPd();
    this.cq = dev.createCq(SQ_DEPTH * 2);
    this.qp = dev.createQp(this.pd, {
      qpType: QpType.RC,
      sendCq: this.cq,
      recvCq: this.cq,
      cap: { maxSendWr: SQ_DEPTH, maxRecvWr: 2, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.recvMr = dev.regMr(this.pd, new Uint8Array(RDMA_INFO_LEN), Access.LOCAL_WRITE);
    this.sendMr = dev.regMr(this.pd, new Uint8Array(RDMA_INFO_LEN), 0);
    const remote = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE;
    this.rdmaMr = dev.regMr(this.pd, new Uint8Array(size), remote);
    this.startMr = client ? dev.regMr(this.pd, new Uint8Array(size), remote) : null;
  }

  onEvent = (e: RdmaCmEvent): void => {
    this.events.push(e);
    if (e.type === 'DISCONNECTED') this.disconnected = true;
  };

  postRecv(): void {
    this.qp.postRecv({ wrId: 1, sgList: [this.recvMr.sge(0, RDMA_INFO_LEN)] });
  }

  /** A SEND of the 16-byte advertisement `info` (all zero: the server's "go ahead"). */
  send(info: RdmaInfo | null): void {
    if (info === null) this.sendMr.buffer.fill(0);
    else encodeRdmaInfo(info, this.sendMr.buffer);
    this.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [this.sendMr.sge(0, RDMA_INFO_LEN)], sendFlags: SendFlags.SIGNALED });
  }

  advertise(mr: MemoryRegion): RdmaInfo {
    return { buf: mr.addr(0), rkey: mr.rkey, size: mr.buffer.length };
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

/** What a wait returned: a completion of the kind asked for, or the peer's disconnect. */
type Waited = { wc: WorkCompletion } | 'disconnected';

/** What the configuration asks for, checked, and the bounds of the CM's steps and of the server's wait. */
interface RpingPlan {
  size: number;
  count: number;
  port: number;
  /** The RDMA CM's steps (connection, DREP): bounded by the CM's own timers (apps/host/cm-step-bound.ts) unless a step timeout is given. */
  cmBound: NoProgressBound;
  listenMs: number;
}

function planRping(cfg: RpingConfig): RpingPlan {
  const { size, count, port } = checkConfig(cfg);
  const cmBound: NoProgressBound = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : cmStepBound(cfg.cm);
  const listenMs = cfg.listenTimeoutMs ?? 300_000;
  return { size, count, port, cmBound, listenMs };
}

/** One run of rping: its configuration, the CM and connection, and what the pings found so far. */
interface RpingSession {
  dev: Device;
  cfg: RpingConfig;
  plan: RpingPlan;
  idle: () => Promise<void>;
  rcm: RdmaCm;
  conn: Conn;
  pingData: string[];
  problems: string[];
  pings: number;
  verified: number;
  /** From the connection on (a server's wait for its client is not counted). */
  t0: number;
}

/** A -v line: kept for the result and handed to the caller as it comes. */
function show(s: RpingSession, line: string): void {
  s.pingData.push(line);
  s.cfg.onPingData?.(line);
}

// Once connected, a wait's no-progress bound follows from the QP's timers as the CM set them
// (apps/host/no-progress-bound.ts), unless --timeout gave one; the clock restarts whenever the
// QP's transport moves (a response, a request taken).
function dataBound(s: RpingSession): NoProgressBound {
  if (s.cfg.stepTimeoutMs !== undefined) return { ms: s.cfg.stepTimeoutMs, why: 'the step timeout given' };
  const a = s.conn.qp.attr;
  return noProgressBound({ timeout: a.timeout, retryCnt: a.retryCnt, rnrRetry: a.rnrRetry, minRnrTimer: a.minRnrTimer });
}

/** Waits for a completion for which `want` holds (others, SEND completions, are taken and dropped). */
async function waitFor(s: RpingSession, what: string, want: (wc: WorkCompletion) => boolean): Promise<Waited> {
  const { conn } = s;
  const bound = dataBound(s);
  let deadline = Date.now() + bound.ms;
  let mark = progressMark(conn.qp);
  for (;;) {
    for (const wc of conn.cq.poll(4)) {
      s.cfg.onCompletion?.(wc);
      if (wc.status !== WcStatus.SUCCESS) {
        if (conn.disconnected && wc.status === WcStatus.WR_FLUSH_ERR) return 'disconnected';
        const qpErr =
          conn.qp.state === QpState.ERR && conn.qp.errorReason !== ''
            ? `; QP 0x${conn.qp.qpNum.toString(16)} is in the error state: ${conn.qp.errorReason}`
            : '';
        throw new RpingError(
          RpingErrorCode.COMPLETION,
          `cq completion failed status ${wc.status} (${WC_STATUS_NAMES[wc.status] ?? 'unknown'}${wc.vendorErr !== '' ? `: ${wc.vendorErr}` : ''}) while waiting for ${what}${qpErr}`,
        );
      }
      if (wc.opcode === WcOpcode.RECV) {
        // server_recv() / client_recv(): anything but 16 bytes is "bogus data".
        if (wc.byteLen !== RDMA_INFO_LEN) throw new RpingError(RpingErrorCode.PROTOCOL, `received bogus data, size ${wc.byteLen}`);
        // Reposted at once, as rping does; the 16 bytes stay until the peer's next SEND, which
        // only comes after this side has answered (the caller decodes them before it does).
        conn.postRecv();
      }
      if (want(wc)) return { wc };
    }
    if (conn.disconnected) return 'disconnected';
    const bad = conn.events.find((e) => e.type === 'REJECTED' || e.type === 'UNREACHABLE' || e.type === 'CONNECT_ERROR');
    if (bad !== undefined) throw cmFailure(bad);
    const m = progressMark(conn.qp);
    if (m !== mark) {
      mark = m;
      deadline = Date.now() + bound.ms;
    }
    if (Date.now() > deadline) throw new RpingError(RpingErrorCode.TIMEOUT, `no ${what}: no progress within ${bound.ms} ms (${bound.why})`);
    await s.idle();
  }
}

const isRecv = (wc: WorkCompletion): boolean => wc.opcode === WcOpcode.RECV;

/** The client connects through the RDMA CM (rping_connect_client()); its time counts from the connection. */
async function connectClient(s: RpingSession): Promise<void> {
  const { cfg, conn } = s;
  const peerGid = v4Gid(cfg.addr);
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(peerGid);
  conn.id = s.rcm.connect(
    {
      dst: cfg.addr,
      port: s.plan.port,
      qp: conn.qp,
      param: { responderResources: 1, initiatorDepth: 1, retryCount: cfg.retryCount ?? 7, rnrRetryCount: cfg.rnrRetryCount ?? 7 },
      ...cmConnectTiming(cfg.cm),
    },
    conn.onEvent,
  );
  if (conn.qp.state === QpState.INIT) conn.postRecv();
  await waitForEvent(conn, 'ESTABLISHED', 'the connection', s.plan.cmBound, s.idle);
  cfg.onConnected?.(conn.qp);
  s.t0 = s.dev.clock.now();
}

/** rping_test_client(): COUNT pings (0: forever), each checked with -V and shown with -v. */
async function pingAsClient(s: RpingSession): Promise<void> {
  const { cfg, conn } = s;
  const start = conn.startMr as MemoryRegion;
  for (let ping = 0; s.plan.count === 0 || ping < s.plan.count; ping++) {
    fillPingData(start.buffer, ping);
    conn.send(conn.advertise(start));
    if ((await waitFor(s, 'the server\'s "go ahead" after its RDMA READ', isRecv)) === 'disconnected') throw disconnectedEarly(ping);
    conn.send(conn.advertise(conn.rdmaMr));
    if ((await waitFor(s, 'the server\'s "go ahead" after its RDMA WRITE', isRecv)) === 'disconnected') throw disconnectedEarly(ping);
    if (cfg.validate === true) {
      const a = start.buffer;
      const b = conn.rdmaMr.buffer;
      const at = a.findIndex((v, i) => v !== b[i]);
      if (at >= 0)
        throw new RpingError(
          RpingErrorCode.MISMATCH,
          `data mismatch! (ping ${ping}, byte ${at}: 0x${(b[at] as number).toString(16)}, sent 0x${(a[at] as number).toString(16)})`,
        );
      s.verified++;
    }
    if (cfg.onPingData !== undefined) show(s, `ping data: ${cString(conn.rdmaMr.buffer)}`);
    s.pings++;
  }
}

/** The client disconnects (DREQ) and waits for the DREP. */
async function disconnectClient(s: RpingSession): Promise<void> {
  (s.conn.id as RdmaCmId).disconnect();
  await waitForEvent(s.conn, 'DISCONNECTED', 'the DREP', s.plan.cmBound, s.idle);
}

/** The server listens, accepts its one client, and keeps a receive posted; its time counts from the accept. */
async function acceptClient(s: RpingSession): Promise<void> {
  const { cfg, conn } = s;
  const { port, listenMs } = s.plan;
  let pending: RdmaCmId | null = null;
  const listener = s.rcm.listen(port, (e) => {
    if (e.type === 'CONNECT_REQUEST') {
      // rping's server serves one client; a second request while the first runs is refused.
      if (pending !== null || conn.id !== null) e.id.reject();
      else pending = e.id;
      return;
    }
    conn.onEvent(e);
  });
  cfg.onListening?.(port);
  const deadline = Date.now() + listenMs;
  while (pending === null) {
    if (Date.now() > deadline) throw new RpingError(RpingErrorCode.TIMEOUT, `no client connected within ${listenMs} ms`);
    await s.idle();
  }
  const id: RdmaCmId = pending;
  if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(id.peerAddr));
  conn.id = id;
  id.accept(conn.qp, { responderResources: 1, initiatorDepth: 1, ...(cfg.rnrRetryCount !== undefined ? { rnrRetryCount: cfg.rnrRetryCount } : {}) });
  cfg.onConnected?.(conn.qp);
  conn.postRecv();
  s.t0 = s.dev.clock.now();
  listener.close();
}

/** rping_test_server(): READ the client's start buffer, WRITE it back into its rdma buffer, until the client disconnects. */
async function serveClient(s: RpingSession): Promise<void> {
  const { cfg, conn } = s;
  const rdma = conn.rdmaMr;
  for (;;) {
    const adv = await waitFor(s, "the client's start buffer advertisement", isRecv);
    if (adv === 'disconnected') break;
    const src = decodeRdmaInfo(conn.recvMr.buffer);
    if (src.size > rdma.buffer.length)
      throw new RpingError(RpingErrorCode.PROTOCOL, `the client advertises ${src.size} bytes, more than this server's -S ${rdma.buffer.length}`);
    conn.qp.postSend({
      wrId: 3,
      opcode: WrOpcode.RDMA_READ,
      sgList: [rdma.sge(0, src.size)],
      rdma: { remoteAddr: src.buf, rkey: src.rkey },
      sendFlags: SendFlags.SIGNALED,
    });
    if ((await waitFor(s, 'the RDMA READ', (wc) => wc.opcode === WcOpcode.RDMA_READ)) === 'disconnected') throw disconnectedEarly(s.pings);
    if (cfg.onPingData !== undefined) show(s, `server ping data: ${cString(rdma.buffer)}`);
    conn.send(null);
    const sink = await waitFor(s, "the client's rdma buffer advertisement", isRecv);
    if (sink === 'disconnected') throw disconnectedEarly(s.pings);
    const dst = decodeRdmaInfo(conn.recvMr.buffer);
    conn.qp.postSend({
      wrId: 4,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [rdma.sge(0, cStringBytes(rdma.buffer))],
      rdma: { remoteAddr: dst.buf, rkey: dst.rkey },
      sendFlags: SendFlags.SIGNALED,
    });
    if ((await waitFor(s, 'the RDMA WRITE', (wc) => wc.opcode === WcOpcode.RDMA_WRITE)) === 'disconnected') throw disconnectedEarly(s.pings);
    conn.send(null);
    s.pings++;
  }
  // rping_disconnect(): the DREP went out when the DREQ came.
}

function reportRping(s: RpingSession): RpingResult {
  const { conn } = s;
  const id = conn.id as RdmaCmId;
  return {
    ok: s.problems.length === 0,
    test: 'rping',
    role: s.cfg.role,
    size: s.plan.size,
    pings: s.pings,
    seconds: (s.dev.clock.now() - s.t0) / 1e9,
    local: { addr: id.localAddr, port: id.localPort, qpn: conn.qp.qpNum },
    remote: { addr: id.peerAddr, port: id.peerPort, qpn: conn.qp.attr.destQpNum },
    verified: s.verified,
    pingData: s.pingData,
    problems: s.problems,
  };
}

/** Runs one end of rping: plan, set up (rping_setup_qp() and rping_setup_buffers()), connect, the pings, the report. */
export async function runRping(dev: Device, cfg: RpingConfig): Promise<RpingResult> {
  const plan = planRping(cfg);
  const idle = cfg.idleWait ?? nextTurn;
  const client = cfg.role === 'client';
  const rcm = new RdmaCm(dev);
  const conn = new Conn(dev, plan.size, client);
  const s: RpingSession = { dev, cfg, plan, idle, rcm, conn, pingData: [], problems: [], pings: 0, verified: 0, t0: dev.clock.now() };
  try {
    if (client) {
      await connectClient(s);
      await pingAsClient(s);
      await disconnectClient(s);
    } else {
      await acceptClient(s);
      await serveClient(s);
    }
    return reportRping(s);
  } finally {
    // Let the last DREP or ACK leave, then give QP 1 back.
    conn.id?.destroy();
    rcm.close();
    conn.close();
  }
}

function disconnectedEarly(ping: number): RpingError {
  return new RpingError(RpingErrorCode.PROTOCOL, `the peer disconnected in the middle of ping ${ping}`);
}

function cmFailure(e: RdmaCmEvent): RpingError {
  // rping: "cma event RDMA_CM_EVENT_REJECTED, error %d".
  if (e.type === 'REJECTED') return new RpingError(RpingErrorCode.REJECTED, `cma event RDMA_CM_EVENT_REJECTED: REJ reason ${e.reason} (${e.reasonText})`);
  if (e.type === 'UNREACHABLE') return new RpingError(RpingErrorCode.UNREACHABLE, `cma event RDMA_CM_EVENT_UNREACHABLE: ${e.why}`);
  if (e.type === 'CONNECT_ERROR') return new RpingError(RpingErrorCode.UNREACHABLE, `cma event RDMA_CM_EVENT_CONNECT_ERROR: ${e.why}`);
  return new RpingError(RpingErrorCode.PROTOCOL, `unexpected cma event ${e.type}`);
}

async function waitForEvent(conn: Conn, type: 'ESTABLISHED' | 'DISCONNECTED', what: string, bound: NoProgressBound, idle: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + bound.ms;
  for (;;) {
    if (conn.events.some((e) => e.type === type)) return;
    const bad = conn.events.find((e) => e.type === 'REJECTED' || e.type === 'UNREACHABLE' || e.type === 'CONNECT_ERROR');
    if (bad !== undefined) throw cmFailure(bad);
    // Completions taken meanwhile (SENDs, flushes after the disconnect) are not waited for.
    if (type === 'DISCONNECTED') conn.cq.poll(16);
    if (Date.now() > deadline)
      throw new RpingError(type === 'ESTABLISHED' ? RpingErrorCode.UNREACHABLE : RpingErrorCode.TIMEOUT, `no ${what} within ${bound.ms} ms (${bound.why})`);
    await idle();
  }
}
