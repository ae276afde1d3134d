/**
 * Scripted dialogues, requester and completer side: the test posts work on
 * one RC QP, reads the request packets it sends and plays the remote
 * responder by injecting ACKs, NAKs and READ responses (IBTA vol. 1
 * §9.7.5-9.7.6, §10.8; rxe_req.c / rxe_comp.c behaviour).
 */
import { scriptedPeer, op, pattern, psnPlus, SYN, type InjectSpec, type ScriptedPeer, type Sent } from '../../support/scripted-peer';
import { QpState } from '../../../stack/qp-type-and-state';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcOpcode, WcStatus } from '../../../stack/work-completion';
import { localAckTimeoutNs } from '../../../stack/qp-attributes';

const SIG = SendFlags.SIGNALED;
const ack = (psn: number, msn = 1, syndrome: number = SYN.ACK): InjectSpec => ({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn }, aeth: { syndrome, msn } });
const readResp = (name: 'FIRST' | 'MIDDLE' | 'LAST' | 'ONLY', psn: number, payload: Uint8Array, msn = 1): InjectSpec =>
  name === 'MIDDLE'
    ? { bth: { opcode: op('RC_RDMA_READ_RESPONSE_MIDDLE'), psn }, payload }
    : { bth: { opcode: op(`RC_RDMA_READ_RESPONSE_${name}`), psn }, aeth: { syndrome: SYN.ACK, msn }, payload };
/** Opcode, PSN, AckReq. */
const ops = (ss: Sent[]): [string, number, boolean][] => ss.map((s) => [s.op, s.psn, s.ackReq]);
const status = (h: ScriptedPeer): [bigint, number][] => h.completions().map((w) => [w.wrId, w.status]);
const REMOTE_VA = 0x1_0000_0000n;
const RKEY = 0xabcd;

function send(h: ScriptedPeer, wrId: number, off: number, len: number, flags: number = SIG): void {
  h.qp.postSend({ wrId, opcode: WrOpcode.SEND, sgList: [h.mr.sge(off, len)], sendFlags: flags });
}
function read(h: ScriptedPeer, wrId: number, off: number, len: number, flags: number = SIG, remoteOff = 0n): void {
  h.qp.postSend({ wrId, opcode: WrOpcode.RDMA_READ, sgList: [h.mr.sge(off, len)], sendFlags: flags, rdma: { remoteAddr: REMOTE_VA + remoteOff, rkey: RKEY } });
}

describe('RC requester: ACKs', () => {
  test('an ACK completes a SEND', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    h.buf.set(pattern(100, 4));
    send(h, 1, 0, 100);
    const out = h.sent();
    expect(ops(out)).toEqual([['RC_SEND_ONLY', S, true]]);
    expect(Buffer.from(out[0]!.payload).equals(Buffer.from(h.buf.subarray(0, 100)))).toBe(true);
    expect(h.completions()).toEqual([]);
    h.inject(ack(S));
    expect(h.completions()).toEqual([
      { wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.SEND, byteLen: 0, qpNum: h.qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
    ]);
    expect(h.sent()).toEqual([]);
  });

  test('a multi-packet SEND: FIRST/MIDDLE/LAST, AckReq on the LAST only', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 256 * 3 + 1);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_FIRST', S, false],
      ['RC_SEND_MIDDLE', psnPlus(S, 1), false],
      ['RC_SEND_MIDDLE', psnPlus(S, 2), false],
      ['RC_SEND_LAST', psnPlus(S, 3), true],
    ]);
  });

  test('ACK coalescing: one ACK for the last PSN completes several WQEs (implied ACK)', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    h.qp.postSend({ wrId: 2, opcode: WrOpcode.RDMA_WRITE, sgList: [h.mr.sge(0, 300)], sendFlags: SIG, rdma: { remoteAddr: REMOTE_VA, rkey: RKEY } });
    send(h, 3, 0, 10);
    const out = h.sent();
    expect(ops(out)).toEqual([
      ['RC_SEND_ONLY', S, true],
      ['RC_RDMA_WRITE_FIRST', psnPlus(S, 1), false],
      ['RC_RDMA_WRITE_LAST', psnPlus(S, 2), true],
      ['RC_SEND_ONLY', psnPlus(S, 3), true],
    ]);
    expect(out[1]?.reth).toEqual({ va: REMOTE_VA, rkey: RKEY, len: 300 });
    h.inject(ack(psnPlus(S, 3), 3));
    expect(h.completions().map((w) => [w.wrId, w.status, w.opcode])).toEqual([
      [1n, WcStatus.SUCCESS, WcOpcode.SEND],
      [2n, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE],
      [3n, WcStatus.SUCCESS, WcOpcode.SEND],
    ]);
  });

  test('an ACK in the middle of a message acknowledges up to there, without completing it', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 1024);
    h.sent();
    h.inject(ack(psnPlus(S, 1)));
    expect(h.completions()).toEqual([]);
    expect(h.qp.comp.psn).toBe(psnPlus(S, 2));
    h.inject(ack(psnPlus(S, 3)));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });

  test('a ghost ACK for a PSN never sent is ignored', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    h.sent();
    h.inject(ack(psnPlus(S, 10)));
    h.inject(ack(psnPlus(S, -1)));
    expect(h.completions()).toEqual([]);
    expect(h.sent()).toEqual([]);
    h.inject(ack(S));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });

  test('a ghost ACK for a PSN assigned but not yet sent (window closed) is ignored', () => {
    const h = scriptedPeer({ maxUnackedPsns: 4 });
    const S = h.sqPsn;
    send(h, 1, 0, 256 * 8);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_FIRST', S, false],
      ['RC_SEND_MIDDLE', psnPlus(S, 1), false],
      ['RC_SEND_MIDDLE', psnPlus(S, 2), false],
      ['RC_SEND_MIDDLE', psnPlus(S, 3), true], // the window is about to close: ask for an ACK
    ]);
    h.inject(ack(psnPlus(S, 7)));
    expect(h.completions()).toEqual([]);
    expect(h.sent()).toEqual([]);
    h.inject(ack(psnPlus(S, 3)));
    expect(ops(h.sent()).map((x) => x[1])).toEqual([4, 5, 6, 7].map((k) => psnPlus(S, k)));
    h.inject(ack(psnPlus(S, 7)));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });

  test('unsignaled WRs give no CQE on success, but an error still does', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10, 0);
    h.sent();
    h.inject(ack(S));
    expect(h.completions()).toEqual([]);
    send(h, 2, 0, 10, 0);
    send(h, 3, 0, 10, 0);
    h.sent();
    h.inject(ack(psnPlus(S, 1), 2, SYN.NAK_REM_ACCESS));
    expect(status(h)).toEqual([
      [2n, WcStatus.REM_ACCESS_ERR],
      [3n, WcStatus.WR_FLUSH_ERR],
    ]);
  });
});

describe('RC requester: NAK PSN sequence error (go-back-N)', () => {
  test('mid-SEND: resent from the NAK PSN with MIDDLE/LAST opcodes', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    h.buf.set(pattern(1024, 9));
    send(h, 1, 0, 1024);
    const first = h.sent();
    h.inject(ack(psnPlus(S, 2), 0, SYN.NAK_SEQ));
    const again = h.sent();
    expect(ops(again)).toEqual([
      ['RC_SEND_MIDDLE', psnPlus(S, 2), false],
      ['RC_SEND_LAST', psnPlus(S, 3), true],
    ]);
    expect(again.map((s) => Buffer.from(s.payload).toString('hex'))).toEqual(first.slice(2).map((s) => Buffer.from(s.payload).toString('hex')));
    expect(h.qp.counters.rcvd_seq_err).toBe(1);
    h.inject(ack(psnPlus(S, 3)));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });

  test('mid-WRITE: MIDDLE (no RETH) and LAST; at the first PSN: FIRST with the RETH again', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    h.qp.postSend({ wrId: 1, opcode: WrOpcode.RDMA_WRITE, sgList: [h.mr.sge(0, 700)], sendFlags: SIG, rdma: { remoteAddr: REMOTE_VA, rkey: RKEY } });
    h.sent();
    h.inject(ack(psnPlus(S, 1), 0, SYN.NAK_SEQ));
    const a = h.sent();
    expect(ops(a)).toEqual([
      ['RC_RDMA_WRITE_MIDDLE', psnPlus(S, 1), false],
      ['RC_RDMA_WRITE_LAST', psnPlus(S, 2), true],
    ]);
    expect(a[0]?.reth).toBeUndefined();
    h.inject(ack(S, 0, SYN.NAK_SEQ)); // stale NAK (PSN behind the retry point): ignored
    expect(h.sent()).toEqual([]);
  });

  test('a NAK for a later message implicitly ACKs the earlier ones and resends from its PSN', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    send(h, 2, 0, 10);
    send(h, 3, 0, 10);
    h.sent();
    h.inject(ack(psnPlus(S, 1), 1, SYN.NAK_SEQ));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_ONLY', psnPlus(S, 1), true],
      ['RC_SEND_ONLY', psnPlus(S, 2), true],
    ]);
  });

  test('a READ retried mid-way: READ REQUEST at PSN X, RETH va advanced by (X-first)*mtu and length reduced', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    read(h, 1, 0, 1024);
    expect(h.sent().map((s) => [s.op, s.psn, s.reth])).toEqual([['RC_RDMA_READ_REQUEST', S, { va: REMOTE_VA, rkey: RKEY, len: 1024 }]]);
    const remote = pattern(1024, 77);
    h.inject(readResp('FIRST', S, remote.subarray(0, 256)), readResp('MIDDLE', psnPlus(S, 1), remote.subarray(256, 512)));
    h.inject(ack(psnPlus(S, 2), 1, SYN.NAK_SEQ));
    expect(h.sent().map((s) => [s.op, s.psn, s.reth])).toEqual([['RC_RDMA_READ_REQUEST', psnPlus(S, 2), { va: REMOTE_VA + 512n, rkey: RKEY, len: 512 }]]);
    h.inject(readResp('FIRST', psnPlus(S, 2), remote.subarray(512, 768)), readResp('LAST', psnPlus(S, 3), remote.subarray(768)));
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.RDMA_READ, byteLen: 1024 }]);
    expect(Buffer.from(h.buf.subarray(0, 1024)).equals(Buffer.from(remote))).toBe(true);
  });
});

describe('RC requester: local ACK timeout', () => {
  const T = localAckTimeoutNs(10); // 4.096 us * 2^10

  test('nothing before 4.096us*2^timeout, then retransmission from the first unacknowledged PSN', () => {
    const h = scriptedPeer({ timeout: 10 });
    const S = h.sqPsn;
    send(h, 1, 0, 1024);
    expect(h.sent()).toHaveLength(4);
    h.inject(ack(psnPlus(S, 1))); // progress restarts the timer
    h.advance(T - 1);
    expect(h.sent()).toEqual([]);
    h.advance(1);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_MIDDLE', psnPlus(S, 2), false],
      ['RC_SEND_LAST', psnPlus(S, 3), true],
    ]);
    expect(h.qp.counters.local_ack_timeout_err).toBe(1);
    expect(h.qp.counters.retransmitted_pkts).toBe(2);
  });

  test('a READ times out after its first response: READ REQUEST for the rest', () => {
    const h = scriptedPeer({ timeout: 10 });
    const S = h.sqPsn;
    read(h, 1, 0, 1024, SIG, 4096n);
    h.sent();
    h.inject(readResp('FIRST', S, pattern(256)));
    h.advance(T);
    expect(h.sent().map((s) => [s.op, s.psn, s.reth])).toEqual([
      ['RC_RDMA_READ_REQUEST', psnPlus(S, 1), { va: REMOTE_VA + 4096n + 256n, rkey: RKEY, len: 768 }],
    ]);
  });

  test('retry_cnt exhaustion: RETRY_EXC_ERR, then WR_FLUSH_ERR for the rest, QP in ERR', () => {
    const h = scriptedPeer({ timeout: 10, retryCnt: 2 });
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    send(h, 2, 0, 10);
    const both = [
      ['RC_SEND_ONLY', S, true],
      ['RC_SEND_ONLY', psnPlus(S, 1), true],
    ];
    expect(ops(h.sent())).toEqual(both);
    h.advance(T);
    expect(ops(h.sent())).toEqual(both);
    h.advance(T);
    expect(ops(h.sent())).toEqual(both);
    expect(h.completions()).toEqual([]);
    h.advance(T);
    expect(h.sent()).toEqual([]);
    expect(status(h)).toEqual([
      [1n, WcStatus.RETRY_EXC_ERR],
      [2n, WcStatus.WR_FLUSH_ERR],
    ]);
    expect(h.qp.state).toBe(QpState.ERR);
    expect(h.qp.counters.retry_exceeded_err).toBe(1);
    h.advance(10 * T);
    expect(h.sent()).toEqual([]);
  });

  test('timeout 0 means no local ACK timer at all', () => {
    const h = scriptedPeer({ timeout: 0 });
    send(h, 1, 0, 10);
    h.sent();
    h.advance(10e9);
    expect(h.sent()).toEqual([]);
  });
});

describe('RC requester: RNR NAK', () => {
  const RNR_14 = 1_280_000; // timer code 14 = 1.28 ms (IBTA table 45)

  test('waits the RNR timer: nothing before, the packet again after', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    send(h, 2, 0, 10);
    h.sent();
    h.inject(ack(S, 0, SYN.rnr(14)));
    expect(h.sent()).toEqual([]);
    h.advance(RNR_14 - 1);
    expect(h.sent()).toEqual([]);
    h.advance(1);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_ONLY', S, true],
      ['RC_SEND_ONLY', psnPlus(S, 1), true],
    ]);
    expect(h.qp.counters.rcvd_rnr_err).toBe(1);
    h.inject(ack(psnPlus(S, 1), 2));
    expect(status(h)).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
    ]);
  });

  test('the NAK PSN sequence error that follows an RNR NAK for the same PSN costs no retry and does not cut the wait short', () => {
    const h = scriptedPeer({ retryCnt: 1 });
    const S = h.sqPsn;
    send(h, 1, 0, 600);
    h.sent();
    h.inject(ack(S, 0, SYN.rnr(14)), ack(S, 0, SYN.NAK_SEQ));
    expect(h.sent()).toEqual([]);
    expect(h.qp.comp.retryLeft).toBe(1);
    h.advance(RNR_14);
    expect(ops(h.sent())).toEqual([
      ['RC_SEND_FIRST', S, false],
      ['RC_SEND_MIDDLE', psnPlus(S, 1), false],
      ['RC_SEND_LAST', psnPlus(S, 2), true],
    ]);
    h.inject(ack(psnPlus(S, 2)));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });

  test('that sequence NAK taken only after the RNR wait (a process late to its ring) starts no second go-back-N', () => {
    const h = scriptedPeer({ retryCnt: 1 });
    const S = h.sqPsn;
    send(h, 1, 0, 600);
    send(h, 2, 0, 600);
    h.sent();
    h.inject(ack(S, 0, SYN.rnr(14)));
    h.advance(RNR_14);
    expect(ops(h.sent()).map(([, psn]) => psn)).toEqual([0, 1, 2, 3, 4, 5].map((i) => psnPlus(S, i)));
    h.inject(ack(S, 0, SYN.NAK_SEQ)); // sent right after the RNR NAK, taken only now
    expect(h.sent()).toEqual([]);
    expect(h.qp.comp.retryLeft).toBe(1);
    expect(h.qp.counters.completer_retry_err).toBe(1);
    h.inject(ack(psnPlus(S, 5), 2));
    expect(status(h)).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
    ]);
  });

  test('a repeated sequence NAK for the PSN already gone back to, with no progress since, is ignored; the local ACK timer still retries', () => {
    const h = scriptedPeer({ retryCnt: 3 });
    const S = h.sqPsn;
    send(h, 1, 0, 600);
    h.sent();
    h.inject(ack(psnPlus(S, 1), 0, SYN.NAK_SEQ));
    expect(ops(h.sent()).map(([, psn]) => psn)).toEqual([psnPlus(S, 1), psnPlus(S, 2)]);
    h.inject(ack(psnPlus(S, 1), 0, SYN.NAK_SEQ));
    expect(h.sent()).toEqual([]);
    expect(h.qp.comp.retryLeft).toBe(3);
    h.advance(localAckTimeoutNs(h.qp.attr.timeout));
    expect(ops(h.sent()).map(([, psn]) => psn)).toEqual([psnPlus(S, 1), psnPlus(S, 2)]);
    expect(h.qp.comp.retryLeft).toBe(2);
  });

  test('rnr_retry exhaustion: RNR_RETRY_EXC_ERR after rnr_retry retries', () => {
    const h = scriptedPeer({ rnrRetry: 2 });
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    send(h, 2, 0, 10);
    h.sent();
    for (let i = 0; i < 2; i++) {
      h.inject(ack(S, 0, SYN.rnr(1)));
      h.advance(10_000);
      expect(ops(h.sent()).map((x) => x[1])).toEqual([S, psnPlus(S, 1)]);
    }
    h.inject(ack(S, 0, SYN.rnr(1)));
    expect(status(h)).toEqual([
      [1n, WcStatus.RNR_RETRY_EXC_ERR],
      [2n, WcStatus.WR_FLUSH_ERR],
    ]);
    expect(h.qp.state).toBe(QpState.ERR);
    h.advance(1e6);
    expect(h.sent()).toEqual([]);
  });

  test('rnr_retry 7 is infinite: 20 RNR NAKs and still retrying', () => {
    const h = scriptedPeer({ rnrRetry: 7 });
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    h.sent();
    for (let i = 0; i < 20; i++) {
      h.inject(ack(S, 0, SYN.rnr(1)));
      expect(h.sent()).toEqual([]);
      h.advance(10_000);
      expect(ops(h.sent())).toEqual([['RC_SEND_ONLY', S, true]]);
    }
    h.inject(ack(S));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
  });
});

describe('RC requester: error NAKs', () => {
  test.each([
    ['invalid request', SYN.NAK_INV_REQ, WcStatus.REM_INV_REQ_ERR],
    ['remote access error', SYN.NAK_REM_ACCESS, WcStatus.REM_ACCESS_ERR],
    ['remote operational error', SYN.NAK_REM_OP, WcStatus.REM_OP_ERR],
  ])('NAK %s: the WQE completes in error, the rest flush, QP in ERR', (_n, syn, st) => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    send(h, 2, 0, 10);
    send(h, 3, 0, 10);
    h.sent();
    h.inject(ack(psnPlus(S, 1), 1, syn));
    expect(status(h)).toEqual([
      [1n, WcStatus.SUCCESS], // implied ACK by the NAK's PSN
      [2n, st],
      [3n, WcStatus.WR_FLUSH_ERR],
    ]);
    expect(h.qp.state).toBe(QpState.ERR);
    expect(h.sent()).toEqual([]);
  });
});

describe('RC requester: READ responses and implied NAKs', () => {
  test('a READ response with a gap: retry from the missing PSN (implied NAK), once per gap', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    read(h, 1, 0, 1024);
    h.sent();
    const remote = pattern(1024, 3);
    h.inject(readResp('FIRST', S, remote.subarray(0, 256)), readResp('MIDDLE', psnPlus(S, 1), remote.subarray(256, 512)));
    h.inject(readResp('LAST', psnPlus(S, 3), remote.subarray(768)));
    expect(h.sent().map((s) => [s.op, s.psn, s.reth])).toEqual([['RC_RDMA_READ_REQUEST', psnPlus(S, 2), { va: REMOTE_VA + 512n, rkey: RKEY, len: 512 }]]);
    h.inject(readResp('LAST', psnPlus(S, 3), remote.subarray(768))); // still the same gap: no second retry
    expect(h.sent()).toEqual([]);
    expect(h.qp.counters.implied_nak).toBe(1);
    h.inject(readResp('FIRST', psnPlus(S, 2), remote.subarray(512, 768)), readResp('LAST', psnPlus(S, 3), remote.subarray(768)));
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);
    expect(Buffer.from(h.buf.subarray(0, 1024)).equals(Buffer.from(remote))).toBe(true);
  });

  test('an ACK beyond an unfinished READ is an implied NAK: the READ is requested again (go-back-N)', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    read(h, 1, 0, 100);
    send(h, 2, 0, 10);
    expect(ops(h.sent())).toEqual([
      ['RC_RDMA_READ_REQUEST', S, true],
      ['RC_SEND_ONLY', psnPlus(S, 1), true],
    ]);
    h.inject(ack(psnPlus(S, 1), 2));
    expect(h.completions()).toEqual([]);
    expect(ops(h.sent())).toEqual([
      ['RC_RDMA_READ_REQUEST', S, true],
      ['RC_SEND_ONLY', psnPlus(S, 1), true],
    ]);
    expect(h.qp.counters.implied_nak).toBe(1);
    h.inject(readResp('ONLY', S, pattern(100, 1)), ack(psnPlus(S, 1), 2));
    expect(status(h)).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
    ]);
  });

  test('an ATOMIC ACKNOWLEDGE places the original value and completes the atomic', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    h.qp.postSend({
      wrId: 4,
      opcode: WrOpcode.ATOMIC_CMP_AND_SWP,
      sgList: [h.mr.sge(16, 8)],
      sendFlags: SIG,
      atomic: { remoteAddr: REMOTE_VA + 8n, rkey: RKEY, compareAdd: 5n, swap: 6n },
    });
    expect(h.sent().map((s) => [s.op, s.psn, s.atomic])).toEqual([['RC_COMPARE_SWAP', S, { va: REMOTE_VA + 8n, rkey: RKEY, swapAdd: 6n, compare: 5n }]]);
    h.inject({ bth: { opcode: op('RC_ATOMIC_ACKNOWLEDGE'), psn: S }, aeth: { syndrome: SYN.ACK, msn: 1 }, atomicAckEth: { origData: 0x0102030405060708n } });
    expect(h.completions()).toMatchObject([{ wrId: 4n, status: WcStatus.SUCCESS, opcode: WcOpcode.COMP_SWAP, byteLen: 8 }]);
    expect(new DataView(h.buf.buffer).getBigUint64(16, true)).toBe(0x0102030405060708n);
  });

  test('a READ response for a SEND WQE is a bad response', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    send(h, 1, 0, 10);
    h.sent();
    h.inject(readResp('ONLY', S, pattern(10)));
    expect(status(h)).toEqual([[1n, WcStatus.BAD_RESP_ERR]]);
    expect(h.qp.state).toBe(QpState.ERR);
  });
});

describe('RC requester: ordering rules', () => {
  test('fence: a fenced WQE is not sent until the earlier READ completes; an unfenced one goes at once', () => {
    const h = scriptedPeer();
    const S = h.sqPsn;
    read(h, 1, 0, 100);
    h.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)], sendFlags: SIG | SendFlags.FENCE });
    expect(ops(h.sent())).toEqual([['RC_RDMA_READ_REQUEST', S, true]]);
    h.advance(1000);
    expect(h.sent()).toEqual([]);
    h.inject(readResp('ONLY', S, pattern(100)));
    expect(ops(h.sent())).toEqual([['RC_SEND_ONLY', psnPlus(S, 1), true]]);
    expect(status(h)).toEqual([[1n, WcStatus.SUCCESS]]);

    const g = scriptedPeer();
    read(g, 1, 0, 100);
    send(g, 2, 0, 10);
    expect(ops(g.sent()).map((x) => x[0])).toEqual(['RC_RDMA_READ_REQUEST', 'RC_SEND_ONLY']);
  });

  test('max_rd_atomic 1: a second READ (or atomic) waits for the first to complete', () => {
    const h = scriptedPeer({ maxRdAtomic: 1 });
    const S = h.sqPsn;
    read(h, 1, 0, 100);
    read(h, 2, 100, 100);
    h.qp.postSend({
      wrId: 3,
      opcode: WrOpcode.ATOMIC_FETCH_AND_ADD,
      sgList: [h.mr.sge(200, 8)],
      sendFlags: SIG,
      atomic: { remoteAddr: REMOTE_VA, rkey: RKEY, compareAdd: 1n },
    });
    expect(ops(h.sent())).toEqual([['RC_RDMA_READ_REQUEST', S, true]]);
    h.inject(readResp('ONLY', S, pattern(100)));
    expect(ops(h.sent())).toEqual([['RC_RDMA_READ_REQUEST', psnPlus(S, 1), true]]);
    h.inject(readResp('ONLY', psnPlus(S, 1), pattern(100)));
    expect(ops(h.sent())).toEqual([['RC_FETCH_ADD', psnPlus(S, 2), true]]);
    expect(status(h)).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
    ]);
  });
});
