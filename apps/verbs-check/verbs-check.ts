/**
 * verbs-check on a `Device`: the memory-protection verbs, played against scripts/rxe-lab/verbs-check.c
 * (rdma_rxe through libibverbs) or another roce-ts, either end the requester. The same line protocol
 * over TCP (see the C file): HELLO (GID and nine RC QPs' QPN:PSN), KEYS (the responder's region,
 * a region without the flush right, a type 1 window, two type 2 windows bound on Q0 and Q3, and a
 * fast-registration region's address with its key and the key of its next registration, or zeros
 * from a responder that cannot post REG_MR: libibverbs has no REG_MR work request), then per case
 * CASE / READY / DONE / SAW.
 *
 * The cases, on the QP each uses (a failure takes its QP to the error state, so each failure has
 * its own QP, or comes last on Q0):
 *   mw1_write (Q0), mw2_write (Q0): WRITEs through a type 1 and a type 2 window;
 *   mw2_other_qp (Q1): a type 2 window used from a QP it is not bound to
 *   atomic_write (Q0), flush (Q5); flush_no_right (Q4): FLUSH of a region without IBV_ACCESS_FLUSH_GLOBAL;
 *   send_inv (Q0): SEND with invalidate of the type 2 window; mw2_after_inv (Q0): a WRITE through it after;
 *   mw2b_write (Q3), mw2b_after_local_inv (Q3): the responder invalidates its window with LOCAL_INV;
 *   inv_user_mr (Q2): SEND with invalidate naming the ordinary region's R_Key, which cannot be invalidated;
 *   fr_write, fr_send_inv, fr_after_inv (Q6): a WRITE through a fast-registered key, SEND with
 *   invalidate of it, a WRITE through it after; fr_rereg_old (Q7): the responder registers the
 *   region again under a new key byte, and a WRITE uses the old key; fr_rereg (Q8): the new key.
 *   The fr_* cases run only against a responder that offered a fast-registration region.
 *
 * Each side records one line per case: the requester its completion (status, vendor error, opcode),
 * the responder what it saw (completions on that QP's queue, its QP's state).
 */
import type { Device } from '../../stack/device';
import { Access } from '../../stack/access-flags';
import { FlushLevel, FlushType, SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { MwType } from '../../stack/mw-type';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import { mtuFromBytes, type Mtu } from '../../stack/mtu';
import { defaultGidIndex } from '../../stack/address';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryWindow } from '../../stack/memory-window';
import { OobError, OobErrorCode, type TcpChannel } from '../oob/tcp-channel';
import { type OobEndpointConfig, openOobChannel } from '../oob/oob-endpoint';
import { PerftestError, PerftestErrorCode, configError } from '../perftest/perftest-error';
import { nextTurn } from '../host/clock-pump';

export const VERBS_CHECK_PORT = 18530;
const NQP = 9;
const BUF_SIZE = 65536;

/** The cases in the order the requester runs them, and the QP each uses. */
export const VERBS_CHECK_CASES = [
  { name: 'mw1_write', qp: 0 },
  { name: 'mw2_write', qp: 0 },
  { name: 'mw2_other_qp', qp: 1 },
  { name: 'atomic_write', qp: 0 },
  { name: 'flush', qp: 5 },
  { name: 'flush_no_right', qp: 4 },
  { name: 'send_inv', qp: 0 },
  { name: 'mw2_after_inv', qp: 0 },
  { name: 'mw2b_write', qp: 3 },
  { name: 'mw2b_after_local_inv', qp: 3 },
  { name: 'inv_user_mr', qp: 2 },
  { name: 'fr_write', qp: 6 },
  { name: 'fr_send_inv', qp: 6 },
  { name: 'fr_after_inv', qp: 6 },
  { name: 'fr_rereg_old', qp: 7 },
  { name: 'fr_rereg', qp: 8 },
] as const;

/** The fast-registration region's iova, and its key bytes: the first registration's and the next one's. */
const FR_IOVA = 0x7f00_5000_0000n;
const FR_KEY_BYTE = 0x5a;
const FR_KEY_BYTE_NEXT = 0x5b;

export interface VerbsCheckConfig extends OobEndpointConfig {
  verbsRole: 'requester' | 'responder';
  gidIndex?: number;
  /** How long one case may wait for its completion (default 20 s). */
  caseTimeoutMs?: number;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export interface VerbsCheckCase {
  name: string;
  /** Requester: the completion's status number (ibv_wc_status), or null when none came. */
  status?: number | null;
  statusName?: string;
  vendorErr?: string;
  opcode?: number;
  /** Responder (or, on the requester, what the peer responder reported): what it saw. */
  saw?: string;
}

export interface VerbsCheckResult {
  ok: boolean;
  role: 'requester' | 'responder';
  /** Whether the responder offered the flush right (its kernel has FLUSH). */
  flush: boolean;
  cases: VerbsCheckCase[];
  problems: string[];
  warnings: string[];
}

interface Keys {
  va: bigint;
  mr: number;
  nfva: bigint;
  nf: number;
  mw1: number;
  mw2: number;
  mw2b: number;
  flush: boolean;
  /** The fast-registration region (0 when the responder has none). */
  frva: bigint;
  fr: number;
  fr2: number;
}

/** A text-line reader over the channel (lines are short: byte by byte is enough). */
async function readLine(ch: TcpChannel, what: string, ms: number): Promise<string> {
  const bytes: number[] = [];
  for (;;) {
    const b = (await ch.readExact(1, what, ms))[0] as number;
    if (b === 0x0a) return Buffer.from(bytes).toString('latin1');
    if (bytes.length > 1024) throw new OobError(OobErrorCode.MALFORMED, `${what}: a line longer than 1024 bytes`, what);
    bytes.push(b);
  }
}
const writeLine = (ch: TcpChannel, s: string): Promise<void> => ch.writeExact(Buffer.from(`${s}\n`, 'latin1'));

/** The window key `k` with its key byte advanced by one (ibv_inc_rkey). */
const incKey = (k: number): number => ((k & ~0xff) | ((k + 1) & 0xff)) >>> 0;

export async function runVerbsCheck(dev: Device, cfg: VerbsCheckConfig): Promise<VerbsCheckResult> {
  const gidIndex = cfg.gidIndex ?? defaultGidIndex(dev.gids);
  const myGid = dev.gids[gidIndex];
  if (myGid === undefined) throw configError('gidIndex', `${gidIndex} is not in the GID table (${dev.gids.length} entries)`);
  const idle = cfg.idleWait ?? nextTurn;
  const caseMs = cfg.caseTimeoutMs ?? 20_000;
  const pd = dev.allocPd();
  const remote = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
  const cqs: CompletionQueue[] = [];
  const qps: QueuePair[] = [];
  const psns: number[] = [];
  for (let i = 0; i < NQP; i++) {
    const cq = dev.createCq(64);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 16, maxRecvWr: 16, maxSendSge: 1, maxRecvSge: 1 } });
    qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: remote | Access.FLUSH_GLOBAL });
    cqs.push(cq);
    qps.push(qp);
    psns.push(dev.randomPsn());
  }
  const cases: VerbsCheckCase[] = [];
  const problems: string[] = [];

  /** Waits up to `ms` for one completion on queue `n`. */
  const pollOne = async (n: number, ms: number): Promise<WorkCompletion | null> => {
    const cq = cqs[n] as CompletionQueue;
    const until = Date.now() + ms;
    for (;;) {
      const w = cq.poll(1)[0];
      if (w !== undefined) return w;
      if (Date.now() > until) return null;
      await idle();
    }
  };

  const ch = await openOobChannel(cfg, 300_000, () => configError('server', 'is needed for the client role'));
  try {
    // HELLO both ways, then every QP to RTR and RTS (the C side's attributes: rc_pingpong's).
    await writeLine(ch, `HELLO ${Buffer.from(myGid).toString('hex')} ${qps.map((q, i) => `${q.qpNum}:${psns[i]}`).join(' ')}`);
    const hello = (await readLine(ch, 'HELLO', 30_000)).split(' ');
    if (hello[0] !== 'HELLO' || hello.length !== 2 + NQP || !/^[0-9a-f]{32}$/.test(hello[1] ?? ''))
      throw new OobError(OobErrorCode.MALFORMED, `bad HELLO line: ${hello.join(' ')}`, 'HELLO');
    const peerGid = Uint8Array.from(Buffer.from(hello[1] as string, 'hex'));
    if (cfg.beforeConnect !== undefined) await cfg.beforeConnect(peerGid);
    for (let i = 0; i < NQP; i++) {
      const [q, s] = (hello[2 + i] as string).split(':').map(Number);
      const qp = qps[i] as QueuePair;
      qp.modify({
        qpState: QpState.RTR,
        pathMtu: mtuFromBytes(1024) as Mtu,
        destQpNum: q as number,
        rqPsn: s as number,
        maxDestRdAtomic: 1,
        minRnrTimer: 12,
        ahAttr: { dgid: peerGid, sgidIndex: gidIndex, hopLimit: 1 },
      });
      qp.modify({ qpState: QpState.RTS, timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: psns[i] as number, maxRdAtomic: 1 });
    }

    if (cfg.verbsRole === 'responder') {
      const buf = new Uint8Array(BUF_SIZE);
      const buf2 = new Uint8Array(BUF_SIZE);
      const rbuf = new Uint8Array(4096);
      const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | remote | Access.MW_BIND | Access.FLUSH_GLOBAL);
      const nf = dev.regMr(pd, buf2, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
      const rmr = dev.regMr(pd, rbuf, Access.LOCAL_WRITE);
      (qps[0] as QueuePair).postRecv({ wrId: 100, sgList: [rmr.sge(0, rbuf.length)] });
      const mwAccess = Access.REMOTE_WRITE | Access.REMOTE_READ;
      const mw1 = dev.allocMw(pd, MwType.TYPE_1);
      const k1 = (qps[0] as QueuePair).bindMw(mw1, {
        wrId: 1,
        sendFlags: SendFlags.SIGNALED,
        bindInfo: { mr, addr: mr.addr(4096), length: 4096, mwAccessFlags: mwAccess },
      });
      const b1 = await pollOne(0, 2000);
      if (b1?.status !== WcStatus.SUCCESS)
        throw new PerftestError(
          PerftestErrorCode.COMPLETION,
          `verbs-check: the type 1 window's bind: ${b1 === null ? 'no completion' : WC_STATUS_NAMES[b1.status]}`,
          'bind',
        );
      const bind2 = async (n: number, mw: MemoryWindow, off: number): Promise<number> => {
        const rkey = incKey(mw.rkey);
        (qps[n] as QueuePair).postSend({
          wrId: 2,
          opcode: WrOpcode.BIND_MW,
          sendFlags: SendFlags.SIGNALED,
          bindMw: { mw, rkey, bindInfo: { mr, addr: mr.addr(off), length: 4096, mwAccessFlags: mwAccess } },
        });
        const w = await pollOne(n, 2000);
        if (w?.status !== WcStatus.SUCCESS)
          throw new PerftestError(
            PerftestErrorCode.COMPLETION,
            `verbs-check: a type 2 window's BIND_MW: ${w === null ? 'no completion' : WC_STATUS_NAMES[w.status]}`,
            'bind',
          );
        return rkey;
      };
      const mw2 = dev.allocMw(pd, MwType.TYPE_2);
      const mw2b = dev.allocMw(pd, MwType.TYPE_2);
      const k2 = await bind2(0, mw2, 8192);
      const k2b = await bind2(3, mw2b, 12288);
      // A fast-registration region bound by a REG_MR work request (ib_alloc_mr, ib_map_mr_sg, IB_WR_REG_MR, as
      // an NVMe-oF or iSER target registers a buffer for each I/O), and the key its next registration takes.
      const frBuf = new Uint8Array(16384);
      const fr = dev.allocMr(pd, frBuf.length / 4096);
      const keyOf = (b: number): number => ((fr.lkey & ~0xff) | b) >>> 0;
      const regMr = async (n: number, key: number): Promise<WorkCompletion | null> => {
        dev.mapMrSg(fr, frBuf, FR_IOVA);
        (qps[n] as QueuePair).postSend({
          wrId: 4,
          opcode: WrOpcode.REG_MR,
          sendFlags: SendFlags.SIGNALED,
          reg: { mr: fr, key, access: Access.LOCAL_WRITE | remote },
        });
        return pollOne(n, 2000);
      };
      const frKey = keyOf(FR_KEY_BYTE);
      const frKey2 = keyOf(FR_KEY_BYTE_NEXT);
      const r1 = await regMr(6, frKey);
      if (r1?.status !== WcStatus.SUCCESS)
        throw new PerftestError(PerftestErrorCode.COMPLETION, `verbs-check: REG_MR: ${r1 === null ? 'no completion' : WC_STATUS_NAMES[r1.status]}`, 'reg_mr');
      const hex = (v: number | bigint): string => v.toString(16);
      await writeLine(
        ch,
        `KEYS ${hex(mr.addr(0))} ${hex(mr.rkey)} ${hex(nf.addr(0))} ${hex(nf.rkey)} ${hex(k1)} ${hex(k2)} ${hex(k2b)} 1 ${hex(FR_IOVA)} ${hex(frKey)} ${hex(frKey2)}`,
      );
      for (;;) {
        const line = await readLine(ch, 'CASE', 120_000);
        if (line === 'BYE') break;
        const m = /^CASE (\S+) (\d)$/.exec(line);
        if (m === null) throw new OobError(OobErrorCode.MALFORMED, `expected CASE, got ${JSON.stringify(line)}`, 'CASE');
        const name = m[1] as string;
        const n = Number(m[2]);
        if (n >= NQP) throw new OobError(OobErrorCode.MALFORMED, `CASE names QP ${n} of ${NQP}`, 'CASE');
        let saw = '';
        if (name === 'mw2b_after_local_inv') {
          // LOCAL_INV of the window on the QP it is bound to.
          (qps[3] as QueuePair).postSend({ wrId: 3, opcode: WrOpcode.LOCAL_INV, sendFlags: SendFlags.SIGNALED, invalidateRkey: k2b });
          const w = await pollOne(3, 2000);
          saw = `local_inv=${w === null ? 'none' : w.status},`;
        } else if (name === 'inv_user_mr' || name === 'fr_send_inv') {
          // A receive for the SEND with invalidate.
          (qps[n] as QueuePair).postRecv({ wrId: 101, sgList: [rmr.sge(0, rbuf.length)] });
        } else if (name === 'fr_rereg_old') {
          // The region, invalidated by fr_send_inv, registered again under the next key byte.
          // mapMrSg refuses a region still valid (fr_send_inv did not invalidate it): say so, the case goes on.
          let w: WorkCompletion | null | 'refused' = 'refused';
          try {
            w = await regMr(n, frKey2);
          } catch {}
          saw = `reg_mr=${w === null ? 'none' : w === 'refused' ? 'refused' : w.status},`;
        }
        await writeLine(ch, 'READY');
        const done = await readLine(ch, 'DONE', caseMs + 10_000);
        if (done !== 'DONE') throw new OobError(OobErrorCode.MALFORMED, `expected DONE, got ${JSON.stringify(done)}`, 'DONE');
        for (let w = await pollOne(n, 50); w !== null; w = await pollOne(n, 50)) {
          saw += `wc=${w.status}/${w.opcode}`;
          // A receive: length, flags (ibv_wc_flags), and whether the invalidated R_Key is the window's (as verbs-check.c).
          if (w.status === WcStatus.SUCCESS && w.opcode === WcOpcode.RECV) {
            saw += `/len=${w.byteLen}/flags=${hex(w.wcFlags)}`;
            if (w.immData >>> 0 === k2) saw += '/rkey=mw2';
            if (w.immData >>> 0 === frKey) saw += '/rkey=fr';
          }
          saw += ',';
        }
        saw += `qp=${stateName((qps[n] as QueuePair).state)}`;
        cases.push({ name, saw });
        await writeLine(ch, `SAW ${saw}`);
      }
      return { ok: true, role: 'responder', flush: true, cases, problems, warnings: [] };
    }

    // Requester.
    const lbuf = new Uint8Array(BUF_SIZE).fill(0x5a);
    const lmr = dev.regMr(pd, lbuf, Access.LOCAL_WRITE);
    const kl = (await readLine(ch, 'KEYS', 30_000)).split(' ');
    if (kl[0] !== 'KEYS' || kl.length !== 12) throw new OobError(OobErrorCode.MALFORMED, `bad KEYS line: ${kl.join(' ')}`, 'KEYS');
    const h = (i: number): number => Number.parseInt(kl[i] as string, 16) >>> 0;
    const k: Keys = {
      va: BigInt(`0x${kl[1]}`),
      mr: h(2),
      nfva: BigInt(`0x${kl[3]}`),
      nf: h(4),
      mw1: h(5),
      mw2: h(6),
      mw2b: h(7),
      flush: kl[8] === '1',
      frva: BigInt(`0x${kl[9]}`),
      fr: h(10),
      fr2: h(11),
    };
    let id = 0;
    for (const c of VERBS_CHECK_CASES) {
      // A responder without a fast-registration region (rxe through libibverbs) offers key 0.
      if (c.name.startsWith('fr_') && k.fr === 0) continue;
      await writeLine(ch, `CASE ${c.name} ${c.qp}`);
      const ready = await readLine(ch, 'READY', 10_000);
      if (ready !== 'READY') throw new OobError(OobErrorCode.MALFORMED, `expected READY, got ${JSON.stringify(ready)}`, 'READY');
      const qp = qps[c.qp] as QueuePair;
      const wrId = ++id;
      const sig = SendFlags.SIGNALED;
      const write = (rkey: number, va: bigint): void =>
        qp.postSend({ wrId, opcode: WrOpcode.RDMA_WRITE, sendFlags: sig, sgList: [lmr.sge(0, 64)], rdma: { remoteAddr: va, rkey } });
      const rec: VerbsCheckCase = { name: c.name };
      try {
        switch (c.name) {
          case 'mw1_write':
            write(k.mw1, k.va + 4096n + 64n);
            break;
          case 'mw2_write':
          case 'mw2_other_qp':
          case 'mw2_after_inv':
            write(k.mw2, k.va + 8192n + 64n);
            break;
          case 'mw2b_write':
          case 'mw2b_after_local_inv':
            write(k.mw2b, k.va + 12288n + 64n);
            break;
          case 'send_inv':
          case 'inv_user_mr':
          case 'fr_send_inv':
            qp.postSend({
              wrId,
              opcode: WrOpcode.SEND_WITH_INV,
              sendFlags: sig,
              sgList: [lmr.sge(0, 32)],
              invalidateRkey: c.name === 'send_inv' ? k.mw2 : c.name === 'inv_user_mr' ? k.mr : k.fr,
            });
            break;
          case 'fr_write':
          case 'fr_after_inv':
          case 'fr_rereg_old':
            write(k.fr, k.frva + 64n);
            break;
          case 'fr_rereg':
            write(k.fr2, k.frva + 64n);
            break;
          case 'atomic_write':
            qp.postSend({
              wrId,
              opcode: WrOpcode.ATOMIC_WRITE,
              sendFlags: sig,
              atomicWrite: { remoteAddr: k.va + 256n, rkey: k.mr, value: 0x0123456789abcdefn },
            });
            break;
          case 'flush':
            qp.postSend({
              wrId,
              opcode: WrOpcode.FLUSH,
              sendFlags: sig,
              flush: { remoteAddr: k.va, rkey: k.mr, length: 4096, placementType: FlushType.GLOBAL, selectivity: FlushLevel.RANGE },
            });
            break;
          case 'flush_no_right':
            qp.postSend({
              wrId,
              opcode: WrOpcode.FLUSH,
              sendFlags: sig,
              flush: { remoteAddr: k.nfva, rkey: k.nf, length: 4096, placementType: FlushType.GLOBAL, selectivity: FlushLevel.RANGE },
            });
            break;
        }
        const w = await pollOne(c.qp, caseMs);
        if (w === null) rec.status = null;
        else Object.assign(rec, { status: w.status, statusName: wcStatusText(w.status), vendorErr: w.vendorErr, opcode: w.opcode });
      } catch (e) {
        rec.status = null;
        rec.statusName = `post failed: ${(e as Error).message}`;
      }
      await writeLine(ch, 'DONE');
      const saw = await readLine(ch, 'SAW', 10_000);
      if (!saw.startsWith('SAW ')) throw new OobError(OobErrorCode.MALFORMED, `expected SAW, got ${JSON.stringify(saw)}`, 'SAW');
      rec.saw = saw.slice(4);
      cases.push(rec);
    }
    await writeLine(ch, 'BYE');
    return { ok: true, role: 'requester', flush: k.flush, cases, problems, warnings: [] };
  } finally {
    ch.close();
    for (const qp of qps) dev.destroyQp(qp);
  }
}

/** libibverbs' ibv_wc_status_str() words, so both sides' lines compare as text. */
const STATUS_TEXT: Readonly<Record<number, string>> = {
  [WcStatus.SUCCESS]: 'success',
  [WcStatus.LOC_LEN_ERR]: 'local length error',
  [WcStatus.LOC_QP_OP_ERR]: 'local QP operation error',
  [WcStatus.LOC_PROT_ERR]: 'local protection error',
  [WcStatus.WR_FLUSH_ERR]: 'Work Request Flushed Error',
  [WcStatus.MW_BIND_ERR]: 'memory management operation error',
  [WcStatus.BAD_RESP_ERR]: 'bad response error',
  [WcStatus.LOC_ACCESS_ERR]: 'local access error',
  [WcStatus.REM_INV_REQ_ERR]: 'remote invalid request error',
  [WcStatus.REM_ACCESS_ERR]: 'remote access error',
  [WcStatus.REM_OP_ERR]: 'remote operation error',
  [WcStatus.RETRY_EXC_ERR]: 'transport retry counter exceeded',
  [WcStatus.RNR_RETRY_EXC_ERR]: 'RNR retry counter exceeded',
  [WcStatus.GENERAL_ERR]: 'general error',
};
export function wcStatusText(s: number): string {
  return STATUS_TEXT[s] ?? `status ${s}`;
}

function stateName(s: number): string {
  return s === QpState.RTS ? 'RTS' : s === QpState.ERR ? 'ERR' : s === QpState.SQE ? 'SQE' : s === QpState.RTR ? 'RTR' : 'other';
}

/** One machine-readable line per case, as verbs-check.c prints them. */
export function verbsCheckLines(r: VerbsCheckResult): string[] {
  return r.cases.map((c) =>
    r.role === 'requester'
      ? `VC role=requester case=${c.name} status=${c.status ?? 'none'} opcode=${c.opcode ?? ''} vendor_err=${JSON.stringify(c.vendorErr ?? '')} status_name=${c.statusName ?? ''}\nVC role=peer-responder case=${c.name} saw=${c.saw ?? ''}`
      : `VC role=responder case=${c.name} saw=${c.saw ?? ''}`,
  );
}
