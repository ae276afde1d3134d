/**
 * The requester (IBTA vol. 1 §9.7.2-9.7.4; rxe_req.c): turns send WQEs into
 * request packets. It segments SEND and WRITE messages by the path MTU,
 * assigns PSNs, sets AckReq on the last packet of a message and every
 * `maxPktsPerAck` packets, keeps at most `maxUnackedPsns` PSNs outstanding
 * and at most `max_rd_atomic` READ/atomic requests, honours fences and the
 * responder's end-to-end credits, and resumes from the retry point the
 * completer set (go-back-N).
 */
import type { TxScratch } from './tx-scratch';
import { QpState, QpType } from './qp-type-and-state';
import { SendFlags, WrOpcode } from './work-request-codes';
import { WcStatus } from './work-completion';
import type { QueuePair } from './queue-pair';
import { type SendWqe, WqeKind, WqeState, localFaultStatus, singleRequest, takesRdAtomic } from './work-request';
import { psnAdd, psnDiff } from '../base/psn';
import { gatherFrom, resolveSges, segOf, windowAt } from './dma';
import { MrFault, MR_FAULT_NAMES } from './memory-region';
import type { RethHeader } from '../packets/reth';
import { armRetransmitTimer, completeInOrder } from './completer';
import { requestOpcode } from './wire-opcodes';

/** PSNs a WQE takes: response packets for a READ, one for an atomic, FLUSH or ATOMIC WRITE. */
function packetCount(w: SendWqe, mtu: number): number {
  if (w.kind === WqeKind.ATOMIC || w.kind === WqeKind.FLUSH || w.kind === WqeKind.ATOMIC_WRITE) return 1;
  return Math.max(1, Math.ceil(w.length / mtu));
}

/** Request packets the requester sends for a WQE in the current pass. */
function requestPackets(w: SendWqe): number {
  return singleRequest(w.kind) ? 1 : w.npkts;
}

/** The messages that take a receive WQE at the responder: SEND (with immediate or invalidate) and RDMA WRITE with immediate. */
function takesRecvWqe(w: SendWqe): boolean {
  return w.kind === WqeKind.SEND || w.opcode === WrOpcode.RDMA_WRITE_WITH_IMM;
}

/**
 * End-to-end credits (IBTA vol. 1 §9.7.7.2, RC only): a message that takes a receive WQE may start
 * when its SSN is at most LSN + 1. The one message past the limit is what keeps a requester without
 * credits going: its ACK brings a fresh count (rdmavt rvt_rc_credit_avail(): ssn <= s_lsn + 1). A
 * message that takes no WQE (WRITE, READ, atomic) still moves the responder's MSN, so it moves the
 * limit along with it (rdmavt: s_lsn++ for those). No limit once the responder sent credit code 31.
 */
function creditAvailable(qp: QueuePair, w: SendWqe): boolean {
  const req = qp.req;
  if (qp.type !== QpType.RC || req.unlimitedCredit || !takesRecvWqe(w)) return true;
  if (psnDiff(psnAdd(req.ssn, 1), psnAdd(req.lsn, 1)) <= 0) return true;
  if (!req.creditWait) {
    req.creditWait = true;
    qp.counters.rc_crwaits++;
  }
  return false;
}

/** Starts a WQE: checks fence, READ/atomic and credit limits, resolves its memory, assigns PSNs. False when it must wait. */
function startWqe(qp: QueuePair, w: SendWqe): boolean {
  const req = qp.req;
  if (qp.state === QpState.SQD) return false; // drain: no new WQEs (IBTA §10.3.1.3)
  const rdAtomic = takesRdAtomic(w.kind);
  // A fenced WQE waits for every earlier READ and atomic (ATOMIC WRITE included) to complete (IBTA §10.8.3.3).
  if ((w.sendFlags & SendFlags.FENCE) !== 0 && req.rdAtomicOutstanding > 0) return false;
  if (rdAtomic && req.rdAtomicOutstanding >= Math.max(1, qp.attr.maxRdAtomic)) return false;
  if (!creditAvailable(qp, w)) return false;
  if (w.inline !== null) {
    w.segs = [segOf(w.inline)];
  } else {
    // READ and atomics write the answer into their SGEs; FLUSH and ATOMIC WRITE have none.
    const r = resolveSges(qp.ctx.mrs, qp.pd, w.sgList, w.kind === WqeKind.READ || w.kind === WqeKind.ATOMIC);
    if (r.fault !== MrFault.OK) {
      // A bad local SGE is a local protection error; the QP goes to ERR (IBTA §10.8.3.1; rxe_req.c: finish_packet()
      // failing with -EFAULT ends the WQE with IB_WC_LOC_PROT_ERR and the completer moves the QP to ERR).
      w.state = WqeState.STARTED;
      if (rdAtomic) req.rdAtomicOutstanding++;
      completeInOrder(qp, w, WcStatus.LOC_PROT_ERR, `local SGE: ${MR_FAULT_NAMES[r.fault]}`);
      return false;
    }
    w.segs = r.segs;
  }
  w.npkts = qp.type === QpType.UD ? 1 : packetCount(w, qp.mtu);
  w.firstPsn = req.psn;
  w.lastPsn = psnAdd(req.psn, w.npkts - 1);
  w.readPsn = w.firstPsn;
  req.psn = psnAdd(req.psn, w.npkts);
  w.sentPkts = 0;
  w.readBytes = 0;
  w.state = WqeState.STARTED;
  if (rdAtomic) req.rdAtomicOutstanding++;
  if (qp.type === QpType.RC) {
    req.ssn = psnAdd(req.ssn, 1);
    if (!req.unlimitedCredit && !takesRecvWqe(w)) req.lsn = psnAdd(req.lsn, 1);
  }
  return true;
}

/**
 * A local work request (REG_MR, LOCAL_INV, BIND_MW) at the requester's turn: executed in order, with no packet
 * (rxe_req.c rxe_do_local_ops()), and completed in order (completeInOrder completes one that finished
 * behind unfinished WQEs once they complete). LOCAL_INV waits until every earlier WQE has completed
 * (the Local Invalidate Fence, IBTA vol. 1 §10.6.5.1, which rxe makes mandatory: rxe_wqe_is_fenced());
 * a FENCE flag waits for earlier READ and atomics as on any WQE. One that fails completes with
 * LOC_QP_OP_ERR (a bind: MW_BIND_ERR), in its turn, and the QP goes to ERR; nothing after it is sent. True when the requester
 * may go on (and complete it if it is the oldest WQE); false while it waits.
 */
function runLocal(qp: QueuePair, w: SendWqe): boolean {
  const req = qp.req;
  const head = qp.sq[qp.comp.index] === w;
  if (w.state === WqeState.POSTED) {
    if (qp.state === QpState.SQD) return false;
    if (w.opcode === WrOpcode.LOCAL_INV && !head) return false;
    if ((w.sendFlags & SendFlags.FENCE) !== 0 && req.rdAtomicOutstanding > 0) return false;
    const mrs = qp.ctx.mrs;
    const reg = w.reg ?? null;
    const bind = w.bind ?? null;
    if (w.opcode === WrOpcode.LOCAL_INV) {
      const why = mrs.invalidate(qp.pd, w.inv ?? 0, qp);
      w.localFault = why === '' ? '' : `LOCAL_INV: ${why}`;
    } else if (reg !== null) {
      w.localFault = mrs.registerFast(qp.pd, reg.mr, reg.key, reg.access);
    } else if (bind !== null) {
      w.localFault = mrs.bindWindow(qp, qp.pd, bind.mw, bind.rkey, bind.bindInfo);
    }
    w.state = WqeState.STARTED;
  }
  // A failed one waits for its turn to complete (rxe: LOC_QP_OP_ERR, then the QP to the error state).
  return w.localFault === '' || head;
}

/** The PSN of the next request packet of a started WQE. */
function nextPsn(w: SendWqe): number {
  return w.kind === WqeKind.READ ? w.readPsn : psnAdd(w.firstPsn, w.sentPkts);
}

function reth(x: TxScratch, va: bigint, rkey: number, dmaLength: number): RethHeader {
  const r = x.reth;
  r.va = va;
  r.rkey = rkey;
  r.dmaLength = dmaLength;
  return r;
}

/** Builds the next request packet of `w` and hands it to the port (ctx.transmit). */
function sendPacket(qp: QueuePair, w: SendWqe): void {
  const ctx = qp.ctx;
  const req = qp.req;
  const mtu = qp.mtu;
  if (w.kind === WqeKind.READ && psnDiff(qp.comp.psn, w.readPsn) > 0 && psnDiff(qp.comp.psn, w.lastPsn) <= 0) {
    // Responses placed since the retry point was set (e.g. during an RNR wait) need not be read again:
    // resume at the first response still missing, as rxe works the offset out from comp.psn.
    w.readPsn = qp.comp.psn;
  }
  const psn = nextPsn(w);
  const rc = qp.type === QpType.RC;
  // The spec is reused for every packet: transmit() builds the frame before it returns and keeps no reference.
  const x = ctx.scratch;
  const t = x.request;
  const bth = t.bth;
  bth.psn = psn;
  bth.destQp = qp.attr.destQpNum;
  bth.ackReq = true;
  bth.se = false;
  t.reth = undefined;
  t.feth = undefined;
  t.atomicEth = undefined;
  t.immDt = undefined;
  t.ieth = undefined;
  t.deth = undefined;
  t.payload = undefined;
  t.payloadOffset = undefined;
  t.payloadLength = undefined;
  if (w.kind === WqeKind.READ) {
    const off = psnDiff(w.readPsn, w.firstPsn) * mtu;
    bth.opcode = requestOpcode(qp.type, w.opcode, true, true);
    t.reth = reth(x, off === 0 ? w.remoteAddr : w.remoteAddr + BigInt(off), w.rkey, w.length - off);
  } else if (w.kind === WqeKind.ATOMIC) {
    const cmp = w.opcode === WrOpcode.ATOMIC_CMP_AND_SWP;
    bth.opcode = requestOpcode(qp.type, w.opcode, true, true);
    const a = x.atomicEth;
    a.va = w.remoteAddr;
    a.rkey = w.rkey;
    a.swapAdd = cmp ? w.swap : w.compareAdd;
    a.compare = cmp ? w.compareAdd : 0n;
    t.atomicEth = a;
  } else if (w.kind === WqeKind.FLUSH) {
    // FETH + RETH, no payload (IBTA vol. 1 annex A19.4.1, oA19-2; rxe_req.c init_req_packet()).
    bth.opcode = requestOpcode(qp.type, w.opcode, true, true);
    const f = x.feth;
    f.selectivity = w.flushLevel;
    f.placementType = w.flushType;
    t.feth = f;
    t.reth = reth(x, w.remoteAddr, w.rkey, w.length);
  } else if (w.kind === WqeKind.ATOMIC_WRITE && w.atomicWriteData !== null) {
    // RETH (length 8) and the 8 bytes (IBTA vol. 1 annex A19; rxe_req.c finish_packet()).
    bth.opcode = requestOpcode(qp.type, w.opcode, true, true);
    t.reth = reth(x, w.remoteAddr, w.rkey, 8);
    t.payload = w.atomicWriteData;
  } else {
    const i = w.sentPkts;
    const off = i * mtu;
    const len = Math.min(mtu, w.length - off);
    const first = i === 0;
    const last = i === w.npkts - 1;
    const write = w.kind === WqeKind.WRITE;
    // AckReq: last packet of a message, or every maxPktsPerAck packets, or when the window is about to close (rxe_req.c).
    let ackReq = false;
    if (rc) {
      req.noackPkts++;
      ackReq = last || req.noackPkts >= ctx.tuning.maxPktsPerAck || psnDiff(psnAdd(psn, 1), qp.comp.psn) >= ctx.tuning.maxUnackedPsns;
      if (ackReq) req.noackPkts = 0;
    }
    bth.opcode = requestOpcode(qp.type, w.opcode, first, last);
    if (qp.type === QpType.UD) bth.destQp = w.ud?.remoteQpn ?? 0;
    bth.ackReq = ackReq;
    bth.se = last && (w.sendFlags & SendFlags.SOLICITED) !== 0;
    if (len > 0) {
      // The payload is read where it lies (a window of the region's buffer); a copy only when it spans SGEs.
      const win = windowAt(w.segs, off, len);
      if (win !== null) {
        t.payload = win.buf;
        t.payloadOffset = win.at;
        t.payloadLength = len;
      } else {
        t.payload = gatherFrom(w.segs, off, len);
      }
    }
    if (write && first) t.reth = reth(x, w.remoteAddr, w.rkey, w.length);
    if (last && w.imm !== null) t.immDt = w.imm;
    if (last && w.inv !== null) t.ieth = w.inv;
    if (qp.type === QpType.UD && w.ud) {
      // IBTA C10-15: a Q_Key with the high bit set means "use the QP's own Q_Key".
      x.deth.qkey = (w.ud.remoteQkey & 0x8000_0000) !== 0 ? qp.attr.qkey : w.ud.remoteQkey >>> 0;
      x.deth.srcQp = qp.qpNum;
      t.deth = x.deth;
    }
  }
  // A READ's responses carry the PSNs up to its last one; anything past respHigh is a ghost to the completer.
  const respPsn = w.kind === WqeKind.READ ? w.lastPsn : psn;
  if (!req.sentAny || psnDiff(respPsn, req.respHigh) > 0) req.respHigh = respPsn;
  // A packet is a retransmission when its PSN was used before; a READ uses its whole response range.
  if (req.sentAny && psnDiff(psn, req.sentHigh) <= 0) {
    qp.counters.retransmitted_pkts++;
    if (req.pendingEpisode !== null) {
      qp.episodes[req.pendingEpisode]++;
      req.pendingEpisode = null;
    }
    req.burstNext = psnAdd(respPsn, 1);
  } else {
    req.sentHigh = respPsn;
    req.sentAny = true;
    req.burstNext = -1;
  }
  const path = qp.type === QpType.UD && w.ud ? w.ud.ah.path : qp.path;
  if (path === null) return;
  ctx.transmit(qp, t, path);
  if (singleRequest(w.kind)) w.sentPkts = 1;
  else w.sentPkts++;
  if (rc) armRetransmitTimer(qp);
}

/**
 * Runs the requester: sends up to one burst of packets, then yields to other
 * events (another run is scheduled when work is left).
 */
export function requesterRun(qp: QueuePair): void {
  const ctx = qp.ctx;
  const req = qp.req;
  const st = qp.state;
  if (st !== QpState.RTS && st !== QpState.SQD) return;
  if (req.waitUntil > ctx.clock.now()) return; // an RNR wait: the completer restarts us
  let budget = ctx.tuning.burst;
  // A driver whose transmit queue is full or paused by PFC takes no new requests: the gate kicks
  // us when it has room (stack/tx-gate.ts). Checked once a run: its room bounds the run's budget.
  const gate = ctx.txGate;
  let roomBound = false;
  if (gate !== null) {
    const room = gate.room();
    if (room <= 0) {
      gate.wait(qp, true);
      return;
    }
    if (room < budget) {
      budget = room;
      roomBound = true;
    }
  }
  while (budget > 0) {
    const w = qp.sq[req.next];
    if (w === undefined) return;
    if (w.state === WqeState.DONE) {
      req.next++;
      continue;
    }
    if (w.kind === WqeKind.LOCAL) {
      if (!runLocal(qp, w)) return;
      req.next++; // before completing: a completion may drop finished WQEs from the queue's front (compact)
      if (qp.sq[qp.comp.index] === w) completeInOrder(qp, w, w.localFault === '' ? WcStatus.SUCCESS : localFaultStatus(w), w.localFault);
      if (qp.state === QpState.ERR) return;
      continue;
    }
    if (w.state === WqeState.POSTED && !startWqe(qp, w)) return;
    if (qp.state === QpState.ERR) return;
    if (qp.type === QpType.RC && psnDiff(nextPsn(w), qp.comp.psn) >= ctx.tuning.maxUnackedPsns) return;
    // The device's bound on packets in flight across its QPs: a new PSN waits for room (a
    // retransmission's PSNs are counted already), and the bound kicks us when ACKs free some.
    const inflight = qp.type === QpType.RC ? ctx.inflight : null;
    if (inflight !== null && (!req.sentAny || psnDiff(nextPsn(w), req.sentHigh) > 0) && !inflight.admit(qp, w.kind === WqeKind.READ ? w.npkts : 1)) return;
    if (qp.cc !== null && !qp.cc.admit()) return; // congestion control's pacer: its timer resumes us (stack/congestion/pacer.ts)
    sendPacket(qp, w);
    if (inflight !== null) inflight.note(qp);
    budget--;
    if (w.sentPkts >= requestPackets(w)) {
      req.next++;
      // UC and UD need no acknowledgement: the WQE completes once its last packet is sent (IBTA §9.8.3).
      if (qp.type !== QpType.RC) completeInOrder(qp, w, WcStatus.SUCCESS);
    }
  }
  if (roomBound && gate !== null) gate.wait(qp, false);
  else ctx.kick(qp);
}
