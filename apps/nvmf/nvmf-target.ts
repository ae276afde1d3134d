/**
 * `roce nvmf target`: an NVMe over Fabrics target on a `Device` (the model is Linux nvmet-rdma): an
 * RDMA CM listener on port 4420 that checks each REQ's NVMe private data (record format, queue ID,
 * host send and receive queue sizes; a REJ carries the NVMe-oF RDMA status), a queue per accepted
 * connection (target-queue.ts), controllers made by the admin queues' Connects, the discovery
 * subsystem and one NVM subsystem with a RAM namespace.
 *
 * A host's association ends when its admin queue goes (its I/O queues are disconnected then), when
 * a queue fails (the QP's retries ran out: the host is gone), or when its keep-alive timeout passes
 * with no command (KATO, NVMe Base 2.0 "Keep Alive Timer"; nvmet adds a grace of its own, as here).
 * The run ends after `sessions` associations (0: never), when `stop()` says so, or when no host
 * connects within `listenTimeoutMs`.
 */
import type { Device } from '../../stack/device';
import { RdmaCm, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { NVME_RDMA_CM_FMT_1_0, type NvmeCmReq, emitNvmeCmRej, emitNvmeCmRep, parseNvmeCmReq } from '../../ulp/nvme-rdma/cm-private-data';
import { MAX_QUEUE_SIZE, type Controller, Subsystem, type SubsystemConfig } from './controller';
import { RamNamespace } from './ram-namespace';
import { TargetQueue } from './target-queue';
import { NvmfError, NvmfErrorCode } from './nvmf-error';

/** The NVMe-oF port (IANA "nvme-rdma" 4420). */
export const NVMF_PORT = 4420;
export const DEFAULT_SUBNQN = 'nqn.2024-01.io.roce-ts:ram';
/** The admin queue's largest depth (nvme.h NVME_AQ_DEPTH). */
const AQ_DEPTH = 32;
/** Added to the host's KATO before its controller is dropped (nvmet's keep-alive grace). */
const KATO_GRACE_MS = 5000;

/** NVMe-oF RDMA CM REJ statuses (nvme-rdma.h enum nvme_rdma_cm_status). */
const CmStatus = { INVALID_LEN: 0x01, INVALID_RECFMT: 0x02, INVALID_QID: 0x03, INVALID_HSQSIZE: 0x04, INVALID_HRQSIZE: 0x05 } as const;

export interface NvmfTargetConfig {
  /** The address the discovery log names (and that the target listens on). */
  addr: string;
  port?: number;
  /** The namespace's size in bytes (a multiple of 512). */
  namespaceBytes: number;
  subnqn?: string;
  maxIoQueues?: number;
  /** Host associations to serve before ending (0: until stopped). */
  sessions?: number;
  /** End when no host has connected for this long (default: never). */
  listenTimeoutMs?: number;
  /** Added to a host's KATO before its controller is dropped (default 5000 ms, as nvmet's grace). */
  keepAliveGraceMs?: number;
  /** Polled by the loop: true ends the run cleanly (the CLI sets it on SIGINT). */
  stop?: () => boolean;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
  onListening?: ((port: number) => void) | undefined;
  /** A line for each association's start and end, and each refused request. */
  onLine?: (line: string) => void;
}

export interface NvmfAssociation {
  cntlid: number;
  hostnqn: string;
  discovery: boolean;
  ioQueues: number;
  commands: number;
  failedCommands: number;
  invalidations: number;
  /** How it ended: "disconnect", "keep-alive timeout", or the failed queue's reason. */
  ended: string;
}

export interface NvmfTargetResult {
  ok: boolean;
  test: 'nvmf-target';
  subnqn: string;
  namespaceBytes: number;
  port: number;
  associations: NvmfAssociation[];
  /** CM REQs refused, with the NVMe-oF status. */
  rejected: { qid: number; status: number }[];
  malformed: number;
  /** Why the run ended. */
  ended: string;
  problems: string[];
}

function v4Gid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  ip.split('.').forEach((p, i) => (g[12 + i] = Number(p)));
  return g;
}

/** Checks a CM REQ's NVMe private data (nvmet_rdma_parse_cm_connect_req()): the REJ status, or the queue's ID and depth. */
export function checkCmReq(pd: Uint8Array, maxIoQueues: number): { status: number } | { qid: number; size: number } {
  let req: NvmeCmReq;
  try {
    req = parseNvmeCmReq(new DataView(pd.buffer, pd.byteOffset, pd.byteLength), 0, pd.byteLength);
  } catch {
    return { status: CmStatus.INVALID_LEN };
  }
  if (req.recfmt !== NVME_RDMA_CM_FMT_1_0) return { status: CmStatus.INVALID_RECFMT };
  if (req.qid > maxIoQueues) return { status: CmStatus.INVALID_QID };
  const size = req.hsqsize + 1;
  if (req.hsqsize === 0 || size > (req.qid === 0 ? AQ_DEPTH : MAX_QUEUE_SIZE)) return { status: CmStatus.INVALID_HSQSIZE };
  if (req.hrqsize === 0 || req.hrqsize > MAX_QUEUE_SIZE) return { status: CmStatus.INVALID_HRQSIZE };
  return { qid: req.qid, size };
}

export async function runNvmfTarget(dev: Device, cfg: NvmfTargetConfig): Promise<NvmfTargetResult> {
  const port = cfg.port ?? NVMF_PORT;
  const subnqn = cfg.subnqn ?? DEFAULT_SUBNQN;
  const maxIoQueues = cfg.maxIoQueues ?? 4;
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw new NvmfError(NvmfErrorCode.CONFIG, `invalid port ${port}`);
  if (!Number.isInteger(maxIoQueues) || maxIoQueues < 1 || maxIoQueues > 64)
    throw new NvmfError(NvmfErrorCode.CONFIG, `I/O queues: 1 to 64, not ${maxIoQueues}`);
  if (new TextEncoder().encode(subnqn).length > 223 || !subnqn.startsWith('nqn.'))
    throw new NvmfError(NvmfErrorCode.CONFIG, `a subsystem NQN starts with "nqn." and has at most 223 bytes: ${subnqn}`);
  const config: SubsystemConfig = { nqn: subnqn, serial: 'roce-ts-ram', model: 'roce-ts RAM namespace', maxIoQueues, traddr: cfg.addr, trsvcid: String(port) };
  const sub = new Subsystem(config, new RamNamespace(cfg.namespaceBytes));
  const idle = cfg.idleWait ?? nextTurn;
  const rcm = new RdmaCm(dev);
  const pending: { id: RdmaCmId; pd: Uint8Array }[] = [];
  const queues: TargetQueue[] = [];
  const result: NvmfTargetResult = {
    ok: true,
    test: 'nvmf-target',
    subnqn,
    namespaceBytes: cfg.namespaceBytes,
    port,
    associations: [],
    rejected: [],
    malformed: 0,
    ended: '',
    problems: [],
  };
  const say = (line: string): void => cfg.onLine?.(line);
  const listener = rcm.listen(port, (e) => {
    if (e.type === 'CONNECT_REQUEST') pending.push({ id: e.id, pd: e.privateData });
  });
  cfg.onListening?.(port);
  let lastActivity = Date.now();
  const dropped = new Map<Controller, string>();

  const accept = async (p: { id: RdmaCmId; pd: Uint8Array }): Promise<void> => {
    const checked = checkCmReq(p.pd, maxIoQueues);
    if ('status' in checked) {
      result.rejected.push({ qid: p.pd.length >= 4 ? new DataView(p.pd.buffer, p.pd.byteOffset).getUint16(2, true) : -1, status: checked.status });
      say(`refused a connection from ${p.id.peerAddr}: NVMe-oF RDMA status ${checked.status}`);
      p.id.reject(emitNvmeCmRej({ recfmt: NVME_RDMA_CM_FMT_1_0, status: checked.status }));
      return;
    }
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(p.id.peerAddr));
    const q = new TargetQueue(dev, sub, checked.qid, checked.size, Date.now);
    q.id = p.id;
    p.id.handler = q.onEvent;
    queues.push(q);
    // crqsize: the receives this queue keeps posted (nvmet_rdma's recv_queue_size); posted once accept() has the QP out of RESET, before any SEND can arrive.
    p.id.accept(q.qp, { privateData: emitNvmeCmRep({ recfmt: NVME_RDMA_CM_FMT_1_0, crqsize: checked.size }), responderResources: 1, initiatorDepth: 1 });
    q.postReceives();
  };

  const closeQueue = (q: TargetQueue): void => {
    const c = q.ctx.controller;
    result.malformed += q.malformed;
    if (c !== null) {
      const a = result.associations.find((x) => x.cntlid === c.cntlid && x.ended === '');
      if (a !== undefined) {
        a.commands += q.commands;
        a.failedCommands += q.failedCommands;
        a.invalidations += q.invalidations;
        a.ioQueues = Math.max(a.ioQueues, q.ctx.qid);
      }
      if (q.ctx.qid === 0 || q.failure !== null) {
        const why = dropped.get(c) ?? (q.failure !== null ? q.failure : 'disconnect');
        dropped.set(c, why);
        // The association ends with its admin queue: its I/O queues are disconnected too.
        for (const o of queues) if (o !== q && o.ctx.controller === c && !o.disconnected) o.id?.disconnect();
      }
    }
    if (q.failure !== null && !q.disconnected) q.id?.disconnect();
    q.id?.destroy();
    q.close();
    queues.splice(queues.indexOf(q), 1);
    if (c !== null && !queues.some((o) => o.ctx.controller === c)) {
      sub.release(c);
      const a = result.associations.find((x) => x.cntlid === c.cntlid && x.ended === '');
      if (a !== undefined) {
        a.ended = dropped.get(c) ?? 'disconnect';
        say(`controller ${c.cntlid} (${c.hostnqn}${c.discovery ? ', discovery' : ''}) ended: ${a.ended}; ${a.commands} commands`);
      }
      dropped.delete(c);
    }
  };

  try {
    for (;;) {
      while (pending.length > 0) await accept(pending.shift() as { id: RdmaCmId; pd: Uint8Array });
      for (const q of [...queues]) {
        const had = q.ctx.controller;
        q.step();
        const c = q.ctx.controller;
        if (had === null && c !== null && q.ctx.qid === 0) {
          result.associations.push({
            cntlid: c.cntlid,
            hostnqn: c.hostnqn,
            discovery: c.discovery,
            ioQueues: 0,
            commands: 0,
            failedCommands: 0,
            invalidations: 0,
            ended: '',
          });
          say(`controller ${c.cntlid} for ${c.hostnqn}${c.discovery ? ' (discovery)' : ` on ${subnqn}`}`);
        }
        if (q.disconnected || q.failure !== null) {
          lastActivity = Date.now();
          closeQueue(q);
        }
      }
      // KATO: a controller with no command for its keep-alive timeout (and the grace) is dropped.
      const now = Date.now();
      const grace = cfg.keepAliveGraceMs ?? KATO_GRACE_MS;
      for (const c of sub.controllers.values()) {
        if (c.kato > 0 && now - c.lastCommandMs > c.kato + grace && !dropped.has(c)) {
          dropped.set(c, `keep-alive timeout (no command for ${c.kato} ms and ${grace} ms of grace)`);
          for (const q of queues) if (q.ctx.controller === c) q.id?.disconnect();
          for (const q of queues) if (q.ctx.controller === c) q.disconnected = true;
        }
      }
      if (queues.length > 0) lastActivity = now;
      const finished = result.associations.filter((a) => a.ended !== '').length;
      if ((cfg.sessions ?? 0) > 0 && finished >= (cfg.sessions ?? 0) && queues.length === 0) {
        result.ended = `served ${finished} association${finished === 1 ? '' : 's'}`;
        break;
      }
      if (cfg.stop?.() === true) {
        result.ended = 'stopped';
        break;
      }
      if (cfg.listenTimeoutMs !== undefined && queues.length === 0 && now - lastActivity > cfg.listenTimeoutMs) {
        result.ended = `no host within ${cfg.listenTimeoutMs} ms`;
        if (result.associations.length === 0) {
          result.ok = false;
          result.problems.push(`no host connected within ${cfg.listenTimeoutMs} ms`);
        }
        break;
      }
      await idle();
    }
    for (const a of result.associations) if (a.ended !== 'disconnect' && a.ended !== '') result.problems.push(`controller ${a.cntlid}: ${a.ended}`);
    result.ok = result.problems.length === 0;
    return result;
  } finally {
    for (const q of [...queues]) {
      if (!q.disconnected) q.id?.disconnect();
      closeQueue(q);
    }
    listener.close();
    rcm.close();
  }
}
