/**
 * Scripted dialogues, responder side: the test plays a remote requester,
 * feeds request packets into one RC QP and asserts the exact frames and
 * completions that come out (IBTA vol. 1 §9.7.5; rxe_resp.c behaviour).
 */
import { scriptedPeer, op, pattern, psnPlus, SYN, PEER_QPN, type Sent, type ScriptedPeer } from '../../support/scripted-peer';
import { QpState } from '../../../stack/qp-type-and-state';
import { Access } from '../../../stack/access-flags';
import { WrOpcode } from '../../../stack/work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from '../../../stack/work-completion';
import { creditCode } from '../../../packets/aeth';

/** The parts of an ACK-like frame the rules are about. */
const brief = (s: Sent): { op: string; psn: number; syn?: number; msn?: number } => ({
  op: s.op,
  psn: s.psn,
  ...(s.aeth !== undefined ? { syn: s.aeth.syndrome, msn: s.aeth.msn } : {}),
});
const ACK = 'RC_ACKNOWLEDGE';
/** The syndrome of an ACK from a QP with `n` receive WQEs left: its end-to-end credit code (IBTA vol. 1 §9.7.7.2). */
const ackWith = (n: number): number => creditCode(n);

function le64(buf: Uint8Array, off: number): bigint {
  return new DataView(buf.buffer, buf.byteOffset).getBigUint64(off, true);
}
function setLe64(buf: Uint8Array, off: number, v: bigint): void {
  new DataView(buf.buffer, buf.byteOffset).setBigUint64(off, v, true);
}

describe('RC responder: SEND', () => {
  test('in-order SEND ONLY with AckReq: exactly one ACK (credits 0, PSN, MSN 1) and a RECV completion with the bytes', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 1024);
    const data = pattern(100, 7);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: P, ackReq: true }, payload: data });
    const out = h.sent();
    expect(out.map(brief)).toEqual([{ op: ACK, psn: P, syn: ackWith(0), msn: 1 }]);
    expect(out[0]?.destQp).toBe(PEER_QPN);
    expect(h.completions()).toEqual([
      { wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 100, qpNum: h.qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
    ]);
    expect(Buffer.from(h.buf.subarray(0, 100)).equals(Buffer.from(data))).toBe(true);
    expect(h.qp.resp.psn).toBe(psnPlus(P, 1));
  });

  test('SEND FIRST/MIDDLE/LAST with AckReq only on LAST: one coalesced ACK for the LAST, two deferred', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(7, 0, 2048);
    const data = pattern(256 * 2 + 40, 3);
    h.inject(
      { bth: { opcode: op('RC_SEND_FIRST'), psn: P }, payload: data.subarray(0, 256) },
      { bth: { opcode: op('RC_SEND_MIDDLE'), psn: psnPlus(P, 1) }, payload: data.subarray(256, 512) },
    );
    expect(h.sent()).toEqual([]);
    expect(h.completions()).toEqual([]);
    h.inject({ bth: { opcode: op('RC_SEND_LAST'), psn: psnPlus(P, 2), ackReq: true }, payload: data.subarray(512) });
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 2), syn: ackWith(0), msn: 1 }]);
    expect(h.qp.counters.ack_deferred).toBe(2);
    expect(h.completions()).toMatchObject([{ wrId: 7n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 552 }]);
    expect(Buffer.from(h.buf.subarray(0, 552)).equals(Buffer.from(data))).toBe(true);
  });

  test('SEND with immediate: completion has WITH_IMM and the immediate value', () => {
    const h = scriptedPeer();
    h.postRecv(2, 0, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY_WITH_IMMEDIATE'), psn: h.rqPsn, ackReq: true }, immDt: 0xcafef00d, payload: pattern(10) });
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: h.rqPsn, syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toMatchObject([
      { wrId: 2n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 10, wcFlags: WcFlags.WITH_IMM, immData: 0xcafef00d },
    ]);
  });

  test('SEND with invalidate of a fast-registered key: WITH_INV completion, and the R_Key no longer admits a WRITE (NAK remote access, QP to ERR)', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    // rxe invalidates fast-registration regions only (rxe_invalidate_mr()): one bound by a REG_MR of this QP.
    const other = { mr: h.dev.allocMr(h.pd, 1), buf: new Uint8Array(4096) };
    h.dev.mapMrSg(other.mr, other.buf, 0x5000_0000n);
    h.qp.postSend({
      wrId: 90,
      opcode: WrOpcode.REG_MR,
      reg: { mr: other.mr, key: ((other.mr.lkey & ~0xff) | 0x42) >>> 0, access: Access.LOCAL_WRITE | Access.REMOTE_WRITE },
    });
    h.advance(0);
    expect(other.mr.valid).toBe(true);
    h.postRecv(3, 0, 64);
    h.postRecv(4, 64, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY_WITH_INVALIDATE'), psn: P, ackReq: true }, ieth: other.mr.rkey, payload: pattern(8) });
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: P, syn: ackWith(1), msn: 1 }]);
    expect(h.completions()).toMatchObject([{ wrId: 3n, status: WcStatus.SUCCESS, wcFlags: WcFlags.WITH_INV, immData: other.mr.rkey }]);
    expect(other.mr.valid).toBe(false);
    h.inject({
      bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: psnPlus(P, 1), ackReq: true },
      reth: { va: other.mr.addr(0), rkey: other.mr.rkey, dmaLength: 16 },
      payload: pattern(16, 1),
    });
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 1), syn: SYN.NAK_REM_ACCESS, msn: 1 }]);
    expect(other.buf.subarray(0, 16).every((b) => b === 0)).toBe(true);
    expect(h.qp.state).toBe(QpState.ERR);
    expect(h.completions()).toMatchObject([{ wrId: 4n, status: WcStatus.WR_FLUSH_ERR }]);
  });

  test('SEND with no receive WQE: RNR NAK (0x20|min_rnr_timer) with the packet PSN; ePSN stays; the retry is accepted', () => {
    const h = scriptedPeer({ minRnrTimer: 5 });
    const P = h.rqPsn;
    const send = { bth: { opcode: op('RC_SEND_ONLY'), psn: P, ackReq: true }, payload: pattern(20) };
    h.inject(send);
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: P, syn: 0x20 | 5, msn: 0 }]);
    expect(h.qp.resp.psn).toBe(P);
    expect(h.qp.counters.send_rnr_err).toBe(1);
    expect(h.completions()).toEqual([]);
    h.postRecv(9, 0, 64);
    h.inject(send);
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: P, syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toMatchObject([{ wrId: 9n, status: WcStatus.SUCCESS, byteLen: 20 }]);
  });

  test('RNR NAK on a SEND FIRST: the MIDDLE that follows gets one NAK PSN sequence error for the same PSN, the LAST nothing', () => {
    const h = scriptedPeer({ minRnrTimer: 1 });
    const P = h.rqPsn;
    const msg = [
      { bth: { opcode: op('RC_SEND_FIRST'), psn: P }, payload: pattern(256) },
      { bth: { opcode: op('RC_SEND_MIDDLE'), psn: psnPlus(P, 1) }, payload: pattern(256) },
      { bth: { opcode: op('RC_SEND_LAST'), psn: psnPlus(P, 2), ackReq: true }, payload: pattern(4) },
    ];
    h.inject(...msg);
    expect(h.sent().map(brief)).toEqual([
      { op: ACK, psn: P, syn: 0x21, msn: 0 },
      { op: ACK, psn: P, syn: SYN.NAK_SEQ, msn: 0 },
    ]);
    h.postRecv(1, 0, 1024);
    h.inject(...msg);
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 2), syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, byteLen: 516 }]);
  });

  test('duplicate SEND: re-ACK with PSN ePSN-1 (C9-105), MSN unchanged, no second completion', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 64);
    h.postRecv(2, 64, 64);
    const send = { bth: { opcode: op('RC_SEND_ONLY'), psn: P, ackReq: true }, payload: pattern(20) };
    h.inject(send, { bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(5) });
    expect(h.sent().map(brief)).toEqual([
      { op: ACK, psn: P, syn: ackWith(1), msn: 1 },
      { op: ACK, psn: psnPlus(P, 1), syn: ackWith(0), msn: 2 },
    ]);
    expect(h.completions()).toHaveLength(2);
    h.buf.fill(0xee, 0, 20);
    h.inject(send);
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 1), syn: ackWith(0), msn: 2 }]);
    expect(h.completions()).toEqual([]);
    expect(h.buf.subarray(0, 20).every((b) => b === 0xee)).toBe(true); // not placed again
    expect(h.qp.counters.duplicate_request).toBe(1);
  });
});

describe('RC responder: PSN sequence errors (class B)', () => {
  test('a PSN ahead of ePSN: exactly one NAK PSN sequence error with PSN = ePSN, later ones dropped, then the missing PSN is ACKed', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    for (let i = 0; i < 4; i++) h.postRecv(i, i * 64, 64);
    const send = (k: number) => ({ bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, k), ackReq: true }, payload: pattern(8, k) });
    h.inject(send(2));
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: P, syn: SYN.NAK_SEQ, msn: 0 }]);
    h.inject(send(3), send(2), send(1));
    expect(h.sent()).toEqual([]); // one NAK per gap
    expect(h.completions()).toEqual([]);
    h.inject(send(0));
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: P, syn: ackWith(3), msn: 1 }]);
    h.inject(send(1), send(2));
    expect(h.sent().map(brief)).toEqual([
      { op: ACK, psn: psnPlus(P, 1), syn: ackWith(2), msn: 2 },
      { op: ACK, psn: psnPlus(P, 2), syn: ackWith(1), msn: 3 },
    ]);
    expect(h.completions().map((w) => w.wrId)).toEqual([0n, 1n, 2n]);
    expect(h.qp.counters.send_seq_err_nak).toBe(1);
    expect(h.qp.counters.out_of_seq_request).toBe(4);
  });

  test('a new gap after recovery gets its own NAK', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    for (let i = 0; i < 4; i++) h.postRecv(i, i * 64, 64);
    const send = (k: number) => ({ bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, k), ackReq: true }, payload: pattern(8, k) });
    h.inject(send(1));
    h.inject(send(0), send(2));
    h.inject(send(3));
    expect(h.sent().map(brief)).toEqual([
      { op: ACK, psn: P, syn: SYN.NAK_SEQ, msn: 0 },
      { op: ACK, psn: P, syn: ackWith(3), msn: 1 },
      { op: ACK, psn: psnPlus(P, 1), syn: SYN.NAK_SEQ, msn: 1 },
    ]);
  });

  test('PSNs wrap at 2^24', () => {
    const h = scriptedPeer({ rqPsn: 0xffffff });
    h.postRecv(1, 0, 1024);
    const data = pattern(300);
    h.inject(
      { bth: { opcode: op('RC_SEND_FIRST'), psn: 0xffffff }, payload: data.subarray(0, 256) },
      { bth: { opcode: op('RC_SEND_LAST'), psn: 0, ackReq: true }, payload: data.subarray(256) },
    );
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: 0, syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toMatchObject([{ status: WcStatus.SUCCESS, byteLen: 300 }]);
  });
});

describe('RC responder: RDMA WRITE', () => {
  test('WRITE FIRST/LAST lands in the region; one ACK; no receive WQE used', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 64);
    const data = pattern(256 + 99, 11);
    h.inject(
      {
        bth: { opcode: op('RC_RDMA_WRITE_FIRST'), psn: P },
        reth: { va: h.mr.addr(1000), rkey: h.mr.rkey, dmaLength: data.length },
        payload: data.subarray(0, 256),
      },
      { bth: { opcode: op('RC_RDMA_WRITE_LAST'), psn: psnPlus(P, 1), ackReq: true }, payload: data.subarray(256) },
    );
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 1), syn: ackWith(1), msn: 1 }]);
    expect(Buffer.from(h.buf.subarray(1000, 1000 + data.length)).equals(Buffer.from(data))).toBe(true);
    expect(h.buf[999]).toBe(0);
    expect(h.buf[1000 + data.length]).toBe(0);
    expect(h.completions()).toEqual([]);
    expect(h.qp.rq).toHaveLength(1);
  });

  test('WRITE ONLY with immediate: RECV_RDMA_WITH_IMM completion with byteLen = write length', () => {
    const h = scriptedPeer();
    h.postRecv(5, 0, 0);
    const data = pattern(200, 1);
    h.inject({
      bth: { opcode: op('RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE'), psn: h.rqPsn, ackReq: true },
      reth: { va: h.mr.addr(4096), rkey: h.mr.rkey, dmaLength: 200 },
      immDt: 0x1234,
      payload: data,
    });
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: h.rqPsn, syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toEqual([
      {
        wrId: 5n,
        status: WcStatus.SUCCESS,
        opcode: WcOpcode.RECV_RDMA_WITH_IMM,
        byteLen: 200,
        qpNum: h.qp.qpNum,
        srcQp: 0,
        wcFlags: WcFlags.WITH_IMM,
        immData: 0x1234,
        vendorErr: '',
      },
    ]);
    expect(Buffer.from(h.buf.subarray(4096, 4296)).equals(Buffer.from(data))).toBe(true);
  });

  test('WRITE FIRST + LAST with immediate: the WQE is taken at the LAST, byteLen covers the whole write', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(6, 0, 16);
    const data = pattern(300, 2);
    h.inject(
      { bth: { opcode: op('RC_RDMA_WRITE_FIRST'), psn: P }, reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 300 }, payload: data.subarray(0, 256) },
      { bth: { opcode: op('RC_RDMA_WRITE_LAST_WITH_IMMEDIATE'), psn: psnPlus(P, 1), ackReq: true }, immDt: 77, payload: data.subarray(256) },
    );
    expect(h.sent().map(brief)).toEqual([{ op: ACK, psn: psnPlus(P, 1), syn: ackWith(0), msn: 1 }]);
    expect(h.completions()).toMatchObject([{ wrId: 6n, opcode: WcOpcode.RECV_RDMA_WITH_IMM, byteLen: 300, immData: 77, wcFlags: WcFlags.WITH_IMM }]);
  });

  test('duplicate WRITE: re-ACK only, the data is not written again', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    const w = {
      bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: P, ackReq: true },
      reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 4 },
      payload: pattern(4, 1),
    };
    h.inject(w);
    h.buf.fill(9, 0, 4);
    h.inject(w);
    expect(h.sent().map(brief)).toEqual([
      { op: ACK, psn: P, syn: ackWith(0), msn: 1 },
      { op: ACK, psn: P, syn: ackWith(0), msn: 1 },
    ]);
    expect([...h.buf.subarray(0, 4)]).toEqual([9, 9, 9, 9]);
  });
});

describe('RC responder: RDMA READ', () => {
  function readSetup(): { h: ScriptedPeer; P: number; req: (psn: number, off: number, len: number) => Parameters<ScriptedPeer['inject']>[0] } {
    const h = scriptedPeer();
    h.buf.set(pattern(h.buf.length, 5));
    const req = (psn: number, off: number, len: number) => ({
      bth: { opcode: op('RC_RDMA_READ_REQUEST'), psn, ackReq: true },
      reth: { va: h.mr.addr(off), rkey: h.mr.rkey, dmaLength: len },
    });
    return { h, P: h.rqPsn, req };
  }

  test('READ of 700 bytes: FIRST/MIDDLE/LAST responses, AETH on FIRST and LAST, ePSN advanced by 3', () => {
    const { h, P, req } = readSetup();
    h.inject(req(P, 100, 700));
    const out = h.sent();
    expect(out.map(brief)).toEqual([
      { op: 'RC_RDMA_READ_RESPONSE_FIRST', psn: P, syn: ackWith(0), msn: 1 },
      { op: 'RC_RDMA_READ_RESPONSE_MIDDLE', psn: psnPlus(P, 1) },
      { op: 'RC_RDMA_READ_RESPONSE_LAST', psn: psnPlus(P, 2), syn: ackWith(0), msn: 1 },
    ]);
    expect(out.map((s) => s.payload.length)).toEqual([256, 256, 188]);
    expect(Buffer.concat(out.map((s) => s.payload)).equals(Buffer.from(h.buf.subarray(100, 800)))).toBe(true);
    expect(h.qp.resp.psn).toBe(psnPlus(P, 3));
  });

  test('duplicate READ: the responses are replayed from the saved resource, same bytes', () => {
    const { h, P, req } = readSetup();
    h.inject(req(P, 100, 700));
    const first = h.sent();
    h.inject(req(P, 100, 700));
    const again = h.sent();
    expect(again.map((s) => [s.op, s.psn])).toEqual(first.map((s) => [s.op, s.psn]));
    expect(again.map((s) => Buffer.from(s.payload).toString('hex'))).toEqual(first.map((s) => Buffer.from(s.payload).toString('hex')));
    expect(h.qp.resp.psn).toBe(psnPlus(P, 3));
    expect(h.qp.counters.duplicate_request).toBe(1);
  });

  test("duplicate READ from the middle (PSN inside the range, RETH va/len adjusted): responses from there on, with the original reply's opcodes", () => {
    // rxe answers such a retry as a replay of the reply (MIDDLE, then LAST), and its completer, holding
    // the first responses, takes a FIRST only at the READ's first PSN (rxe_resp.c read_reply(), rxe_comp.c check_ack()).
    const { h, P, req } = readSetup();
    h.inject(req(P, 100, 700));
    h.sent();
    h.inject(req(psnPlus(P, 1), 100 + 256, 700 - 256));
    const out = h.sent();
    expect(out.map(brief)).toEqual([
      { op: 'RC_RDMA_READ_RESPONSE_MIDDLE', psn: psnPlus(P, 1) },
      { op: 'RC_RDMA_READ_RESPONSE_LAST', psn: psnPlus(P, 2), syn: ackWith(0), msn: 1 },
    ]);
    expect(Buffer.concat(out.map((s) => s.payload)).equals(Buffer.from(h.buf.subarray(356, 800)))).toBe(true);
    // The last packet alone: a READ RESPONSE LAST.
    h.inject(req(psnPlus(P, 2), 100 + 512, 700 - 512));
    expect(h.sent().map((s) => [s.op, s.psn, s.payload.length])).toEqual([['RC_RDMA_READ_RESPONSE_LAST', psnPlus(P, 2), 188]]);
  });

  test('a duplicate READ that does not match the saved request is dropped silently (class D)', () => {
    const { h, P, req } = readSetup();
    h.inject(req(P, 100, 700));
    h.sent();
    h.inject(req(psnPlus(P, 1), 100, 700)); // va not advanced
    h.inject({ ...req(P, 100, 700), reth: { va: h.mr.addr(100), rkey: (h.mr.rkey ^ 0x100) >>> 0, dmaLength: 700 } });
    expect(h.sent()).toEqual([]);
    expect(h.qp.state).toBe(QpState.RTS);
  });

  test('READ of 0 bytes: one READ RESPONSE ONLY without payload', () => {
    const { h, P } = readSetup();
    h.inject({ bth: { opcode: op('RC_RDMA_READ_REQUEST'), psn: P, ackReq: true }, reth: { va: 0n, rkey: 0, dmaLength: 0 } });
    const out = h.sent();
    expect(out.map(brief)).toEqual([{ op: 'RC_RDMA_READ_RESPONSE_ONLY', psn: P, syn: ackWith(0), msn: 1 }]);
    expect(out[0]?.payload.length).toBe(0);
    expect(h.qp.resp.psn).toBe(psnPlus(P, 1));
  });
});

describe('RC responder: atomics', () => {
  const atomic = (h: ScriptedPeer, name: 'RC_COMPARE_SWAP' | 'RC_FETCH_ADD', psn: number, off: number, swapAdd: bigint, compare = 0n) => ({
    bth: { opcode: op(name), psn, ackReq: true },
    atomicEth: { va: h.mr.addr(off), rkey: h.mr.rkey, swapAdd, compare },
  });

  test('CMP_SWAP hit swaps, miss does not; both return the original value', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    setLe64(h.buf, 64, 42n);
    h.inject(atomic(h, 'RC_COMPARE_SWAP', P, 64, 99n, 42n));
    h.inject(atomic(h, 'RC_COMPARE_SWAP', psnPlus(P, 1), 64, 7n, 42n));
    const out = h.sent();
    expect(out.map((s) => ({ ...brief(s), orig: s.origData }))).toEqual([
      { op: 'RC_ATOMIC_ACKNOWLEDGE', psn: P, syn: ackWith(0), msn: 1, orig: 42n },
      { op: 'RC_ATOMIC_ACKNOWLEDGE', psn: psnPlus(P, 1), syn: ackWith(0), msn: 2, orig: 99n },
    ]);
    expect(le64(h.buf, 64)).toBe(99n);
  });

  test('FETCH_ADD adds modulo 2^64 and returns the original value', () => {
    const h = scriptedPeer();
    setLe64(h.buf, 8, 0xffff_ffff_ffff_fff0n);
    h.inject(atomic(h, 'RC_FETCH_ADD', h.rqPsn, 8, 0x20n));
    expect(h.sent().map((s) => [s.op, s.psn, s.origData])).toEqual([['RC_ATOMIC_ACKNOWLEDGE', h.rqPsn, 0xffff_ffff_ffff_fff0n]]);
    expect(le64(h.buf, 8)).toBe(0x10n);
  });

  test('duplicate atomic: the same original value is replayed and memory is not modified twice', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    setLe64(h.buf, 0, 100n);
    const a = atomic(h, 'RC_FETCH_ADD', P, 0, 5n);
    h.inject(a);
    h.inject(a);
    h.inject(a);
    expect(h.sent().map((s) => [s.op, s.psn, s.origData])).toEqual([
      ['RC_ATOMIC_ACKNOWLEDGE', P, 100n],
      ['RC_ATOMIC_ACKNOWLEDGE', P, 100n],
      ['RC_ATOMIC_ACKNOWLEDGE', P, 100n],
    ]);
    expect(le64(h.buf, 0)).toBe(105n);
    expect(h.qp.resp.psn).toBe(psnPlus(P, 1));
  });
});
