/**
 * A mixed, seeded RC workload over a pair of simulated devices, with every
 * byte checked at the end: SEND/RECV (receives reposted as they complete, so
 * RNR happens), RDMA WRITE, WRITE with immediate, READ, compare-and-swap and
 * fetch-and-add, spread over several QPs. `roce demo`, the simulation tests
 * and the engine benchmark run it.
 */
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcOpcode, WcStatus, WC_STATUS_NAMES, type WorkCompletion } from '../../stack/work-completion';
import type { Mtu } from '../../stack/mtu';
import { Rng } from '../../base/rng';
import type { SimPair } from './sim-pair';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import { connectQp, endpointOf } from '../../stack/connect';
import { type Counters, addCounters, newCounters } from '../../stack/counters';
import { type RecoveryCounts, addRecoveryCounts, newRecoveryCounts } from '../../base/recovery-trigger';

export const OpKind = {
  SEND: 'SEND',
  SEND_WITH_IMM: 'SEND_WITH_IMM',
  WRITE: 'WRITE',
  WRITE_WITH_IMM: 'WRITE_WITH_IMM',
  READ: 'READ',
  CMP_AND_SWP: 'CMP_AND_SWP',
  FETCH_AND_ADD: 'FETCH_AND_ADD',
} as const;
export type OpKind = (typeof OpKind)[keyof typeof OpKind];
const ALL_OPS: readonly OpKind[] = Object.values(OpKind);

/** The workload of `runWorkload`: seed, QP pairs, bytes, path MTU, message sizes and operations. */
export interface WorkloadOptions {
  seed?: number;
  /** RC QP pairs (default 4). */
  qps?: number;
  /** Payload bytes to move in all (default 2 MiB); atomics count 8 bytes each. */
  bytes?: number;
  pathMtu?: Mtu;
  /** Largest message (default 64 KiB). */
  maxMessage?: number;
  /** Smallest message (default 1 byte). */
  minMessage?: number;
  ops?: readonly OpKind[];
  /** Local ACK timeout exponent (default 12: about 16.8 ms). */
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  minRnrTimer?: number;
  /** Receive WQEs each responder posts up front (default 4); the rest as receives complete. */
  initialRecvs?: number;
  /** How long the receiving application takes to repost a receive after a completion (default 20 us), so RNR can happen. */
  repostDelayNs?: number;
  /** Stop after this much virtual time (default 600 s). */
  maxVirtualNs?: number;
}

interface PlannedOp {
  kind: OpKind;
  len: number;
  /** Offset in the source and destination buffers of the QP pair. */
  off: number;
  imm: number;
  compareAdd: bigint;
  swap: bigint;
  /** Atomics: the value the model expects back, and its slot in the result buffer. */
  expectOrig: bigint;
  slot: number;
}

interface PairState {
  index: number;
  qpA: QueuePair;
  qpB: QueuePair;
  cqA: CompletionQueue;
  cqB: CompletionQueue;
  srcA: MemoryRegion;
  dstA: MemoryRegion;
  srcB: MemoryRegion;
  dstB: MemoryRegion;
  atomB: MemoryRegion;
  resA: MemoryRegion;
  ops: PlannedOp[];
  recvPlan: PlannedOp[];
  recvPosted: number;
  recvDone: number;
  sendDone: number;
  expectAtom: bigint;
  atomInit: bigint;
  wcs: WorkCompletion[];
  finishedAtNs: number;
  bytes: number;
}

/** One QP pair's share of a workload run: operations, bytes, completions and retransmissions. */
export interface QpSummary {
  qpnA: number;
  qpnB: number;
  ops: number;
  bytes: number;
  completions: number;
  completionErrors: number;
  retransmittedPackets: number;
  seqErrNaks: number;
  rnrNaks: number;
  timeouts: number;
  /** Loss-recovery episodes of both QPs by trigger (base/recovery-trigger.ts), as `roce analyze` counts them. */
  episodes: RecoveryCounts;
  finishedAtNs: number;
  error: string;
}

/** What `runWorkload` found: `ok` when every byte arrived as sent and no completion failed, with the figures. */
export interface WorkloadResult {
  ok: boolean;
  bytesPlanned: number;
  bytesVerified: number;
  bytesMismatched: number;
  completions: number;
  completionErrors: number;
  /** Error completions by status name. */
  errorStatuses: Record<string, number>;
  /** Messages explaining each failure (first few). */
  problems: string[];
  virtualTimeNs: number;
  perQp: QpSummary[];
  countersA: Counters;
  countersB: Counters;
  totals: Counters;
  /** Loss-recovery episodes of every QP by trigger. */
  episodes: RecoveryCounts;
  completedInOrder: boolean;
  duplicateCompletions: number;
}

function sizeFor(rng: Rng, min: number, max: number): number {
  // Log-uniform message sizes: many small, some large.
  const lo = Math.log2(Math.max(1, min));
  const hi = Math.log2(Math.max(min, max));
  return Math.max(min, Math.min(max, Math.round(2 ** (lo + rng.float() * (hi - lo)))));
}

function fillRandom(buf: Uint8Array, rng: Rng): void {
  for (let i = 0; i + 4 <= buf.length; i += 4) {
    const v = rng.u32();
    buf[i] = v & 0xff;
    buf[i + 1] = (v >>> 8) & 0xff;
    buf[i + 2] = (v >>> 16) & 0xff;
    buf[i + 3] = v >>> 24;
  }
  for (let i = buf.length & ~3; i < buf.length; i++) buf[i] = rng.u32() & 0xff;
}

const ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

/**
 * Runs `roce demo`'s mixed RC workload over a sim pair until every operation completed, then checks every byte:
 * plan (a seeded sequence of operations per QP pair), set up (regions, CQs and connected QPs), post, run, verify.
 */
export function runWorkload(sim: SimPair, o: WorkloadOptions = {}): WorkloadResult {
  const seed = o.seed ?? 1;
  const rng = new Rng(seed ^ 0x5eed);
  const plan = planWorkload(rng, o);
  const pairs = setUpPairs(sim, plan, rng, o);
  postWork(pairs, o.initialRecvs ?? 4);
  runToCompletion(sim, pairs, o);
  return verifyWorkload(sim, pairs);
}

/** One QP pair's planned operations, and the atomic target's value before and (by the model) after them. */
interface PairPlan {
  ops: PlannedOp[];
  atomInit: bigint;
  atomFinal: bigint;
}

/** Plan: each QP pair gets its share of the bytes as a seeded sequence of operations. */
function planWorkload(rng: Rng, o: WorkloadOptions): PairPlan[] {
  const nq = Math.max(1, o.qps ?? 4);
  const total = o.bytes ?? 2 * 1024 * 1024;
  const ops = o.ops ?? ALL_OPS;
  const maxMsg = o.maxMessage ?? 64 * 1024;
  const minMsg = o.minMessage ?? 1;
  const plans: PairPlan[] = [];
  for (let q = 0; q < nq; q++) {
    const share = Math.ceil(total / nq);
    const list: PlannedOp[] = [];
    let off = 0;
    let moved = 0;
    let slot = 0;
    const init = (BigInt(rng.u32()) << 32n) | BigInt(rng.u32());
    let model = init;
    while (moved < share) {
      const kind = ops[rng.int(ops.length)] as OpKind;
      if (kind === OpKind.CMP_AND_SWP || kind === OpKind.FETCH_AND_ADD) {
        const add = BigInt(rng.u32());
        const hit = rng.chance(0.5);
        const cmp = hit ? model : model ^ 1n;
        const swap = (BigInt(rng.u32()) << 32n) | BigInt(rng.u32());
        const op: PlannedOp = { kind, len: 8, off: 0, imm: 0, compareAdd: kind === OpKind.FETCH_AND_ADD ? add : cmp, swap, expectOrig: model, slot: slot++ };
        model = kind === OpKind.FETCH_AND_ADD ? BigInt.asUintN(64, model + add) : model === cmp ? swap : model;
        list.push(op);
        moved += 8;
        continue;
      }
      const len = Math.min(sizeFor(rng, minMsg, maxMsg), Math.max(1, share - moved));
      list.push({ kind, len, off, imm: rng.u32(), compareAdd: 0n, swap: 0n, expectOrig: 0n, slot: -1 });
      off += len;
      moved += len;
    }
    plans.push({ ops: list, atomInit: init, atomFinal: model });
  }
  return plans;
}

/** Set up: per planned QP pair, its regions (sources filled from `rng`), CQs and a connected RC QP on each device. */
function setUpPairs(sim: SimPair, plans: readonly PairPlan[], rng: Rng, o: WorkloadOptions): PairState[] {
  const pairs: PairState[] = [];
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  for (let q = 0; q < plans.length; q++) {
    const plan = plans[q] as PairPlan;
    const list = plan.ops;
    const span = Math.max(
      8,
      list.reduce((m, x) => Math.max(m, x.off + x.len), 0),
    );
    const slots = Math.max(1, list.filter((x) => x.slot >= 0).length);
    const mk = (dev: Device, pd: ReturnType<Device['allocPd']>, size: number): MemoryRegion => dev.regMr(pd, new Uint8Array(size), ACCESS_ALL);
    const srcA = mk(sim.a, pdA, span);
    const dstA = mk(sim.a, pdA, span);
    const srcB = mk(sim.b, pdB, span);
    const dstB = mk(sim.b, pdB, span);
    const atomB = mk(sim.b, pdB, 8);
    const resA = mk(sim.a, pdA, slots * 8);
    fillRandom(srcA.buffer, rng);
    fillRandom(srcB.buffer, rng);
    new DataView(atomB.buffer.buffer).setBigUint64(0, plan.atomInit, true);
    const depth = list.length + 16;
    const cqA = sim.a.createCq(depth * 2);
    const cqB = sim.b.createCq(depth * 2);
    const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: depth, maxRecvWr: depth } });
    const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, cap: { maxSendWr: depth, maxRecvWr: depth } });
    const ea = endpointOf(sim.a, qpA, sim.a.randomPsn());
    const eb = endpointOf(sim.b, qpB, sim.b.randomPsn());
    const copt = {
      pathMtu: o.pathMtu ?? 3,
      timeout: o.timeout ?? 12,
      retryCnt: o.retryCnt ?? 7,
      rnrRetry: o.rnrRetry ?? 7,
      minRnrTimer: o.minRnrTimer ?? 1,
    };
    connectQp(qpA, ea, eb, copt);
    connectQp(qpB, eb, ea, copt);
    pairs.push({
      index: q,
      qpA,
      qpB,
      cqA,
      cqB,
      srcA,
      dstA,
      srcB,
      dstB,
      atomB,
      resA,
      ops: list,
      recvPlan: list.filter((x) => x.kind === OpKind.SEND || x.kind === OpKind.SEND_WITH_IMM || x.kind === OpKind.WRITE_WITH_IMM),
      recvPosted: 0,
      recvDone: 0,
      sendDone: 0,
      expectAtom: plan.atomFinal,
      atomInit: plan.atomInit,
      wcs: [],
      finishedAtNs: 0,
      bytes: list.reduce((s, x) => s + x.len, 0),
    });
  }
  return pairs;
}

/** Posts up to `n` more of the receives pair `p` plans. */
function postRecvs(p: PairState, n: number): void {
  for (let i = 0; i < n && p.recvPosted < p.recvPlan.length; i++) {
    const op = p.recvPlan[p.recvPosted] as PlannedOp;
    const sg = op.kind === OpKind.WRITE_WITH_IMM ? [] : [p.dstB.sge(op.off, op.len)];
    p.qpB.postRecv({ wrId: p.recvPosted, sgList: sg });
    p.recvPosted++;
  }
}

/** Post: the first receives of each responder, and every planned operation of each requester. */
function postWork(pairs: readonly PairState[], initialRecvs: number): void {
  for (const p of pairs) {
    postRecvs(p, initialRecvs);
    const wrs = p.ops.map((op, i) => {
      const base = { wrId: i, sendFlags: SendFlags.SIGNALED };
      switch (op.kind) {
        case OpKind.SEND:
          return { ...base, opcode: WrOpcode.SEND, sgList: [p.srcA.sge(op.off, op.len)] };
        case OpKind.SEND_WITH_IMM:
          return { ...base, opcode: WrOpcode.SEND_WITH_IMM, immData: op.imm, sgList: [p.srcA.sge(op.off, op.len)] };
        case OpKind.WRITE:
          return { ...base, opcode: WrOpcode.RDMA_WRITE, sgList: [p.srcA.sge(op.off, op.len)], rdma: { remoteAddr: p.dstB.addr(op.off), rkey: p.dstB.rkey } };
        case OpKind.WRITE_WITH_IMM:
          return {
            ...base,
            opcode: WrOpcode.RDMA_WRITE_WITH_IMM,
            immData: op.imm,
            sgList: [p.srcA.sge(op.off, op.len)],
            rdma: { remoteAddr: p.dstB.addr(op.off), rkey: p.dstB.rkey },
          };
        case OpKind.READ:
          return { ...base, opcode: WrOpcode.RDMA_READ, sgList: [p.dstA.sge(op.off, op.len)], rdma: { remoteAddr: p.srcB.addr(op.off), rkey: p.srcB.rkey } };
        case OpKind.CMP_AND_SWP:
          return {
            ...base,
            opcode: WrOpcode.ATOMIC_CMP_AND_SWP,
            sgList: [p.resA.sge(op.slot * 8, 8)],
            atomic: { remoteAddr: p.atomB.addr(0), rkey: p.atomB.rkey, compareAdd: op.compareAdd, swap: op.swap },
          };
        case OpKind.FETCH_AND_ADD:
          return {
            ...base,
            opcode: WrOpcode.ATOMIC_FETCH_AND_ADD,
            sgList: [p.resA.sge(op.slot * 8, 8)],
            atomic: { remoteAddr: p.atomB.addr(0), rkey: p.atomB.rkey, compareAdd: op.compareAdd },
          };
      }
    });
    p.qpA.postSend(wrs);
  }
}

/** Run the virtual clock until every completion is in, a QP failed, or nothing is left to happen; receives are reposted as they complete. */
function runToCompletion(sim: SimPair, pairs: readonly PairState[], o: WorkloadOptions): void {
  const maxNs = o.maxVirtualNs ?? 600e9;
  const repostDelay = o.repostDelayNs ?? 20_000;
  const done = (p: PairState): boolean =>
    (p.sendDone >= p.ops.length || p.qpA.state === QpState.ERR) &&
    (p.recvDone >= p.recvPlan.length || p.qpB.state === QpState.ERR || p.qpA.state === QpState.ERR);
  const poll = (): boolean => {
    let all = true;
    for (const p of pairs) {
      for (const wc of p.cqA.poll(256)) {
        p.wcs.push(wc);
        p.sendDone++;
      }
      for (const wc of p.cqB.poll(256)) {
        p.wcs.push(wc);
        p.recvDone++;
        if (wc.status === WcStatus.SUCCESS) {
          sim.clock.schedule(sim.clock.now() + repostDelay, () => {
            if (p.qpB.state !== QpState.ERR) postRecvs(p, 1);
          });
        }
      }
      if (done(p)) {
        if (p.finishedAtNs === 0) p.finishedAtNs = sim.clock.now();
      } else all = false;
    }
    return all;
  };
  sim.clock.runWhile(() => !poll() && sim.clock.now() < maxNs);
  poll();
}

/** Verify every byte and every atomic result against the plan, and report the figures. */
function verifyWorkload(sim: SimPair, pairs: readonly PairState[]): WorkloadResult {
  const problems: string[] = [];
  let verified = 0;
  let mismatched = 0;
  let completions = 0;
  let errorsTotal = 0;
  let inOrder = true;
  let dups = 0;
  const errorStatuses: Record<string, number> = {};
  const perQp: QpSummary[] = [];
  for (const p of pairs) {
    const sendWcs = p.wcs.filter((w) => w.opcode < WcOpcode.RECV);
    const recvWcs = p.wcs.filter((w) => w.opcode >= WcOpcode.RECV);
    const seen = new Set<bigint>();
    let prev = -1n;
    for (const w of sendWcs) {
      if (seen.has(w.wrId)) dups++;
      seen.add(w.wrId);
      if (w.wrId <= prev) inOrder = false;
      prev = w.wrId;
    }
    let errs = 0;
    for (const w of p.wcs) {
      completions++;
      if (w.status !== WcStatus.SUCCESS) {
        errs++;
        const name = WC_STATUS_NAMES[w.status] ?? String(w.status);
        errorStatuses[name] = (errorStatuses[name] ?? 0) + 1;
        if (problems.length < 8 && w.status !== WcStatus.WR_FLUSH_ERR)
          problems.push(`QP 0x${w.qpNum.toString(16)} WR ${w.wrId}: ${name}${w.vendorErr ? ` (${w.vendorErr})` : ''}`);
      }
    }
    errorsTotal += errs;
    const okIds = new Set(sendWcs.filter((w) => w.status === WcStatus.SUCCESS).map((w) => w.wrId));
    const resView = new DataView(p.resA.buffer.buffer, p.resA.buffer.byteOffset);
    p.ops.forEach((op, i) => {
      if (!okIds.has(BigInt(i))) return;
      let good = true;
      switch (op.kind) {
        case OpKind.SEND:
        case OpKind.SEND_WITH_IMM:
        case OpKind.WRITE:
        case OpKind.WRITE_WITH_IMM:
          good = Buffer.compare(p.dstB.buffer.subarray(op.off, op.off + op.len), p.srcA.buffer.subarray(op.off, op.off + op.len)) === 0;
          break;
        case OpKind.READ:
          good = Buffer.compare(p.dstA.buffer.subarray(op.off, op.off + op.len), p.srcB.buffer.subarray(op.off, op.off + op.len)) === 0;
          break;
        default:
          good = resView.getBigUint64(op.slot * 8, true) === op.expectOrig;
      }
      if (good) verified += op.len;
      else {
        mismatched += op.len;
        if (problems.length < 8) problems.push(`QP 0x${p.qpA.qpNum.toString(16)} op ${i} (${op.kind}, ${op.len} bytes): data differs`);
      }
    });
    // SENDs and WRITEs with immediate: the receive side must have completed each one, in order, with the right length and immediate.
    recvWcs.forEach((w, k) => {
      const op = p.recvPlan[k];
      if (w.status !== WcStatus.SUCCESS || op === undefined) return;
      if (w.wrId !== BigInt(k)) inOrder = false;
      const wantLen = op.len;
      const immOk = op.kind === OpKind.SEND ? (w.wcFlags & 2) === 0 : w.immData === op.imm;
      if (w.byteLen !== wantLen || !immOk) {
        mismatched += op.len;
        if (problems.length < 8)
          problems.push(`QP 0x${p.qpB.qpNum.toString(16)} receive ${k}: byte length ${w.byteLen} (want ${wantLen}) or immediate data wrong`);
      }
    });
    if (p.sendDone === p.ops.length && errs === 0) {
      const finalAtom = new DataView(p.atomB.buffer.buffer, p.atomB.buffer.byteOffset).getBigUint64(0, true);
      if (finalAtom !== p.expectAtom) {
        problems.push(`QP 0x${p.qpB.qpNum.toString(16)}: atomic target holds 0x${finalAtom.toString(16)}, model says 0x${p.expectAtom.toString(16)}`);
        mismatched += 8;
      }
    }
    if (p.sendDone < p.ops.length && p.qpA.state !== QpState.ERR)
      problems.push(`QP 0x${p.qpA.qpNum.toString(16)}: only ${p.sendDone} of ${p.ops.length} completions before the run stopped`);
    const cA = p.qpA.counters;
    const cB = p.qpB.counters;
    perQp.push({
      qpnA: p.qpA.qpNum,
      qpnB: p.qpB.qpNum,
      ops: p.ops.length,
      bytes: p.bytes,
      completions: p.wcs.length,
      completionErrors: errs,
      retransmittedPackets: cA.retransmitted_pkts + cB.retransmitted_pkts,
      seqErrNaks: cB.send_seq_err_nak + cA.send_seq_err_nak,
      rnrNaks: cB.send_rnr_err + cA.send_rnr_err,
      timeouts: cA.local_ack_timeout_err + cB.local_ack_timeout_err,
      episodes: addRecoveryCounts(addRecoveryCounts(newRecoveryCounts(), p.qpA.episodes), p.qpB.episodes),
      finishedAtNs: p.finishedAtNs,
      error: p.qpA.errorReason || p.qpB.errorReason,
    });
  }
  const countersA = sim.a.totalCounters();
  const countersB = sim.b.totalCounters();
  const planned = pairs.reduce((s, p) => s + p.bytes, 0);
  return {
    ok: errorsTotal === 0 && mismatched === 0 && verified === planned && inOrder && dups === 0 && problems.length === 0,
    bytesPlanned: planned,
    bytesVerified: verified,
    bytesMismatched: mismatched,
    completions,
    completionErrors: errorsTotal,
    errorStatuses,
    problems,
    virtualTimeNs: sim.clock.now(),
    perQp,
    countersA,
    countersB,
    totals: addCounters(addCounters(newCounters(), countersA), countersB),
    episodes: perQp.reduce((e, q) => addRecoveryCounts(e, q.episodes), newRecoveryCounts()),
    completedInOrder: inOrder,
    duplicateCompletions: dups,
  };
}
