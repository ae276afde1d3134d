/**
 * `roce nvmf host`: an NVMe over Fabrics host on a `Device`, in the order Linux's nvme-rdma host
 * brings a controller up (drivers/nvme/host/rdma.c, core.c): the admin queue connected through the
 * RDMA CM, Connect (dynamic controller), Property Get CAP, Property Set CC.EN, Property Get CSTS
 * until RDY (within CAP.TO), Identify Controller, Set Features Number of Queues, the active
 * namespace list and Identify Namespace, Keep Alive; then one I/O queue and its Connect; a pattern
 * written (in the capsule when the controller's IOCCSZ and SGLS allow, the rest with keyed SGLs from
 * a registered region), read back with keyed SGLs (the last Read into a fast-registered region whose
 * key the controller invalidates with its response, sub type 0xF), compared, Flush; a shutdown
 * (CC.SHN, CSTS.SHST) and the DREQs.
 */
import type { Device } from '../../stack/device';
import { RdmaCm } from '../../stack/cm/rdma-cm';
import { Access } from '../../stack/access-flags';
import { WrOpcode } from '../../stack/work-request-codes';
import { nextTurn } from '../host/clock-pump';
import { type CmTiming, cmStepBound } from '../host/cm-step-bound';
import type { NoProgressBound } from '../host/no-progress-bound';
import { SQE_FLAGS_SGL_METABUF, dword10, rwDwords } from '../../ulp/nvme-rdma/sqe';
import { type SglDescriptor, inCapsuleSgl, keyedSgl } from '../../ulp/nvme-rdma/sgl';
import { emitConnectData, type FabricsCommand } from '../../ulp/nvme-rdma/fabrics-command';
import { FABRICS_OPCODE, FabricsType, AdminOpcode, IoOpcode } from '../../ulp/nvme-rdma/opcode-names';
import { statusName, statusParts } from '../../ulp/nvme-rdma/cqe';
import { HostQueue, type Response } from './host-queue';
import { NvmfError, NvmfErrorCode } from './nvmf-error';
import { NVMF_PORT, DEFAULT_SUBNQN } from './nvmf-target';

export interface NvmfHostConfig {
  addr: string;
  port?: number;
  subnqn?: string;
  hostnqn?: string;
  /** Blocks to write and read back (default 16). */
  blocks?: number;
  /** First LBA (default 0). */
  slba?: bigint;
  /** The last Read asks the controller to invalidate its key (default true). */
  invalidate?: boolean;
  /** Write in the capsule when the controller allows (default true). */
  inCapsule?: boolean;
  /** Keep-alive timeout given in the Connect, ms (default 5000, as Linux's NVME_DEFAULT_KATO). */
  kato?: number;
  stepTimeoutMs?: number;
  cm?: CmTiming;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
  /** Each step, as it completes. */
  onLine?: (line: string) => void;
}

export interface NvmfHostResult {
  ok: boolean;
  test: 'nvmf-host';
  subnqn: string;
  cntlid: number;
  controller: { model: string; serial: string; mdtsBytes: number; ioccszBytes: number; inCapsuleOffered: boolean; keyedSgl: boolean };
  namespace: { nsid: number; blocks: string; lbaSize: number };
  written: { bytes: number; inCapsule: number; keyed: number; commands: number };
  read: { bytes: number; commands: number; invalidatedKey: string | null };
  verified: boolean;
  flushed: boolean;
  /** Keep Alives sent on the KATO / 2 timer while the run went on (the one after Identify not counted). */
  keepAlives: number;
  lines: string[];
  problems: string[];
}

const ADMIN_DEPTH = 32;
const IO_DEPTH = 32;
const text = (b: Uint8Array, at: number, len: number): string => new TextDecoder().decode(b.subarray(at, at + len)).replace(/[\s\0]+$/, '');

function v4Gid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  ip.split('.').forEach((p, i) => (g[12 + i] = Number(p)));
  return g;
}

/** The pattern block `i` of the run holds: its LBA and offset, so that a misplaced block shows. */
export function patternBytes(slba: bigint, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = (Number((slba * 512n + BigInt(i)) % 251n) ^ (i >>> 9)) & 0xff;
  return out;
}

export async function runNvmfHost(dev: Device, cfg: NvmfHostConfig): Promise<NvmfHostResult> {
  const port = cfg.port ?? NVMF_PORT;
  const subnqn = cfg.subnqn ?? DEFAULT_SUBNQN;
  const hostnqn = cfg.hostnqn ?? 'nqn.2014-08.org.nvmexpress:uuid:6f1a0c2e-5c2b-4d57-9a10-726f63652d74';
  const blocks = cfg.blocks ?? 16;
  const slba = cfg.slba ?? 0n;
  if (!Number.isInteger(blocks) || blocks < 1 || blocks > 65536) throw new NvmfError(NvmfErrorCode.CONFIG, `blocks: 1 to 65536, not ${blocks}`);
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(cfg.addr)) throw new NvmfError(NvmfErrorCode.CONFIG, `${cfg.addr}: only IPv4 addresses are supported`);
  const pause = cfg.idleWait ?? nextTurn;
  // From the admin queue's Connect to the shutdown, a Keep Alive goes on the admin queue every
  // KATO / 2 (Linux nvme_keep_alive_work_period()), whatever queue the run waits on: a controller
  // drops an association that sends no command for KATO (NVMe base specification 2.0 §3.9.5), and
  // an I/O command held up by retransmissions is no command at the controller.
  const kato = cfg.kato ?? 5000;
  let keepAliveOn: HostQueue | null = null;
  let keepAliveDue = 0;
  const idle = async (): Promise<void> => {
    await pause();
    // The device's clock, as the stack's own timers: the controller's KATO runs in the same time as the QP's.
    const now = dev.clock.now() / 1e6;
    if (keepAliveOn === null || now < keepAliveDue) return;
    keepAliveDue = now + kato / 2;
    const before = keepAliveOn.keepAlivesSent;
    const answer = keepAliveOn.keepAlive(base(AdminOpcode.KEEP_ALIVE, 0, none));
    r.keepAlives += keepAliveOn.keepAlivesSent - before;
    if (answer !== null) expectOk(answer, 'Keep Alive');
  };
  const cmBound: NoProgressBound = cfg.stepTimeoutMs !== undefined ? { ms: cfg.stepTimeoutMs, why: 'the step timeout given' } : cmStepBound(cfg.cm);
  const lines: string[] = [];
  const say = (l: string): void => {
    lines.push(l);
    cfg.onLine?.(l);
  };
  const rcm = new RdmaCm(dev);
  const queues: HostQueue[] = [];
  const hostId = Uint8Array.from({ length: 16 }, (_, i) => (0x6f + i * 13) & 0xff);
  const r: NvmfHostResult = {
    ok: false,
    test: 'nvmf-host',
    subnqn,
    cntlid: 0,
    controller: { model: '', serial: '', mdtsBytes: 0, ioccszBytes: 0, inCapsuleOffered: false, keyedSgl: false },
    namespace: { nsid: 0, blocks: '0', lbaSize: 0 },
    written: { bytes: 0, inCapsule: 0, keyed: 0, commands: 0 },
    read: { bytes: 0, commands: 0, invalidatedKey: null },
    verified: false,
    flushed: false,
    keepAlives: 0,
    lines,
    problems: [],
  };
  const base = (opcode: number, nsid: number, sgl: SglDescriptor, cdw: Uint8Array = new Uint8Array(24)) => ({
    opcode,
    flags: SQE_FLAGS_SGL_METABUF,
    nsid,
    metadata: 0n,
    sgl,
    cdw10to15: cdw,
  });
  const none = keyedSgl(0n, 0, 0);
  const expectOk = (res: Response, what: string, connect = false): Response => {
    if (res.cqe.status >>> 1 !== 0) {
      const p = statusParts(res.cqe.status);
      throw new NvmfError(
        NvmfErrorCode.COMMAND,
        `${what}: ${statusName(res.cqe.status, connect)} (SCT ${p.sct} SC 0x${p.sc.toString(16).padStart(2, '0')}${p.dnr ? ', DNR' : ''})`,
      );
    }
    return res;
  };
  // A command's data goes in the capsule, or by a keyed SGL the controller reads (`keyed`).
  const fab = (q: HostQueue, f: FabricsCommand, data: Uint8Array | undefined, what: string, keyed = false): Promise<Response> => {
    let sgl = data === undefined ? none : inCapsuleSgl(data.length);
    if (data !== undefined && keyed) {
      const mr = q.register(data);
      sgl = keyedSgl(mr.addr(0), data.length, mr.rkey);
    }
    return q.submit(base(FABRICS_OPCODE, 0, sgl), f, keyed ? undefined : data, what).then((x) => expectOk(x, what, f.fctype === FabricsType.CONNECT));
  };
  const propGet = async (q: HostQueue, offset: number, eight: boolean, what: string): Promise<bigint> =>
    (await fab(q, { fctype: FabricsType.PROPERTY_GET, connect: null, property: { attrib: eight ? 1 : 0, offset, value: null } }, undefined, what)).cqe.result;
  const propSet = (q: HostQueue, offset: number, value: number, what: string): Promise<Response> =>
    fab(q, { fctype: FabricsType.PROPERTY_SET, connect: null, property: { attrib: 0, offset, value: BigInt(value) } }, undefined, what);
  /**
   * The Connect's 1024 bytes of data go in the capsule only on an I/O queue whose controller offers
   * that much in-capsule data (IOCCSZ); on the admin queue, whose capsules are 64 bytes (nvmet-rdma
   * posts receives of one SQE there), and otherwise, by a keyed SGL (Linux nvme_rdma_map_data():
   * inline only for an I/O queue).
   */
  const connectCmd = async (q: HostQueue, cntlid: number, kato: number, inCapsuleRoom = 0): Promise<number> => {
    const data = emitConnectData({ hostId, cntlid, subnqn, hostnqn });
    const res = await fab(
      q,
      { fctype: FabricsType.CONNECT, connect: { recfmt: 0, qid: q.qid, sqsize: q.o.size - 1, cattr: 0, kato }, property: null },
      data,
      `queue ${q.qid}'s Connect`,
      q.qid === 0 || data.length > inCapsuleRoom,
    );
    return Number(res.cqe.result & 0xffffn);
  };
  const open = async (qid: number, size: number, cntlid: number): Promise<HostQueue> => {
    const q = new HostQueue(dev, { dst: cfg.addr, port, qid, size, cntlid, cm: cfg.cm, stepTimeoutMs: cfg.stepTimeoutMs, idle, cmBound });
    queues.push(q);
    await q.connect(rcm);
    return q;
  };

  try {
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(v4Gid(cfg.addr));
    const admin = await open(0, ADMIN_DEPTH, 0xffff);
    const cntlid = await connectCmd(admin, 0xffff, kato);
    if (kato > 0) {
      keepAliveOn = admin;
      keepAliveDue = dev.clock.now() / 1e6 + kato / 2;
    }
    r.cntlid = cntlid;
    say(`admin queue connected: controller ${cntlid} of ${subnqn}`);
    const cap = await propGet(admin, 0x00, true, 'Property Get CAP');
    const toMs = Number((cap >> 24n) & 0xffn) * 500;
    const mqes = Number(cap & 0xffffn) + 1;
    await propSet(admin, 0x14, 0x460001, 'Property Set CC.EN');
    const readyBy = Date.now() + Math.max(toMs, 500);
    while ((Number(await propGet(admin, 0x1c, false, 'Property Get CSTS')) & 1) !== 1) {
      if (Date.now() > readyBy) throw new NvmfError(NvmfErrorCode.TIMEOUT, `CSTS.RDY not set within CAP.TO (${toMs} ms)`);
      await idle();
    }
    say(`controller enabled (CC.EN=1, CSTS.RDY=1; CAP.MQES+1 = ${mqes})`);

    const idBuf = new Uint8Array(4096);
    const idMr = admin.register(idBuf);
    const identify = async (cns: number, nsid: number, what: string): Promise<Uint8Array> => {
      idBuf.fill(0);
      expectOk(await admin.submit(base(AdminOpcode.IDENTIFY, nsid, keyedSgl(idMr.addr(0), 4096, idMr.rkey), dword10(cns)), null, undefined, what), what);
      return idBuf.slice();
    };
    const ctrl = await identify(1, 0, 'Identify Controller');
    const cv = new DataView(ctrl.buffer);
    const mdts = ctrl[77] as number;
    const mdtsBytes = mdts === 0 ? 1 << 20 : 4096 * 2 ** mdts;
    const ioccsz = cv.getUint32(1792, true) * 16;
    const sgls = cv.getUint32(536, true);
    r.controller = {
      model: text(ctrl, 24, 40),
      serial: text(ctrl, 4, 20),
      mdtsBytes,
      ioccszBytes: ioccsz,
      // In-capsule data needs SGLS bit 20 (offsets in data blocks) and room past the SQE (nvme_rdma_setup_ctrl()).
      inCapsuleOffered: (sgls & (1 << 20)) !== 0 && ioccsz > 64,
      keyedSgl: (sgls & (1 << 2)) !== 0,
    };
    say(`Identify Controller: ${r.controller.model}, serial ${r.controller.serial}, MDTS ${mdtsBytes} B, IOCCSZ ${ioccsz} B`);
    if (!r.controller.keyedSgl) throw new NvmfError(NvmfErrorCode.PROTOCOL, 'the controller does not take keyed SGL data blocks (SGLS bit 2)');
    const nq = expectOk(
      await admin.submit(
        base(0x09, 0, none, Uint8Array.from([7, 0, 0, 0, 0, 0, 0, 0, ...new Array<number>(16).fill(0)])),
        null,
        undefined,
        'Set Features Number of Queues',
      ),
      'Set Features Number of Queues',
    );
    const granted = Number(nq.cqe.result & 0xffffn) + 1;
    const list = await identify(2, 0, 'Identify active namespace list');
    const nsid = new DataView(list.buffer).getUint32(0, true);
    if (nsid === 0) throw new NvmfError(NvmfErrorCode.PROTOCOL, `${subnqn} has no active namespace`);
    const ns = await identify(0, nsid, 'Identify Namespace');
    const nv = new DataView(ns.buffer);
    const nsze = nv.getBigUint64(0, true);
    const lbaf = (ns[26] as number) & 0xf;
    const lbaSize = 2 ** (ns[128 + lbaf * 4 + 2] as number);
    r.namespace = { nsid, blocks: nsze.toString(), lbaSize };
    say(`namespace ${nsid}: ${nsze} blocks of ${lbaSize} B; ${granted} I/O queue${granted === 1 ? '' : 's'} granted`);
    if (slba + BigInt(blocks) > nsze)
      throw new NvmfError(NvmfErrorCode.CONFIG, `LBAs ${slba}..${slba + BigInt(blocks) - 1n} are past the namespace's ${nsze} blocks`);
    expectOk(await admin.submit(base(AdminOpcode.KEEP_ALIVE, 0, none), null, undefined, 'Keep Alive'), 'Keep Alive');

    const io = await open(1, Math.min(IO_DEPTH, mqes), cntlid);
    await connectCmd(io, cntlid, 0, r.controller.inCapsuleOffered && cfg.inCapsule !== false ? ioccsz - 64 : 0);
    say(`I/O queue 1 connected`);

    const total = blocks * lbaSize;
    const pattern = patternBytes(slba, total);
    const buf = new Uint8Array(total);
    const mr = io.register(buf);
    const maxChunk = Math.max(lbaSize, Math.floor(Math.min(mdtsBytes, 0xffffff) / lbaSize) * lbaSize);
    const inlineMax = r.controller.inCapsuleOffered && cfg.inCapsule !== false ? Math.floor((ioccsz - 64) / lbaSize) * lbaSize : 0;
    buf.set(pattern);
    for (let done = 0; done < total; ) {
      const lba = slba + BigInt(done / lbaSize);
      // The first piece goes in the capsule when it may (nvme_rdma_map_data(): inline for a Write on an I/O queue); the rest by keyed SGL.
      const inline = done === 0 && inlineMax > 0;
      const n = Math.min(total - done, inline ? inlineMax : maxChunk);
      const cdw = rwDwords(lba, n / lbaSize);
      const what = `Write of LBA ${lba} (${n} B, ${inline ? 'in the capsule' : 'keyed SGL'})`;
      if (inline) expectOk(await io.submit(base(IoOpcode.WRITE, nsid, inCapsuleSgl(n), cdw), null, pattern.subarray(done, done + n), what), what);
      else expectOk(await io.submit(base(IoOpcode.WRITE, nsid, keyedSgl(mr.addr(done), n, mr.rkey), cdw), null, undefined, what), what);
      if (inline) r.written.inCapsule += n;
      else r.written.keyed += n;
      r.written.commands++;
      r.written.bytes += n;
      done += n;
    }
    say(
      `wrote ${total} B at LBA ${slba}: ${r.written.inCapsule} B in the capsule, ${r.written.keyed} B by keyed SGL, ${r.written.commands} command${r.written.commands === 1 ? '' : 's'}`,
    );

    buf.fill(0);
    for (let done = 0; done < total; ) {
      const n = Math.min(total - done, maxChunk);
      const lba = slba + BigInt(done / lbaSize);
      const last = done + n === total;
      const cdw = rwDwords(lba, n / lbaSize);
      if (last && cfg.invalidate !== false) {
        // A fast-registered region for the last Read: the controller's SEND with Invalidate takes its key away.
        const fast = dev.allocMr(io.pd, Math.ceil(n / 4096) + 1);
        const sink = new Uint8Array(n);
        const iova = 0x7e00_0000_0000n;
        dev.mapMrSg(fast, sink, iova);
        const key = ((fast.lkey & ~0xff) | 0x4f) >>> 0;
        await io.local(
          { wrId: 0n, opcode: WrOpcode.REG_MR, reg: { mr: fast, key, access: Access.LOCAL_WRITE | Access.REMOTE_WRITE } },
          'the fast registration',
        );
        const what = `Read of LBA ${lba} (${n} B, keyed SGL with invalidate)`;
        const res = expectOk(await io.submit(base(IoOpcode.READ, nsid, keyedSgl(iova, n, key, true), cdw), null, undefined, what), what);
        if (res.invalidated !== key)
          throw new NvmfError(
            NvmfErrorCode.PROTOCOL,
            `the Read's SGL asked for the invalidation of key 0x${key.toString(16)}; the response ${res.invalidated === null ? 'came in a plain SEND' : `invalidated 0x${res.invalidated.toString(16)}`}`,
          );
        if (fast.valid) throw new NvmfError(NvmfErrorCode.PROTOCOL, `key 0x${key.toString(16)} is still valid after the SEND with Invalidate`);
        r.read.invalidatedKey = `0x${key.toString(16).padStart(8, '0')}`;
        buf.set(sink, done);
      } else {
        const what = `Read of LBA ${lba} (${n} B, keyed SGL)`;
        expectOk(await io.submit(base(IoOpcode.READ, nsid, keyedSgl(mr.addr(done), n, mr.rkey), cdw), null, undefined, what), what);
      }
      r.read.commands++;
      r.read.bytes += n;
      done += n;
    }
    const at = buf.findIndex((b, i) => b !== pattern[i]);
    if (at >= 0)
      throw new NvmfError(
        NvmfErrorCode.MISMATCH,
        `read back differs at byte ${at} (LBA ${slba + BigInt(Math.floor(at / lbaSize))}): 0x${(buf[at] as number).toString(16)}, wrote 0x${(pattern[at] as number).toString(16)}`,
      );
    r.verified = true;
    say(
      `read ${total} B back in ${r.read.commands} command${r.read.commands === 1 ? '' : 's'}${r.read.invalidatedKey !== null ? ` (key ${r.read.invalidatedKey} invalidated by the controller)` : ''}: equal`,
    );
    expectOk(await io.submit(base(IoOpcode.FLUSH, nsid, none), null, undefined, 'Flush'), 'Flush');
    r.flushed = true;
    say('Flush done');

    await io.disconnect();
    keepAliveOn = null;
    // Normal shutdown (CC.SHN = 01), then CSTS.SHST = 10 (nvme_shutdown_ctrl()).
    await propSet(admin, 0x14, 0x464001, 'Property Set CC.SHN');
    const shutBy = Date.now() + Math.max(toMs, 500);
    while (((Number(await propGet(admin, 0x1c, false, 'Property Get CSTS')) >>> 2) & 3) !== 2) {
      if (Date.now() > shutBy) throw new NvmfError(NvmfErrorCode.TIMEOUT, `CSTS.SHST not complete within CAP.TO (${toMs} ms)`);
      await idle();
    }
    await admin.disconnect();
    say('shut down and disconnected');
    r.ok = true;
    return r;
  } finally {
    for (const q of queues) q.close();
    rcm.close();
  }
}
