/**
 * The completer (IBTA vol. 1 §9.7.5-9.7.6, §10.8; rxe_comp.c): handles the
 * responses of an RC QP. ACKs complete SEND and WRITE WQEs (and imply the
 * completion of earlier ones); READ responses are placed at their PSN's
 * offset; atomic ACKs return the original value; a PSN sequence error NAK
 * or a local ACK timeout rewinds the requester to the first unacknowledged
 * PSN (go-back-N) within retry_cnt; an RNR NAK waits the RNR timer within
 * rnr_retry (7 = infinite); other NAKs complete the WQE in error and move
 * the QP to ERR. Every ACK-kind AETH also updates the end-to-end credit limit
 * the requester honours.
 */
import { QpState, QpType } from './qp-type-and-state';
import { WcStatus } from './work-completion';
import type { QueuePair } from './queue-pair';
import { type SendWqe, WqeKind, WqeState, localFaultStatus } from './work-request';
import { psnAdd, psnDiff } from '../base/psn';
import { RecoveryTrigger } from '../base/recovery-trigger';
import { localAckTimeoutNs } from './qp-attributes';
import { scatterTo } from './dma';
import type { RocePacket } from '../packets/decode';
import { AethKind, CREDITS_INVALID, CREDIT_TABLE, NakCode, RNR_TIMER_USEC, decodeSyndrome, type AethHeader } from '../packets/aeth';
import { OpFlag } from '../packets/opcodes';

/** rnr_retry = 7 means retry forever (IBTA vol. 1 §9.7.5.2.8). */
const RNR_INFINITE = 7;

const NAK_STATUS: Readonly<Record<number, WcStatus>> = {
  [NakCode.INVALID_REQUEST]: WcStatus.REM_INV_REQ_ERR,
  [NakCode.REMOTE_ACCESS_ERROR]: WcStatus.REM_ACCESS_ERR,
  [NakCode.REMOTE_OPERATIONAL_ERROR]: WcStatus.REM_OP_ERR,
  [NakCode.INVALID_RD_REQUEST]: WcStatus.REM_INV_RD_REQ_ERR,
};

/**
 * Drops completed WQEs from the front of the send queue now and then: once 16 or more are done
 * and they are at least half the queue, so a splice moves no more WQEs than it drops (amortised
 * O(1) per completion), and a QP keeps at most max(16, its live WQEs) finished ones. (It kept up
 * to 256, each with its work request, scatter list and addresses: about 60 KB per QP, which ten
 * thousand QPs turn into most of a gigabyte.)
 */
function compact(qp: QueuePair): void {
  const c = qp.comp;
  if (c.index >= 16 && c.index * 2 >= qp.sq.length) {
    qp.sq.splice(0, c.index);
    // The requester may be behind: an ACK taken after a go-back-N rewind completes WQEs it has not
    // resent yet (it skips completed ones). Those are gone now; it goes on at the new front.
    qp.req.next = Math.max(0, qp.req.next - c.index);
    c.index = 0;
  }
}

/**
 * Completes `w` with `status` and moves the completion index over every
 * finished WQE. WQEs complete in the order they were posted, as in rxe_comp.c
 * (get_wqe() works on the WQE at the head of the send queue, do_complete()
 * advances past it): `w` is always the oldest unfinished one, except for UC/UD
 * where sending completes them.
 */
export function completeInOrder(qp: QueuePair, w: SendWqe, status: WcStatus, reason = ''): void {
  qp.postSendCompletion(w, status, reason);
  const c = qp.comp;
  if (status !== WcStatus.SUCCESS) {
    while (c.index < qp.sq.length && (qp.sq[c.index] as SendWqe).state === WqeState.DONE) c.index++;
    qp.enterError(reason || `send WQE completed with status ${status}`);
    return;
  }
  for (;;) {
    const h = qp.sq[c.index];
    if (h === undefined) break;
    if (h.state === WqeState.DONE) {
      c.index++;
      continue;
    }
    // A local work request the requester executed behind the WQEs just completed completes in its turn
    // (rxe_comp.c get_wqe(): wqe_state_done -> COMPST_COMP_WQE; a failed one, wqe_state_error).
    if (h.kind !== WqeKind.LOCAL || h.state !== WqeState.STARTED) break;
    if (h.localFault !== '') {
      qp.postSendCompletion(h, localFaultStatus(h), h.localFault);
      qp.enterError(h.localFault);
      return;
    }
    qp.postSendCompletion(h, WcStatus.SUCCESS);
    c.index++;
  }
  compact(qp);
  // A LOCAL_INV waiting for its fence, or the requester stopped at a failed local work request, may go on now.
  if (qp.sq[c.index]?.kind === WqeKind.LOCAL) qp.ctx.kick(qp);
}

/**
 * Arms the local ACK timer if it is not running (IBTA §9.7.6.1.3: 4.096 us *
 * 2^timeout; 0 = none). The timer is lazy: progress only moves the deadline,
 * and an expiry before the deadline re-arms itself, so an ACK costs no timer
 * cancel and re-insert. A deadline of +Infinity means stopped (nothing was
 * outstanding): a send then starts a full timeout even while the lazy event of
 * the previous period is still queued (before, the stale deadline of the last
 * ACK applied, and a send after an idle spell longer than the timeout was
 * resent at once when a real-time clock ran that overdue event).
 */
export function armRetransmitTimer(qp: QueuePair): void {
  const c = qp.comp;
  if (qp.attr.timeout === 0 || qp.type !== QpType.RC) return;
  if (c.timer !== null) {
    if (c.deadline === Number.POSITIVE_INFINITY) c.deadline = qp.ctx.clock.now() + localAckTimeoutNs(qp.attr.timeout);
    return;
  }
  const clock = qp.ctx.clock;
  c.deadline = clock.now() + localAckTimeoutNs(qp.attr.timeout);
  scheduleTimer(qp, c.deadline);
}

function scheduleTimer(qp: QueuePair, at: number): void {
  const c = qp.comp;
  const clock = qp.ctx.clock;
  c.timer = clock.schedule(at, () => {
    c.timer = null;
    if (c.deadline === Number.POSITIVE_INFINITY && hasOutstanding(qp)) c.deadline = clock.now() + localAckTimeoutNs(qp.attr.timeout); // defensive: sent without arming
    if (clock.now() >= c.deadline && hasOutstanding(qp)) {
      // The answer may be in the driver's ring already: a process held up past the deadline (a
      // long task, a GC pause) runs its due timers before it reads what arrived meanwhile. Take it
      // first; an ACK that moves the retry point re-arms the timer (progress) or ends the wait.
      qp.ctx.pollReceived();
      if (c.timer !== null) return;
    }
    if (clock.now() < c.deadline) {
      if (hasOutstanding(qp)) scheduleTimer(qp, c.deadline);
      return;
    }
    onTimeout(qp);
    qp.ctx.flush();
  });
}

/** Restarts the local ACK timeout from now (after progress), or stops it when nothing is outstanding. */
function restartRetransmitTimer(qp: QueuePair): void {
  const c = qp.comp;
  if (qp.attr.timeout === 0) return;
  if (!hasOutstanding(qp)) {
    c.deadline = Number.POSITIVE_INFINITY;
    return;
  }
  c.deadline = qp.ctx.clock.now() + localAckTimeoutNs(qp.attr.timeout);
  if (c.timer === null) scheduleTimer(qp, c.deadline);
}

/**
 * True while a request packet sent awaits its response: the local ACK timer measures that wait
 * (IBTA §9.7.6.1.3) and nothing else, as rxe re-arms its retransmit timer only while a packet it
 * sent may still be acknowledged (rxe_comp.c reset_retry_timer(): req.psn beyond comp.psn). A WQE
 * started but not yet sent (held by the device's in-flight bound) has nothing for the responder to
 * answer, so time spent waiting to send is no timeout and spends no retry.
 */
function hasOutstanding(qp: QueuePair): boolean {
  const w = qp.sq[qp.comp.index];
  if (w === undefined || w.state !== WqeState.STARTED) return false;
  const req = qp.req;
  return req.sentAny && psnDiff(req.sentHigh, qp.comp.psn) >= 0;
}

/** Forward progress: reset the retry counters (rxe resets them on every ACK that moves comp.psn) and the timer. */
function progress(qp: QueuePair): void {
  qp.comp.retryLeft = qp.attr.retryCnt;
  qp.comp.rnrLeft = qp.attr.rnrRetry;
  qp.comp.retrying = false;
  restartRetransmitTimer(qp);
  qp.ctx.kick(qp);
}

/** Local ACK timeout: retransmit from the first unacknowledged PSN, or give up after retry_cnt tries. */
function onTimeout(qp: QueuePair): void {
  if (qp.state !== QpState.RTS && qp.state !== QpState.SQD) return;
  if (!hasOutstanding(qp)) return;
  const now = qp.ctx.clock.now();
  if (qp.req.waitUntil > now) {
    armRetransmitTimer(qp);
    return;
  }
  qp.counters.local_ack_timeout_err++;
  qp.ctx.trace(() => ({ kind: 'timeout', timeNs: now, qpn: qp.qpNum, psn: qp.comp.psn, retriesLeft: qp.comp.retryLeft }));
  if (!useRetry(qp)) return;
  rewind(qp, qp.comp.psn, RecoveryTrigger.TIMEOUT);
  armRetransmitTimer(qp);
}

/** Spends one retry; on exhaustion completes the oldest WQE with RETRY_EXC_ERR. Returns false then. */
function useRetry(qp: QueuePair): boolean {
  const c = qp.comp;
  // IBTA gives retry_cnt no infinite value (rxe treats 7 as infinite; see docs/conformance.md).
  if (c.retryLeft <= 0) {
    qp.counters.retry_exceeded_err++;
    const w = qp.sq[c.index];
    if (w !== undefined) completeInOrder(qp, w, WcStatus.RETRY_EXC_ERR, `transport retry counter exceeded (retry_cnt ${qp.attr.retryCnt}) at PSN ${c.psn}`);
    return false;
  }
  c.retryLeft--;
  return true;
}

/**
 * Go-back-N: the requester resends from `psn`: mid-message for SEND/WRITE,
 * a new READ request for the rest of a READ, the whole atomic.
 */
export function rewind(qp: QueuePair, psn: number, cause: RecoveryTrigger): void {
  const c = qp.comp;
  const req = qp.req;
  qp.counters.completer_retry_err++;
  // A rewind to the PSN the burst in progress sends next changes nothing on the wire: no new episode.
  if (req.pendingEpisode !== null || psn !== req.burstNext) req.pendingEpisode = cause;
  qp.ctx.trace(() => ({ kind: 'retransmit', timeNs: qp.ctx.clock.now(), qpn: qp.qpNum, fromPsn: psn, cause }));
  c.retrying = true;
  c.psn = psn;
  let first = -1;
  for (let i = c.index; i < qp.sq.length; i++) {
    const w = qp.sq[i] as SendWqe;
    if (w.state !== WqeState.STARTED) break;
    if (first < 0) first = i;
    const into = psnDiff(psn, w.firstPsn);
    const inside = into >= 0 && psnDiff(psn, w.lastPsn) <= 0;
    if (w.kind === WqeKind.READ) {
      w.readPsn = inside ? psn : w.firstPsn;
      w.sentPkts = 0;
    } else if (w.kind === WqeKind.ATOMIC) {
      w.sentPkts = 0;
    } else {
      w.sentPkts = inside ? into : 0;
    }
  }
  if (first >= 0) req.next = first;
  req.noackPkts = 0;
  qp.ctx.kick(qp);
}

/**
 * Completes SEND/WRITE WQEs that end before `psn`: a response implicitly acknowledges every request
 * with an earlier PSN (IBTA vol. 1 §9.7.5.1.2, coalesced acknowledges; rxe_comp.c check_psn()).
 * Stops at an unfinished READ/atomic.
 */
function impliedAcks(qp: QueuePair, psn: number): SendWqe | undefined {
  for (;;) {
    const w = qp.sq[qp.comp.index];
    if (w === undefined || w.state !== WqeState.STARTED) return undefined;
    if (psnDiff(psn, w.lastPsn) <= 0) return w;
    if (w.kind === WqeKind.READ || w.kind === WqeKind.ATOMIC) return w;
    if (psnDiff(w.lastPsn, qp.req.sentHigh) > 0) return w; // never sent in full: a response cannot cover it
    qp.comp.psn = psnAdd(w.lastPsn, 1);
    completeInOrder(qp, w, WcStatus.SUCCESS);
    if (qp.state === QpState.ERR) return undefined;
  }
}

/**
 * The responder's end-to-end credits in an AETH of the ACK kind (an ACK, the first or last READ
 * response, an atomic ACK): the limit becomes MSN + credits when that is further than the limit so far,
 * and code 31 lifts the limit for good (IBTA vol. 1 §9.7.7.2; rdmavt rvt_get_credit()). RNR NAKs and
 * NAKs carry no credits. A requester stopped for credits runs again when the limit moves.
 */
function takeCredits(qp: QueuePair, aeth: AethHeader): void {
  const s = decodeSyndrome(aeth.syndrome);
  if (s.kind !== AethKind.ACK) return;
  const req = qp.req;
  if (req.unlimitedCredit) return;
  if (s.value === CREDITS_INVALID) {
    req.unlimitedCredit = true;
  } else {
    const lsn = psnAdd(aeth.msn, CREDIT_TABLE[s.value] ?? 0);
    if (psnDiff(lsn, req.lsn) <= 0) return;
    req.lsn = lsn;
  }
  if (req.creditWait) {
    req.creditWait = false;
    qp.ctx.kick(qp);
  }
}

/**
 * Handles one response packet (ACK, NAK, READ response, atomic ACK) for an RC QP. `frame` holds
 * the packet from index `base` on (see responderReceive).
 */
export function completerReceive(qp: QueuePair, p: RocePacket, frame: Uint8Array, base = 0): void {
  if (qp.type !== QpType.RC) return;
  receiveResponse(qp, p, frame, base);
  qp.ctx.inflight?.note(qp); // the retry point may have moved: the device's bound recounts the QP
}

/** The completer's work on one response (completerReceive's, for an RC QP). */
function receiveResponse(qp: QueuePair, p: RocePacket, frame: Uint8Array, base: number): void {
  const st = qp.state;
  if (st !== QpState.RTS && st !== QpState.SQD && st !== QpState.SQE) return;
  const bth = p.bth;
  const info = p.info;
  if (bth === null || info === undefined) return;
  const psn = bth.psn;
  const c = qp.comp;
  // A response to a PSN never sent is a ghost (rxe drops it); so is one older than the retry point.
  // (A READ's responses run past the request's own PSN, up to the READ's last PSN.) PSNs assigned to a
  // WQE but not yet sent (window closed) count as never sent: an ACK for them must not complete it.
  if (!qp.req.sentAny || psnDiff(psn, qp.req.respHigh) > 0) return;
  // Credits count even on a duplicate: the limit only moves forward, so an old one changes nothing.
  if (p.aeth !== null) takeCredits(qp, p.aeth);
  if (psnDiff(psn, c.psn) < 0) {
    return; // duplicate or stale response
  }
  const w = impliedAcks(qp, psn);
  if (w === undefined || qp.state === QpState.ERR) {
    progress(qp);
    return;
  }
  const readResp = (info.flags & OpFlag.READ) !== 0;
  const atomicAck = (info.flags & OpFlag.ATOMIC) !== 0;
  const syn = p.aeth !== null ? decodeSyndrome(p.aeth.syndrome) : null;

  // A response beyond an unfinished READ/atomic means its responses were lost: implied NAK (rxe COMPST_ERROR_RETRY).
  if ((w.kind === WqeKind.READ || w.kind === WqeKind.ATOMIC) && psnDiff(psn, w.lastPsn) > 0) {
    if (c.retrying) return;
    qp.counters.implied_nak++;
    if (useRetry(qp)) rewind(qp, c.psn, RecoveryTrigger.IMPLIED_NAK);
    return;
  }

  if (readResp && (w.kind === WqeKind.FLUSH || w.kind === WqeKind.ATOMIC_WRITE)) {
    // A FLUSH or ATOMIC WRITE is answered by an RDMA READ response of no data at its PSN (IBTA vol. 1
    // annex A19; rxe_resp.c send_read_response_ack(); rxe_comp.c check_ack() completes the WQE on it).
    const only = (info.flags & (OpFlag.START | OpFlag.END)) === (OpFlag.START | OpFlag.END);
    if (!only || psn !== w.firstPsn || p.payloadLength !== 0) {
      completeInOrder(
        qp,
        w,
        WcStatus.BAD_RESP_ERR,
        `${info.name} at PSN ${psn} with ${p.payloadLength} bytes for a ${wqeName(w)} WQE (expected a READ response of no data)`,
      );
      return;
    }
    c.psn = psnAdd(psn, 1);
    completeInOrder(qp, w, WcStatus.SUCCESS);
    progress(qp);
    return;
  }

  if (readResp) {
    if (w.kind !== WqeKind.READ) {
      completeInOrder(qp, w, WcStatus.BAD_RESP_ERR, `${info.name} for a ${wqeName(w)} WQE`);
      return;
    }
    if (psnDiff(psn, c.psn) > 0) {
      // A gap in the READ responses: go back to the first missing one, once per gap.
      if (c.retrying) return;
      qp.counters.implied_nak++;
      if (useRetry(qp)) rewind(qp, c.psn, RecoveryTrigger.IMPLIED_NAK);
      return;
    }
    const off = psnDiff(psn, w.firstPsn) * qp.mtu;
    const n = p.payloadLength;
    const end = (info.flags & OpFlag.END) !== 0;
    if (off + n > w.length || (end && off + n !== w.length) || (!end && n !== qp.mtu)) {
      completeInOrder(qp, w, WcStatus.BAD_RESP_ERR, `READ response at PSN ${psn} carries ${n} bytes at offset ${off} of ${w.length}`);
      return;
    }
    scatterTo(w.segs, off, frame, base + p.payloadOff, n);
    c.psn = psnAdd(psn, 1);
    if (end) completeInOrder(qp, w, WcStatus.SUCCESS);
    progress(qp);
    return;
  }

  if (atomicAck) {
    if (w.kind !== WqeKind.ATOMIC || psn !== w.firstPsn || p.atomicAckEth === null) {
      completeInOrder(qp, w, WcStatus.BAD_RESP_ERR, `ATOMIC ACKNOWLEDGE at PSN ${psn} for a ${wqeName(w)} WQE`);
      return;
    }
    const orig = new Uint8Array(8);
    // The original value lands in local memory in the host's order (little-endian, as on x86 with rxe).
    new DataView(orig.buffer).setBigUint64(0, p.atomicAckEth.origData, true);
    scatterTo(w.segs, 0, orig);
    c.psn = psnAdd(psn, 1);
    completeInOrder(qp, w, WcStatus.SUCCESS);
    progress(qp);
    return;
  }

  if (syn === null) return;
  switch (syn.kind) {
    case AethKind.ACK: {
      if (w.kind === WqeKind.READ || w.kind === WqeKind.ATOMIC) return; // a plain ACK inside a READ/atomic range carries nothing
      c.psn = psnAdd(psn, 1);
      if (psn === w.lastPsn) completeInOrder(qp, w, WcStatus.SUCCESS);
      progress(qp);
      return;
    }
    case AethKind.RNR_NAK: {
      qp.counters.rcvd_rnr_err++;
      c.psn = psn;
      if (qp.attr.rnrRetry !== RNR_INFINITE) {
        if (c.rnrLeft <= 0) {
          qp.counters.retry_rnr_exceeded_err++;
          completeInOrder(qp, w, WcStatus.RNR_RETRY_EXC_ERR, `RNR retry counter exceeded (rnr_retry ${qp.attr.rnrRetry}) at PSN ${psn}`);
          return;
        }
        c.rnrLeft--;
      }
      const wait = (RNR_TIMER_USEC[syn.value] ?? 655360) * 1000;
      const clock = qp.ctx.clock;
      qp.ctx.trace(() => ({ kind: 'rnr-nak-received', timeNs: clock.now(), qpn: qp.qpNum, psn, waitUs: wait / 1000 }));
      qp.req.waitUntil = clock.now() + wait;
      rewind(qp, psn, RecoveryTrigger.RNR);
      clock.schedule(qp.req.waitUntil, () => {
        qp.ctx.kick(qp);
      });
      restartRetransmitTimer(qp);
      return;
    }
    case AethKind.NAK: {
      if (syn.value === NakCode.PSN_SEQUENCE_ERROR) {
        qp.counters.rcvd_seq_err++;
        qp.ctx.trace(() => ({ kind: 'nak-received', timeNs: qp.ctx.clock.now(), qpn: qp.qpNum, psn, code: syn.value }));
        // The NAK's PSN is the responder's expected PSN: everything before it arrived (implied ACK above).
        // A NAK that moves the retry point forward is progress and resets the retry counter; one that
        // does not spends a retry (IBTA §9.7.5.2.6; rxe resets retry_cnt on progress).
        const advanced = psnDiff(psn, c.psn) > 0;
        // A NAK for the PSN the requester has already gone back to, with no progress since, is one the
        // responder sent before it saw the retry: rxe's responder follows an RNR NAK with a sequence NAK
        // for the same PSN, and a host process may take that NAK from its ring only after the RNR wait
        // (or its own resend) is over. It carries no news: no retry spent, no second go-back-N
        // (rxe_comp.c: no new retry sequence while comp.started_retry, unless the timer fired).
        if (!advanced && c.retrying) return;
        c.psn = psn;
        if (advanced) {
          c.retryLeft = qp.attr.retryCnt;
          c.rnrLeft = qp.attr.rnrRetry;
        } else if (!useRetry(qp)) {
          return;
        }
        rewind(qp, psn, RecoveryTrigger.NAK);
        restartRetransmitTimer(qp);
        return;
      }
      const status = NAK_STATUS[syn.value] ?? WcStatus.REM_OP_ERR;
      if (syn.value === NakCode.INVALID_REQUEST) qp.counters.rcvd_nak_inv_req++;
      else if (syn.value === NakCode.REMOTE_ACCESS_ERROR) qp.counters.rcvd_nak_rem_access++;
      else qp.counters.rcvd_nak_rem_op++;
      qp.ctx.trace(() => ({ kind: 'nak-received', timeNs: qp.ctx.clock.now(), qpn: qp.qpNum, psn, code: syn.value }));
      completeInOrder(qp, w, status, `NAK (${syn.value}) from the responder at PSN ${psn}`);
      return;
    }
    default:
      return;
  }
}

function wqeName(w: SendWqe): string {
  return ['SEND', 'WRITE', 'READ', 'ATOMIC', 'FLUSH', 'ATOMIC WRITE', 'LOCAL'][w.kind] ?? 'unknown';
}
