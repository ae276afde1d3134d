/**
 * Scripted dialogues: end-to-end flow control credits (IBTA vol. 1 §9.7.7.2). The requester may
 * start a message that takes a receive WQE (SEND, RDMA WRITE with immediate) while its send
 * sequence number is at most LSN + 1, LSN being MSN + credits of the best ACK so far (rdmavt's
 * rvt_rc_credit_avail() and rvt_get_credit()): the one message past the limit solicits a fresh
 * count. Code 31 lifts the limit. The responder advertises
 * the receive WQEs it has left, or code 31 on a shared receive queue (rdmavt rvt_compute_aeth()).
 */
import { scriptedPeer, op, psnPlus, pattern, type InjectSpec, type ScriptedPeer } from '../../support/scripted-peer';
import { CREDITS_INVALID, creditCode, encodeSyndrome } from '../../../packets/aeth';
import { QpType } from '../../../stack/qp-type-and-state';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcStatus } from '../../../stack/work-completion';

const SIG = SendFlags.SIGNALED;
/** An ACK for `psn` whose AETH says MSN `msn` and credit code `code`. */
const ack = (psn: number, msn: number, code: number): InjectSpec => ({
  bth: { opcode: op('RC_ACKNOWLEDGE'), psn },
  aeth: { syndrome: encodeSyndrome('ACK', code), msn },
});
const REMOTE_VA = 0x1_0000_0000n;
const RKEY = 0xabcd;

function send(h: ScriptedPeer, wrId: number): void {
  h.qp.postSend({ wrId, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 16)], sendFlags: SIG });
}
function write(h: ScriptedPeer, wrId: number, imm?: number): void {
  h.qp.postSend({
    wrId,
    opcode: imm === undefined ? WrOpcode.RDMA_WRITE : WrOpcode.RDMA_WRITE_WITH_IMM,
    sgList: [h.mr.sge(0, 16)],
    sendFlags: SIG,
    rdma: { remoteAddr: REMOTE_VA, rkey: RKEY },
    ...(imm === undefined ? {} : { immData: imm }),
  });
}
const sentOps = (h: ScriptedPeer): [string, number][] => h.sent().map((s) => [s.op, s.psn]);
const done = (h: ScriptedPeer): [bigint, number][] => h.completions().map((w) => [w.wrId, w.status]);

describe('RC requester: end-to-end credits', () => {
  test('a fresh QP sends one SEND, stops at the limit, and goes on as ACKs bring credits', () => {
    const h = scriptedPeer({ peerCredits: 'counted' });
    const S = h.sqPsn;
    for (let i = 1; i <= 4; i++) send(h, i);
    // No credits yet (LSN 0): only the message with SSN 1 = LSN + 1 may go.
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', S]]);
    expect(h.qp.counters.rc_crwaits).toBe(1);
    // MSN 1, 0 credits: LSN 1, so SSN 2 goes (the one message past the limit), SSN 3 waits.
    h.inject(ack(S, 1, creditCode(0)));
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 1)]]);
    expect(h.qp.counters.rc_crwaits).toBe(2);
    // MSN 2, 2 credits: LSN 4, so SSN 3 and 4 go.
    h.inject(ack(psnPlus(S, 1), 2, creditCode(2)));
    expect(sentOps(h)).toEqual([
      ['RC_SEND_ONLY', psnPlus(S, 2)],
      ['RC_SEND_ONLY', psnPlus(S, 3)],
    ]);
    h.inject(ack(psnPlus(S, 3), 4, creditCode(1)));
    expect(done(h)).toEqual([1, 2, 3, 4].map((i) => [BigInt(i), WcStatus.SUCCESS]));
    expect(h.qp.counters.rc_crwaits).toBe(2);
  });

  test('WRITE, READ and atomics take no credit and move the limit with the MSN; WRITE with immediate takes one', () => {
    const h = scriptedPeer({ peerCredits: 'counted' });
    const S = h.sqPsn;
    send(h, 1); // SSN 1: the message past LSN 0
    write(h, 2); // SSN 2: no receive WQE; LSN 1
    h.qp.postSend({ wrId: 3, opcode: WrOpcode.RDMA_READ, sgList: [h.mr.sge(0, 16)], sendFlags: SIG, rdma: { remoteAddr: REMOTE_VA, rkey: RKEY } }); // SSN 3; LSN 2
    write(h, 4, 0x77); // SSN 4 > LSN + 1: waits
    expect(sentOps(h)).toEqual([
      ['RC_SEND_ONLY', S],
      ['RC_RDMA_WRITE_ONLY', psnPlus(S, 1)],
      ['RC_RDMA_READ_REQUEST', psnPlus(S, 2)],
    ]);
    expect(h.qp.counters.rc_crwaits).toBe(1);
    // The responder took the SEND and the WRITE (MSN 2) and has one WQE left: LSN 3, SSN 4 may go.
    h.inject(ack(psnPlus(S, 1), 2, creditCode(1)));
    expect(sentOps(h)).toEqual([['RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE', psnPlus(S, 3)]]);
  });

  test('credit code 31 (no flow control, as rxe and SRQ responders send): no limit from then on', () => {
    const h = scriptedPeer({ peerCredits: 'counted' });
    const S = h.sqPsn;
    for (let i = 1; i <= 3; i++) send(h, i);
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', S]]);
    h.inject(ack(S, 1, CREDITS_INVALID));
    expect(sentOps(h).map((x) => x[1])).toEqual([psnPlus(S, 1), psnPlus(S, 2)]);
    // A later count does not bring the limit back (rdmavt: RVT_S_UNLIMITED_CREDIT stays set).
    h.inject(ack(psnPlus(S, 2), 3, creditCode(0)));
    for (let i = 4; i <= 6; i++) send(h, i);
    expect(sentOps(h).map((x) => x[1])).toEqual([3, 4, 5].map((k) => psnPlus(S, k)));
    expect(h.qp.counters.rc_crwaits).toBe(1);
  });

  test('without credits one message at a time goes, each soliciting the next count; an RNR NAK on it is retried as usual', () => {
    const h = scriptedPeer({ peerCredits: 'counted', minRnrTimer: 1 });
    const S = h.sqPsn;
    for (let i = 1; i <= 3; i++) send(h, i);
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', S]]);
    // The responder had no receive WQE: RNR NAK. The probe is resent after the RNR timer, nothing else.
    h.inject({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn: S }, aeth: { syndrome: encodeSyndrome('RNR_NAK', 1), msn: 0 } });
    expect(h.sent()).toEqual([]);
    h.advance(10_000);
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', S]]);
    // Taken, 0 credits left: the next one alone.
    h.inject(ack(S, 1, creditCode(0)));
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 1)]]);
    h.inject(ack(psnPlus(S, 1), 2, creditCode(0)));
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 2)]]);
    h.inject(ack(psnPlus(S, 2), 3, creditCode(0)));
    expect(done(h).map((x) => x[1])).toEqual([WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.SUCCESS]);
  });

  test('a duplicate ACK with a larger count, and a READ response, raise the limit too', () => {
    const h = scriptedPeer({ peerCredits: 'counted' });
    const S = h.sqPsn;
    send(h, 1);
    send(h, 2);
    send(h, 3);
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', S]]);
    h.inject(ack(S, 1, creditCode(0)));
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 1)]]);
    // The application posted receives since: the responder says so again for the same PSN.
    h.inject(ack(S, 1, creditCode(3)));
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 2)]]);
    // A smaller count later does not lower the limit (LSN 4 stays); a READ's response carries a count as well.
    h.inject(ack(psnPlus(S, 2), 3, creditCode(0)));
    h.qp.postSend({ wrId: 4, opcode: WrOpcode.RDMA_READ, sgList: [h.mr.sge(0, 8)], sendFlags: SIG, rdma: { remoteAddr: REMOTE_VA, rkey: RKEY } }); // SSN 4: LSN 5
    for (let i = 5; i <= 7; i++) send(h, i); // SSN 5, and 6 (LSN + 1), go; SSN 7 waits
    expect(sentOps(h).map((x) => x[0])).toEqual(['RC_RDMA_READ_REQUEST', 'RC_SEND_ONLY', 'RC_SEND_ONLY']);
    h.inject({
      bth: { opcode: op('RC_RDMA_READ_RESPONSE_ONLY'), psn: psnPlus(S, 3) },
      aeth: { syndrome: encodeSyndrome('ACK', creditCode(4)), msn: 4 },
      payload: pattern(8),
    });
    expect(sentOps(h)).toEqual([['RC_SEND_ONLY', psnPlus(S, 6)]]);
  });

  test('UC takes no notice of credits', () => {
    const h = scriptedPeer({ peerCredits: 'counted', qpType: QpType.UC });
    for (let i = 1; i <= 3; i++) send(h, i);
    expect(h.sent().map((s) => s.op)).toEqual(['UC_SEND_ONLY', 'UC_SEND_ONLY', 'UC_SEND_ONLY']);
    expect(h.qp.counters.rc_crwaits).toBe(0);
  });
});

describe('RC responder: the credit count it advertises', () => {
  // Receive WQEs posted -> the code (IBTA vol. 1 table 44: the largest count not above them).
  test.each([
    [0, 0],
    [1, 1],
    [3, 3],
    [4, 4],
    [5, 4],
    [6, 5],
    [7, 5],
    [8, 6],
    [11, 6],
    [12, 7],
    [100, 13],
    [1023, 19],
    [1024, 20],
    [4000, 23],
  ])('%i receive WQEs: credit code %i on the ACK of a WRITE, one less WQE after a SEND', (n, code) => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    for (let i = 0; i < n; i++) h.postRecv(i, 0, 64);
    h.inject({
      bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: P, ackReq: true },
      reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 4 },
      payload: pattern(4),
    });
    expect(h.sent().map((s) => [s.op, s.aeth?.syndrome, s.aeth?.msn])).toEqual([['RC_ACKNOWLEDGE', code, 1]]);
    if (n === 0) return;
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(4) });
    expect(h.sent().map((s) => [s.aeth?.kind, s.aeth?.value])).toEqual([['ACK', creditCode(n - 1)]]);
  });

  test('READ responses (first and last) and atomic ACKs carry the count as well', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    for (let i = 0; i < 2; i++) h.postRecv(i, 0, 64);
    h.inject({ bth: { opcode: op('RC_RDMA_READ_REQUEST'), psn: P, ackReq: true }, reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 600 } });
    h.inject({
      bth: { opcode: op('RC_FETCH_ADD'), psn: psnPlus(P, 3), ackReq: true },
      atomicEth: { va: h.mr.addr(1024), rkey: h.mr.rkey, swapAdd: 1n, compare: 0n },
    });
    expect(h.sent().map((s) => [s.op, s.aeth?.value ?? null])).toEqual([
      ['RC_RDMA_READ_RESPONSE_FIRST', 2],
      ['RC_RDMA_READ_RESPONSE_MIDDLE', null],
      ['RC_RDMA_READ_RESPONSE_LAST', 2],
      ['RC_ATOMIC_ACKNOWLEDGE', 2],
    ]);
  });

  test('a QP on a shared receive queue advertises no credits (code 31), whatever the SRQ holds', () => {
    const h = scriptedPeer({ srq: true });
    const P = h.rqPsn;
    for (let i = 0; i < 5; i++) h.postRecv(i, 0, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: P, ackReq: true }, payload: pattern(4) });
    h.inject({
      bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: psnPlus(P, 1), ackReq: true },
      reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 4 },
      payload: pattern(4),
    });
    expect(h.sent().map((s) => [s.aeth?.kind, s.aeth?.value])).toEqual([
      ['ACK', CREDITS_INVALID],
      ['ACK', CREDITS_INVALID],
    ]);
  });
});
