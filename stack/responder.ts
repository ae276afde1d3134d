/**
 * The responder (IBTA vol. 1 §9.7.5, §9.8; rxe_resp.c): checks each request
 * packet in rxe's order (PSN, opcode sequence, opcode validity, resources,
 * length, R_Key), executes it (places SEND and WRITE data, answers READ,
 * performs atomics once), completes receive WQEs and acknowledges.
 *
 * Errors follow the IBTA classes: a PSN ahead of the expected one is class B
 * (one PSN sequence error NAK per gap, then silent drops); a missing receive
 * WQE is an RNR NAK; invalid requests and access violations are class C (NAK,
 * then the QP goes to ERR). UC and UD never answer: they drop what they cannot
 * take. Duplicates are re-ACKed (SEND, WRITE; C9-105), READs are replayed from
 * the saved request, atomics are answered from the saved result and never
 * executed twice. ACKs carry the QP's end-to-end credits (code 31 on an SRQ).
 */
import { QpState, QpType } from './qp-type-and-state';
import { Access } from './access-flags';
import { FlushLevel, FlushType } from './work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from './work-completion';
import type { QueuePair, ResponderResource } from './queue-pair';
import { psnAdd, psnDiff } from '../base/psn';
import { resolveSges, scatterTo } from './dma';
import { MrFault, MR_FAULT_NAMES } from './memory-region';
import { MAX_MSG_SIZE } from './work-request';
import { copyBytes } from '../packets/bytes';
import type { RocePacket } from '../packets/decode';
import { type OpcodeInfo, OPCODES, OpFlag, Opcode } from '../packets/opcodes';
import { CREDITS_INVALID, NakCode, creditCode, encodeSyndrome } from '../packets/aeth';
import type { TransportSpec } from '../packets/build';
import { readResponseOpcode } from './wire-opcodes';

const RC_ATOMIC_ACKNOWLEDGE = Opcode.RC_ATOMIC_ACKNOWLEDGE;
const RC_COMPARE_SWAP = Opcode.RC_COMPARE_SWAP;
const RC_RDMA_READ_RESPONSE_ONLY = Opcode.RC_RDMA_READ_RESPONSE_ONLY;
/** The ACK syndrome for each credit code (the ACK kind's bits are 0: the syndrome is the code). */
const ACK_SYNDROMES: readonly number[] = Object.freeze(Array.from({ length: CREDITS_INVALID + 1 }, (_, code) => encodeSyndrome('ACK', code)));

/**
 * The syndrome of an ACK-kind AETH (ACK, first and last READ response, atomic ACK): the end-to-end
 * credit count, from the receive WQEs the QP has posted beyond the one in use (IBTA vol. 1 §9.7.7.2;
 * rdmavt rvt_compute_aeth()). A QP on a shared receive queue generates no credits and sends code 31,
 * as rdmavt does (its WQEs are shared with other QPs, so none are this requester's). rxe sends code 31
 * on every QP (rxe_resp.c: AETH_ACK_UNLIMITED); see docs/conformance.md.
 */
function ackSyndrome(qp: QueuePair): number {
  if (qp.srq !== null) return ACK_SYNDROMES[CREDITS_INVALID] as number;
  return ACK_SYNDROMES[creditCode(qp.rq.length)] as number;
}

function sendAck(qp: QueuePair, syndrome: number, psn: number, msn: number = qp.resp.msn): void {
  if (qp.path === null) return;
  // A held ACK (stack/ack-coalescer.ts) goes first, before the shared spec below is filled for this one.
  if (qp.resp.ackHeld) qp.ctx.acks?.release(qp);
  // One spec reused for every ACK: transmit() builds the frame before it returns and keeps no reference.
  const t = qp.ctx.scratch.ack;
  t.bth.destQp = qp.attr.destQpNum;
  t.bth.psn = psn;
  t.aeth.syndrome = syndrome;
  t.aeth.msn = msn;
  qp.ctx.transmit(qp, t, qp.path);
}

/** Sends an ACK of `qp` held earlier, with the syndrome and MSN it was earned with (what stack/ack-deferral.ts releases). */
export function sendHeldAck(qp: QueuePair, syndrome: number, psn: number, msn: number): void {
  sendAck(qp, syndrome, psn, msn);
}

/** Sends the ACK of `qp` for `psn` now, with the MSN and credits as they stand (what the device's ACK coalescer releases). */
export function sendAckNow(qp: QueuePair, psn: number): void {
  sendAck(qp, ackSyndrome(qp), psn);
}

/** Sends a NAK of `qp` with `code` for `psn` (the probe answers a request with a PSN sequence NAK itself: `roce probe`'s seq-nak). */
export function sendNak(qp: QueuePair, code: number, psn: number, reason: string): void {
  qp.ctx.trace(() => ({ kind: 'nak-sent', timeNs: qp.ctx.clock.now(), qpn: qp.qpNum, psn, code, reason }));
  sendAck(qp, encodeSyndrome('NAK', code), psn);
}

/** Class A/C error (RC): NAK, complete the receive WQE in use with `status`, QP to ERR. */
function classCError(qp: QueuePair, code: number, psn: number, reason: string, status: WcStatus): void {
  if (code === NakCode.INVALID_REQUEST) qp.counters.send_nak_inv_req++;
  else if (code === NakCode.REMOTE_ACCESS_ERROR) qp.counters.send_nak_rem_access++;
  else qp.counters.send_nak_rem_op++;
  sendNak(qp, code, psn, reason);
  const r = qp.resp;
  if (r.wqe !== null) {
    qp.postRecvCompletion(r.wqe, status, r.offset, 0, 0, 0, reason);
    r.wqe = null;
  }
  qp.enterError(`responder: ${reason}`);
}

/** UC/UD: forget the message in progress; its receive WQE is kept for the next one (rxe drop_msg). */
function dropMessage(qp: QueuePair): void {
  const r = qp.resp;
  r.opcode = -1;
  r.offset = 0;
  r.writeBuf = null;
  r.dropMsg = true;
}

/**
 * Opcode sequence check: a FIRST or MIDDLE must be followed by a MIDDLE or LAST of the same operation, and
 * a MIDDLE or LAST needs a FIRST before it (IBTA vol. 1 §9.7.4.1, the responder's checks of a request;
 * rxe_resp.c check_op_seq()).
 */
function sequenceOk(prev: number, info: OpcodeInfo): boolean {
  const f = info.flags;
  if (prev < 0) return (f & OpFlag.START) !== 0;
  // `prev` is the FIRST or MIDDLE packet of a SEND or WRITE in progress (finishPacket keeps no other).
  const pf = OPCODES[prev]?.flags ?? 0;
  const inSend = (pf & (OpFlag.SEND | OpFlag.END)) === OpFlag.SEND;
  const inWrite = (pf & (OpFlag.WRITE | OpFlag.END)) === OpFlag.WRITE;
  if (inSend) return (f & OpFlag.SEND) !== 0 && (f & OpFlag.START) === 0;
  if (inWrite) return (f & OpFlag.WRITE) !== 0 && (f & OpFlag.START) === 0;
  return (f & OpFlag.START) !== 0;
}

/**
 * The remote access a request needs, of the QP's access flags and then of the region (IBTA §10.2.4.1;
 * rxe check_qp_attr_access() and check_rkey()): an ATOMIC WRITE needs remote write; a FLUSH the flush
 * right of each placement type it asks for (IBTA vol. 1 annex A19).
 */
function neededAccess(info: OpcodeInfo, p: RocePacket): number {
  const f = info.flags;
  if ((f & (OpFlag.WRITE | OpFlag.ATOMIC_WRITE)) !== 0) return Access.REMOTE_WRITE;
  if ((f & OpFlag.READ) !== 0) return Access.REMOTE_READ;
  if ((f & OpFlag.ATOMIC) !== 0) return Access.REMOTE_ATOMIC;
  if ((f & OpFlag.FLUSH) !== 0) {
    const type = p.feth?.placementType ?? 0;
    return ((type & FlushType.GLOBAL) !== 0 ? Access.FLUSH_GLOBAL : 0) | ((type & FlushType.PERSISTENT) !== 0 ? Access.FLUSH_PERSISTENT : 0);
  }
  return 0;
}

/**
 * Handles one request packet addressed to `qp`. `frame` holds the packet from index `base` on (the
 * packet's offsets are relative to that): a view of the frame alone (base 0), or a driver's whole
 * receive buffer (no view per frame).
 */
export function responderReceive(qp: QueuePair, p: RocePacket, frame: Uint8Array, base = 0): void {
  const st = qp.state;
  // Packets for a QP in RESET or INIT, or in ERR, are dropped silently (IBTA §10.3.1).
  if (st === QpState.RESET || st === QpState.INIT || st === QpState.ERR) return;
  const bth = p.bth;
  const info = p.info;
  if (bth === null || info === undefined) return;
  // The opcode's transport must be the QP's, UD included (rxe check_type_state drops the others).
  if (info.transport !== qp.transport) {
    qp.counters.rcvd_malformed++;
    return;
  }
  if (qp.type === QpType.UD) {
    udReceive(qp, p, frame, base);
    return;
  }
  const r = qp.resp;
  const rc = qp.type === QpType.RC;
  const d = psnDiff(bth.psn, r.psn);
  if (rc) {
    if (d > 0) {
      // Class B: a PSN ahead of the expected one. One NAK per gap, then silent drops.
      qp.counters.out_of_seq_request++;
      if (!r.sentPsnNak) {
        r.sentPsnNak = true;
        qp.counters.send_seq_err_nak++;
        sendNak(qp, NakCode.PSN_SEQUENCE_ERROR, r.psn, `expected PSN ${r.psn}, got ${bth.psn}`);
      }
      return;
    }
    if (d < 0) {
      qp.counters.duplicate_request++;
      duplicate(qp, p, info);
      return;
    }
    r.sentPsnNak = false;
  } else if (d !== 0 || r.dropMsg) {
    // UC: a lost packet loses the rest of its message; the next message that starts resynchronises (IBTA §9.8.3).
    if (d !== 0) qp.counters.out_of_seq_request++;
    if ((info.flags & OpFlag.START) === 0) {
      dropMessage(qp);
      r.psn = psnAdd(bth.psn, 1);
      return;
    }
    r.opcode = -1;
    r.offset = 0;
    r.dropMsg = false;
  }

  if (!sequenceOk(r.opcode, info)) {
    if (rc) classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `opcode ${info.name} out of sequence after 0x${r.opcode.toString(16)}`, WcStatus.REM_INV_REQ_ERR);
    else {
      dropMessage(qp);
      r.psn = psnAdd(bth.psn, 1);
    }
    return;
  }
  const need = neededAccess(info, p);
  if ((qp.attr.qpAccessFlags & need) !== need) {
    if (rc)
      classCError(
        qp,
        NakCode.INVALID_REQUEST,
        bth.psn,
        `${info.name} is not enabled on this QP (access flags 0x${qp.attr.qpAccessFlags.toString(16)})`,
        WcStatus.REM_INV_REQ_ERR,
      );
    else dropMessage(qp);
    return;
  }

  // Resources: a SEND or a WRITE with immediate needs a receive WQE.
  const f = info.flags;
  const wantsWqe = (f & OpFlag.RWR) !== 0 && ((f & OpFlag.SEND) !== 0 ? (f & OpFlag.START) !== 0 : true);
  if (wantsWqe && r.wqe === null) {
    if (!qp.hasRecvWqe()) {
      if (rc) {
        qp.counters.send_rnr_err++;
        qp.ctx.trace(() => ({ kind: 'rnr-nak-sent', timeNs: qp.ctx.clock.now(), qpn: qp.qpNum, psn: bth.psn, timerCode: qp.attr.minRnrTimer }));
        sendAck(qp, encodeSyndrome('RNR_NAK', qp.attr.minRnrTimer), bth.psn);
      } else {
        dropMessage(qp);
        r.psn = psnAdd(bth.psn, 1);
      }
      return;
    }
    r.wqe = qp.takeRecvWqe();
    r.offset = (f & OpFlag.SEND) !== 0 ? 0 : r.offset;
  }

  // Length: FIRST/MIDDLE carry exactly one MTU, LAST/ONLY at most one (rxe check_length; C9-29..31).
  const len = p.payloadLength;
  const mtu = qp.mtu;
  const end = (f & OpFlag.END) !== 0;
  const start = (f & OpFlag.START) !== 0;
  // rxe check_length: FIRST/MIDDLE exactly one MTU; ONLY at most one; LAST 1..MTU.
  const badLen = !end ? len !== mtu : start ? len > mtu : len === 0 || len > mtu;
  if ((f & (OpFlag.SEND | OpFlag.WRITE)) !== 0 && badLen) {
    if (rc) classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `${info.name} carries ${len} bytes with a path MTU of ${mtu}`, WcStatus.REM_INV_REQ_ERR);
    else dropMessage(qp);
    return;
  }

  if ((f & OpFlag.SEND) !== 0) {
    executeSend(qp, p, info, frame, base);
  } else if ((f & OpFlag.WRITE) !== 0) {
    executeWrite(qp, p, info, frame, base);
  } else if ((f & OpFlag.READ) !== 0) {
    executeRead(qp, p);
    return;
  } else if ((f & OpFlag.ATOMIC) !== 0) {
    executeAtomic(qp, p, info);
    return;
  } else if ((f & OpFlag.FLUSH) !== 0 && rc) {
    executeFlush(qp, p);
    return;
  } else if ((f & OpFlag.ATOMIC_WRITE) !== 0 && rc) {
    executeAtomicWrite(qp, p, frame, base);
    return;
  } else {
    if (rc) classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `${info.name} is not supported by this responder`, WcStatus.REM_INV_REQ_ERR);
    return;
  }
}

function executeSend(qp: QueuePair, p: RocePacket, info: OpcodeInfo, frame: Uint8Array, base: number): void {
  const r = qp.resp;
  const bth = p.bth!;
  const rc = qp.type === QpType.RC;
  const wqe = r.wqe;
  if (wqe === null) return;
  const len = p.payloadLength;
  if (r.offset + len > wqe.length) {
    // The message does not fit the receive buffer (rxe RESPST_ERR_LENGTH; the receive side sees a local length error).
    if (rc)
      classCError(
        qp,
        NakCode.INVALID_REQUEST,
        bth.psn,
        `SEND of at least ${r.offset + len} bytes exceeds the ${wqe.length}-byte receive buffer`,
        WcStatus.LOC_LEN_ERR,
      );
    else {
      qp.postRecvCompletion(wqe, WcStatus.LOC_LEN_ERR, r.offset + len, 0, 0, 0, 'message longer than the receive buffer');
      r.wqe = null;
      dropMessage(qp);
    }
    return;
  }
  if (len > 0) {
    const res = resolveSges(qp.ctx.mrs, qp.pd, wqe.sgList, true);
    if (res.fault !== MrFault.OK) {
      // A receive WQE the responder cannot write is malformed: class A, remote operational error (rxe MALFORMED_WQE).
      if (rc) classCError(qp, NakCode.REMOTE_OPERATIONAL_ERROR, bth.psn, `receive SGE: ${MR_FAULT_NAMES[res.fault]}`, WcStatus.LOC_PROT_ERR);
      else {
        qp.postRecvCompletion(wqe, WcStatus.LOC_PROT_ERR, 0, 0, 0, 0, `receive SGE: ${MR_FAULT_NAMES[res.fault]}`);
        r.wqe = null;
        qp.enterError('receive SGE could not be written');
      }
      return;
    }
    scatterTo(res.segs, r.offset, frame, base + p.payloadOff, len);
  }
  r.offset += len;
  finishPacket(qp, p, info);
}

function executeWrite(qp: QueuePair, p: RocePacket, info: OpcodeInfo, frame: Uint8Array, base: number): void {
  const r = qp.resp;
  const bth = p.bth!;
  const rc = qp.type === QpType.RC;
  const f = info.flags;
  const len = p.payloadLength;
  if ((f & OpFlag.START) !== 0) {
    const reth = p.reth!;
    r.writeLen = reth.dmaLength;
    r.writeOff = 0;
    r.writeBuf = null;
    r.offset = 0;
    if (reth.dmaLength > MAX_MSG_SIZE) {
      if (rc) classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `WRITE of ${reth.dmaLength} bytes exceeds the maximum message size`, WcStatus.REM_INV_REQ_ERR);
      else dropMessage(qp);
      return;
    }
    if (reth.dmaLength > 0) {
      // C9-88 / rxe check_rkey: the R_Key must name a region of this PD that covers the range and allows remote write.
      const hit = qp.ctx.mrs.checkRemote(qp.pd, reth.rkey, reth.va, reth.dmaLength, Access.REMOTE_WRITE, qp);
      if (hit.fault !== MrFault.OK || hit.mr === null) {
        if (rc)
          classCError(
            qp,
            NakCode.REMOTE_ACCESS_ERROR,
            bth.psn,
            `WRITE rkey 0x${reth.rkey.toString(16)} va 0x${reth.va.toString(16)} len ${reth.dmaLength}: ${MR_FAULT_NAMES[hit.fault]}`,
            WcStatus.REM_ACCESS_ERR,
          );
        else dropMessage(qp);
        return;
      }
      r.writeBuf = hit.mr.buffer;
      r.writeOff = hit.offset;
    }
  }
  if (r.offset + len > r.writeLen || ((f & OpFlag.END) !== 0 && r.offset + len !== r.writeLen)) {
    if (rc)
      classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `WRITE carries ${r.offset + len} bytes but its RETH says ${r.writeLen}`, WcStatus.REM_INV_REQ_ERR);
    else dropMessage(qp);
    return;
  }
  if (len > 0 && r.writeBuf !== null) {
    copyBytes(r.writeBuf, r.writeOff + r.offset, frame, base + p.payloadOff, len);
  }
  r.offset += len;
  finishPacket(qp, p, info);
}

/** After a SEND or WRITE packet: advance the PSN, complete the message, acknowledge. */
function finishPacket(qp: QueuePair, p: RocePacket, info: OpcodeInfo): void {
  const r = qp.resp;
  const bth = p.bth!;
  const f = info.flags;
  r.psn = psnAdd(bth.psn, 1);
  r.opcode = (f & OpFlag.END) !== 0 ? -1 : bth.opcode;
  let invalidateFailed = '';
  if ((f & OpFlag.END) !== 0) {
    r.msn = (r.msn + 1) & 0xffffff;
    if ((f & OpFlag.COMP) !== 0 && r.wqe !== null) {
      let flags = 0;
      let imm = 0;
      let status: WcStatus = WcStatus.SUCCESS;
      if (p.immDt !== null) {
        flags |= WcFlags.WITH_IMM;
        imm = p.immDt.value;
      }
      if (p.ieth !== null) {
        flags |= WcFlags.WITH_INV;
        imm = p.ieth.rkey;
        // Only the current key of a fast-registration region of this PD, or of a type 2 memory window
        // bound on this QP, can be invalidated (rxe_resp.c invalidate_rkey() -> rxe_invalidate_mr(),
        // rxe_invalidate_mw(); stack/memory-region.ts invalidate()); any other: the receive WQE completes with
        // REM_INV_REQ_ERR and the QP goes to ERR after the ACK (rxe RESPST_ERR_INVALIDATE_RKEY, "class J").
        const why = qp.ctx.mrs.invalidate(qp.pd, p.ieth.rkey, qp);
        if (why !== '') {
          status = WcStatus.REM_INV_REQ_ERR;
          invalidateFailed = `SEND with invalidate: ${why}`;
        }
      }
      const write = (f & OpFlag.WRITE) !== 0;
      qp.postRecvCompletion(r.wqe, status, write ? r.writeLen : r.offset, flags, imm, 0, invalidateFailed, write ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV);
      if (status === WcStatus.SUCCESS) qp.counters.rdma_recvs++;
      r.wqe = null;
    }
    r.offset = 0;
    r.writeBuf = null;
  }
  if (qp.type === QpType.RC) {
    // Coalesced ACKs: answer only packets that ask (AckReq), as rxe does; with the device's
    // coalescer, one ACK per QP at the end of the receive burst (stack/ack-coalescer.ts); in its
    // busy-poll receive, each one after the device's next transmit work (stack/ack-deferral.ts).
    if (!bth.ackReq) qp.counters.ack_deferred++;
    else if (qp.ctx.acks !== null && qp.ctx.acks.holding) qp.ctx.acks.hold(qp, bth.psn, ackSyndrome(qp));
    else sendAck(qp, ackSyndrome(qp), bth.psn);
  }
  if (invalidateFailed !== '') qp.enterError(`responder: ${invalidateFailed}`);
}

function readPackets(length: number, mtu: number): number {
  return Math.max(1, Math.ceil(length / mtu));
}

function executeRead(qp: QueuePair, p: RocePacket): void {
  const r = qp.resp;
  const bth = p.bth!;
  const reth = p.reth!;
  if (reth.dmaLength > MAX_MSG_SIZE) {
    classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `READ of ${reth.dmaLength} bytes exceeds the maximum message size`, WcStatus.REM_INV_REQ_ERR);
    return;
  }
  if (reth.dmaLength > 0) {
    const hit = qp.ctx.mrs.checkRemote(qp.pd, reth.rkey, reth.va, reth.dmaLength, Access.REMOTE_READ, qp);
    if (hit.fault !== MrFault.OK) {
      classCError(
        qp,
        NakCode.REMOTE_ACCESS_ERROR,
        bth.psn,
        `READ rkey 0x${reth.rkey.toString(16)} va 0x${reth.va.toString(16)} len ${reth.dmaLength}: ${MR_FAULT_NAMES[hit.fault]}`,
        WcStatus.REM_ACCESS_ERR,
      );
      return;
    }
  }
  const n = readPackets(reth.dmaLength, qp.mtu);
  const res: ResponderResource = {
    kind: 'read',
    firstPsn: bth.psn,
    lastPsn: psnAdd(bth.psn, n - 1),
    va: reth.va,
    rkey: reth.rkey,
    length: reth.dmaLength,
    origData: 0n,
  };
  saveResource(qp, res);
  r.psn = psnAdd(bth.psn, n);
  r.msn = (r.msn + 1) & 0xffffff;
  r.opcode = -1;
  sendReadResponses(qp, res, bth.psn);
}

/** Keeps at most max_dest_rd_atomic saved READ/atomic requests, oldest dropped first (rxe resp.resources ring). */
function saveResource(qp: QueuePair, res: ResponderResource): void {
  const list = qp.resp.resources;
  list.push(res);
  const max = Math.max(1, qp.attr.maxDestRdAtomic);
  if (list.length > max) list.splice(0, list.length - max);
}

/** Sends the READ responses of `res` from `fromPsn` on (FIRST/MIDDLE/LAST, or ONLY). */
function sendReadResponses(qp: QueuePair, res: ResponderResource, fromPsn: number): void {
  const mtu = qp.mtu;
  const start = psnDiff(fromPsn, res.firstPsn) * mtu;
  const remaining = res.length - start;
  const n = readPackets(remaining, mtu);
  let buf: Uint8Array | null = null;
  let at = 0;
  if (remaining > 0) {
    const hit = qp.ctx.mrs.checkRemote(qp.pd, res.rkey, res.va + BigInt(start), remaining, Access.REMOTE_READ, qp);
    if (hit.fault !== MrFault.OK || hit.mr === null) return; // invalidated since: nothing to send
    buf = hit.mr.buffer;
    at = hit.offset;
  }
  if (qp.resp.ackHeld) qp.ctx.acks?.release(qp); // a held ACK (stack/ack-coalescer.ts) goes before the responses
  const aeth = { syndrome: ackSyndrome(qp), msn: qp.resp.msn };
  // A READ retried from the middle of its range (the requester got the first responses) is answered
  // with the opcodes the original reply had at those PSNs: MIDDLE, then LAST. rxe does so
  // (`rxe_resp.c` duplicate_request(): rdatm_res_state_replay unless the PSN is the first; read_reply()),
  // and its completer takes a FIRST only at the READ's first PSN once part of the reply is in
  // (`rxe_comp.c` check_ack(): COMPST_ERROR, the QP to the error state).
  const fromStart = fromPsn === res.firstPsn;
  for (let i = 0; i < n; i++) {
    const last = i === n - 1;
    const first = i === 0 && fromStart;
    const op = readResponseOpcode(first, last);
    // Each response's payload is read in place from the region (a window, no view made).
    const t: TransportSpec = { bth: { opcode: op, destQp: qp.attr.destQpNum, psn: psnAdd(fromPsn, i) } };
    if (buf !== null) {
      t.payload = buf;
      t.payloadOffset = at + i * mtu;
      t.payloadLength = Math.min(remaining, (i + 1) * mtu) - i * mtu;
    }
    if (first || last) t.aeth = aeth; // MIDDLE responses carry no AETH
    if (qp.path !== null) qp.ctx.transmit(qp, t, qp.path);
  }
}

function executeAtomic(qp: QueuePair, p: RocePacket, info: OpcodeInfo): void {
  const r = qp.resp;
  const bth = p.bth!;
  const a = p.atomicEth!;
  // An atomic must name an 8-byte aligned address (rxe RESPST_ERR_MISALIGNED_ATOMIC: class C, Invalid Request).
  if ((a.va & 7n) !== 0n) {
    classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `atomic at unaligned address 0x${a.va.toString(16)}`, WcStatus.REM_INV_REQ_ERR);
    return;
  }
  const hit = qp.ctx.mrs.checkRemote(qp.pd, a.rkey, a.va, 8, Access.REMOTE_ATOMIC, qp);
  if (hit.fault !== MrFault.OK || hit.mr === null) {
    classCError(
      qp,
      NakCode.REMOTE_ACCESS_ERROR,
      bth.psn,
      `atomic rkey 0x${a.rkey.toString(16)} va 0x${a.va.toString(16)}: ${MR_FAULT_NAMES[hit.fault]}`,
      WcStatus.REM_ACCESS_ERR,
    );
    return;
  }
  const buf = hit.mr.buffer;
  const view = new DataView(buf.buffer, buf.byteOffset + hit.offset, 8);
  // Memory holds the 64-bit value in host order, little-endian as on x86 (rxe operates on a native u64).
  const orig = view.getBigUint64(0, true);
  if (bth.opcode === RC_COMPARE_SWAP) {
    if (orig === a.compare) view.setBigUint64(0, a.swapAdd, true);
  } else {
    view.setBigUint64(0, BigInt.asUintN(64, orig + a.swapAdd), true);
  }
  const res: ResponderResource = { kind: 'atomic', firstPsn: bth.psn, lastPsn: bth.psn, va: a.va, rkey: a.rkey, length: 8, origData: orig };
  saveResource(qp, res);
  r.psn = psnAdd(bth.psn, 1);
  r.msn = (r.msn + 1) & 0xffffff;
  r.opcode = -1;
  sendAtomicAck(qp, res);
  void info;
}

function sendAtomicAck(qp: QueuePair, res: ResponderResource): void {
  if (qp.resp.ackHeld) qp.ctx.acks?.release(qp); // a held ACK (stack/ack-coalescer.ts) goes first
  const t: TransportSpec = {
    bth: { opcode: RC_ATOMIC_ACKNOWLEDGE, destQp: qp.attr.destQpNum, psn: res.firstPsn },
    aeth: { syndrome: ackSyndrome(qp), msn: qp.resp.msn },
    atomicAckEth: { origData: res.origData },
  };
  if (qp.path !== null) qp.ctx.transmit(qp, t, qp.path);
}

/**
 * FLUSH (IBTA vol. 1 annex A19): the R_Key must name a region of the QP's PD that allows the flush of
 * each placement type asked for and, at selectivity "range", covers the RETH's range (rxe check_rkey():
 * else Remote Access Error). Every request before it has been executed, in order, into the region's
 * bytes: they are globally visible. Persistence is the region's to give: its `persist` hook is called
 * for the range (or the whole region), as rxe process_flush() writes persistent memory back. Answered
 * by an RDMA READ response of no data (rxe send_read_response_ack()).
 */
function executeFlush(qp: QueuePair, p: RocePacket): void {
  const bth = p.bth!;
  const reth = p.reth!;
  const feth = p.feth!;
  if (reth.dmaLength > MAX_MSG_SIZE) {
    // C9-94 (rxe_resp_check_length(): a RETH length above 2^31 is a length error, class C).
    classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `FLUSH of ${reth.dmaLength} bytes exceeds the maximum message size`, WcStatus.REM_INV_REQ_ERR);
    return;
  }
  const need = neededAccess(p.info!, p);
  const whole = feth.selectivity === FlushLevel.MR;
  const hit = whole ? qp.ctx.mrs.checkRemoteRegion(qp.pd, reth.rkey, need, qp) : qp.ctx.mrs.checkRemote(qp.pd, reth.rkey, reth.va, reth.dmaLength, need, qp);
  if (hit.fault !== MrFault.OK || hit.mr === null) {
    const what = whole ? 'the whole region' : `va 0x${reth.va.toString(16)} len ${reth.dmaLength}`;
    classCError(
      qp,
      NakCode.REMOTE_ACCESS_ERROR,
      bth.psn,
      `FLUSH (placement type ${feth.placementType}) rkey 0x${reth.rkey.toString(16)} ${what}: ${MR_FAULT_NAMES[hit.fault]}`,
      WcStatus.REM_ACCESS_ERR,
    );
    return;
  }
  if ((feth.placementType & FlushType.PERSISTENT) !== 0) hit.mr.persist?.(hit.offset, whole ? hit.length : reth.dmaLength);
  answerWithReadResponse(qp, bth.psn, 'flush');
}

/**
 * ATOMIC WRITE (IBTA vol. 1 annex A19): its 8 bytes land at an 8-byte aligned address of a region that
 * allows remote write, as one store, after every request before it (rxe atomic_write_reply():
 * smp_store_release; here every earlier request has been executed already, in order). The RETH's
 * length must be the 8 bytes carried (rxe check_rkey(): else a length error, Invalid Request); a
 * region that does not cover them is a Remote Access Error; a misaligned address an Invalid Request
 * (rxe_mr_do_atomic_write(): oA19-28, A19.4.2). Answered by an RDMA READ response of no data.
 */
function executeAtomicWrite(qp: QueuePair, p: RocePacket, frame: Uint8Array, base: number): void {
  const bth = p.bth!;
  const reth = p.reth!;
  if (reth.dmaLength !== 8 || p.payloadLength !== 8) {
    classCError(
      qp,
      NakCode.INVALID_REQUEST,
      bth.psn,
      `ATOMIC WRITE carries ${p.payloadLength} bytes and its RETH says ${reth.dmaLength}: both must be 8`,
      WcStatus.REM_INV_REQ_ERR,
    );
    return;
  }
  const hit = qp.ctx.mrs.checkRemote(qp.pd, reth.rkey, reth.va, 8, Access.REMOTE_WRITE, qp);
  if (hit.fault !== MrFault.OK || hit.mr === null) {
    classCError(
      qp,
      NakCode.REMOTE_ACCESS_ERROR,
      bth.psn,
      `ATOMIC WRITE rkey 0x${reth.rkey.toString(16)} va 0x${reth.va.toString(16)}: ${MR_FAULT_NAMES[hit.fault]}`,
      WcStatus.REM_ACCESS_ERR,
    );
    return;
  }
  if ((reth.va & 7n) !== 0n) {
    classCError(qp, NakCode.INVALID_REQUEST, bth.psn, `ATOMIC WRITE at unaligned address 0x${reth.va.toString(16)}`, WcStatus.REM_INV_REQ_ERR);
    return;
  }
  copyBytes(hit.mr.buffer, hit.offset, frame, base + p.payloadOff, 8);
  answerWithReadResponse(qp, bth.psn, 'atomicWrite');
}

/** Ends a FLUSH or ATOMIC WRITE at `psn`: one message done, its resource kept for a duplicate, the READ response of no data sent. */
function answerWithReadResponse(qp: QueuePair, psn: number, kind: 'flush' | 'atomicWrite'): void {
  const r = qp.resp;
  saveResource(qp, { kind, firstPsn: psn, lastPsn: psn, va: 0n, rkey: 0, length: 0, origData: 0n });
  r.psn = psnAdd(psn, 1);
  r.msn = (r.msn + 1) & 0xffffff;
  r.opcode = -1;
  sendReadResponseAck(qp, psn);
}

/** An RDMA READ RESPONSE ONLY of no data at `psn`, with the AETH of an ACK (rxe send_read_response_ack()). */
function sendReadResponseAck(qp: QueuePair, psn: number): void {
  if (qp.resp.ackHeld) qp.ctx.acks?.release(qp); // a held ACK (stack/ack-coalescer.ts) goes first
  const t: TransportSpec = {
    bth: { opcode: RC_RDMA_READ_RESPONSE_ONLY, destQp: qp.attr.destQpNum, psn },
    aeth: { syndrome: ackSyndrome(qp), msn: qp.resp.msn },
  };
  if (qp.path !== null) qp.ctx.transmit(qp, t, qp.path);
}

/** A request whose PSN is behind the expected one (rxe duplicate_request). */
function duplicate(qp: QueuePair, p: RocePacket, info: OpcodeInfo): void {
  const bth = p.bth!;
  const f = info.flags;
  if ((f & OpFlag.READ) !== 0) {
    const reth = p.reth!;
    const res = qp.resp.resources.find((x) => x.kind === 'read' && psnDiff(bth.psn, x.firstPsn) >= 0 && psnDiff(bth.psn, x.lastPsn) <= 0);
    if (res === undefined || res.rkey !== reth.rkey) return; // class D: no saved request, drop
    const off = psnDiff(bth.psn, res.firstPsn) * qp.mtu;
    // The retried request must ask for the rest of the original range.
    if (reth.va !== res.va + BigInt(off) || reth.dmaLength !== res.length - off) return;
    sendReadResponses(qp, res, bth.psn);
    return;
  }
  if ((f & OpFlag.ATOMIC) !== 0) {
    const res = qp.resp.resources.find((x) => x.kind === 'atomic' && x.firstPsn === bth.psn);
    if (res !== undefined) sendAtomicAck(qp, res); // replay the result; never execute twice
    return;
  }
  if ((f & (OpFlag.FLUSH | OpFlag.ATOMIC_WRITE)) !== 0) {
    // Answered again from the saved resource, not executed again (oA19-14, oA19-15; rxe
    // duplicate_request() -> process_flush() / atomic_write_reply() with res->replay); none: class D, dropped.
    const kind = (f & OpFlag.FLUSH) !== 0 ? 'flush' : 'atomicWrite';
    if (qp.resp.resources.some((x) => x.kind === kind && x.firstPsn === bth.psn)) sendReadResponseAck(qp, bth.psn);
    return;
  }
  // SEND or WRITE: acknowledge again up to the last PSN received (C9-105).
  sendAck(qp, ackSyndrome(qp), psnAdd(qp.resp.psn, -1));
}

/** UD: Q_Key check, one packet per message, the GRH area in front of the data (IBTA §10.8.3.1, §11.4.1.1). */
function udReceive(qp: QueuePair, p: RocePacket, frame: Uint8Array, base: number): void {
  const deth = p.deth;
  if (deth === null) return;
  if (deth.qkey !== qp.attr.qkey) {
    qp.counters.qkey_violation++;
    return;
  }
  const wqe = qp.takeRecvWqe();
  if (wqe === null) return; // UD has no RNR: the datagram is dropped
  const len = p.payloadLength;
  if (len + 40 > wqe.length) {
    qp.postRecvCompletion(wqe, WcStatus.LOC_LEN_ERR, len + 40, 0, 0, deth.srcQp, `datagram of ${len} bytes (+40 GRH) does not fit ${wqe.length}`);
    return;
  }
  const res = resolveSges(qp.ctx.mrs, qp.pd, wqe.sgList, true);
  if (res.fault !== MrFault.OK) {
    qp.postRecvCompletion(wqe, WcStatus.LOC_PROT_ERR, 0, 0, 0, deth.srcQp, `receive SGE: ${MR_FAULT_NAMES[res.fault]}`);
    qp.enterError('UD receive SGE could not be written');
    return;
  }
  // The first 40 bytes get the GRH: the IPv6 header, or for IPv4 20 zero bytes and the IPv4 header (rxe copy of roce4grh).
  const grh = new Uint8Array(40);
  const l3 = base + p.l3Off;
  if ((frame[l3] ?? 0) >>> 4 === 4) grh.set(frame.subarray(l3, l3 + 20), 20);
  else grh.set(frame.subarray(l3, l3 + 40));
  scatterTo(res.segs, 0, grh);
  scatterTo(res.segs, 40, frame, base + p.payloadOff, len);
  let flags = WcFlags.GRH;
  let imm = 0;
  if (p.immDt !== null) {
    flags |= WcFlags.WITH_IMM;
    imm = p.immDt.value;
  }
  qp.postRecvCompletion(wqe, WcStatus.SUCCESS, len + 40, flags, imm, deth.srcQp);
  qp.counters.rdma_recvs++;
}
