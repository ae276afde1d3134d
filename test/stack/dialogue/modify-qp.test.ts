/**
 * The verbs rules around the QP state machine (IBTA vol. 1 §10.3.1, figure
 * 124, table 91) and memory registration (§10.6.3.1): what modifyQp requires
 * and refuses, what the ERR and RESET transitions do to the queues, and
 * which posts are refused in which states.
 */
import { scriptedPeer, PEER_GID, PEER_MAC, pattern, op } from '../../support/scripted-peer';
import { QpState, QpType } from '../../../stack/qp-type-and-state';
import { Access } from '../../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcStatus } from '../../../stack/work-completion';
import { VerbsError, VerbsErrorCode } from '../../../stack/errors';
import type { QueuePair } from '../../../stack/queue-pair';

function thrown(fn: () => unknown): VerbsError {
  try {
    fn();
  } catch (e) {
    if (e instanceof VerbsError) return e;
    throw e;
  }
  throw new Error('expected a VerbsError');
}

function freshQp(h: ReturnType<typeof scriptedPeer>, qpType: QpType = QpType.RC): QueuePair {
  return h.dev.createQp(h.pd, { qpType, sendCq: h.cq, recvCq: h.cq });
}

const INIT = { qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: Access.LOCAL_WRITE } as const;
const RTR = {
  qpState: QpState.RTR,
  ahAttr: { dgid: PEER_GID, dmac: PEER_MAC },
  pathMtu: 1,
  destQpNum: 0x99,
  rqPsn: 0,
  maxDestRdAtomic: 1,
  minRnrTimer: 12,
} as const;
const RTS = { qpState: QpState.RTS, sqPsn: 0, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 1 } as const;

describe('modifyQp: the transition table', () => {
  test('a missing required attribute is a VerbsError naming it', () => {
    const h = scriptedPeer();
    const qp = freshQp(h);
    let e = thrown(() => qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1 }));
    expect(e.code).toBe(VerbsErrorCode.InvalidArgument);
    expect(e.message).toMatch(/qpAccessFlags/);
    expect(qp.state).toBe(QpState.RESET);
    qp.modify(INIT);
    const { destQpNum: _d, ...noDest } = RTR;
    e = thrown(() => qp.modify(noDest));
    expect(e.message).toMatch(/destQpNum/);
    qp.modify(RTR);
    const { retryCnt: _r, ...noRetry } = RTS;
    e = thrown(() => qp.modify(noRetry));
    expect(e.message).toMatch(/retryCnt/);
    qp.modify(RTS);
    expect(qp.state).toBe(QpState.RTS);
  });

  test('an attribute the transition does not take is refused, naming it', () => {
    const h = scriptedPeer();
    const qp = freshQp(h);
    const e = thrown(() => qp.modify({ ...INIT, sqPsn: 5 }));
    expect(e.code).toBe(VerbsErrorCode.InvalidArgument);
    expect(e.message).toMatch(/sqPsn/);
    qp.modify(INIT);
    expect(thrown(() => qp.modify({ ...RTR, timeout: 3 })).message).toMatch(/timeout/);
    const ud = freshQp(h, QpType.UD);
    expect(thrown(() => ud.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: 1, qpAccessFlags: 0 })).message).toMatch(/qpAccessFlags/);
  });

  test('an invalid transition (RESET -> RTS, INIT -> RTS) is refused and the state is unchanged', () => {
    const h = scriptedPeer();
    const qp = freshQp(h);
    expect(thrown(() => qp.modify(RTS)).message).toMatch(/RESET -> RTS/);
    expect(qp.state).toBe(QpState.RESET);
    qp.modify(INIT);
    expect(thrown(() => qp.modify(RTS)).message).toMatch(/INIT -> RTS/);
    expect(qp.state).toBe(QpState.INIT);
  });

  test('out-of-range values are refused (retry_cnt is 3 bits, PSNs 24)', () => {
    const h = scriptedPeer();
    const qp = freshQp(h);
    qp.modify(INIT);
    qp.modify(RTR);
    expect(thrown(() => qp.modify({ ...RTS, retryCnt: 8 })).message).toMatch(/retryCnt/);
    expect(thrown(() => qp.modify({ ...RTS, sqPsn: 1 << 24 })).message).toMatch(/sqPsn/);
  });

  test('any state -> ERR flushes posted send and receive WRs with WR_FLUSH_ERR', () => {
    const h = scriptedPeer();
    h.postRecv(10, 0, 64);
    h.postRecv(11, 64, 64);
    h.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)], sendFlags: SendFlags.SIGNALED });
    h.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)] });
    expect(h.sent()).toHaveLength(2);
    h.qp.modify({ qpState: QpState.ERR });
    expect(h.completions().map((w) => [w.wrId, w.status])).toEqual([
      [1n, WcStatus.WR_FLUSH_ERR],
      [2n, WcStatus.WR_FLUSH_ERR], // flushes complete even unsignaled WRs
      [10n, WcStatus.WR_FLUSH_ERR],
      [11n, WcStatus.WR_FLUSH_ERR],
    ]);
    // Work posted in ERR completes at once, flushed.
    h.qp.postSend({ wrId: 3, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)] });
    h.postRecv(12, 0, 8);
    expect(h.completions().map((w) => [w.wrId, w.status])).toEqual([
      [3n, WcStatus.WR_FLUSH_ERR],
      [12n, WcStatus.WR_FLUSH_ERR],
    ]);
    // Packets for a QP in ERR are dropped without an answer.
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(4) });
    expect(h.sent()).toEqual([]);
    h.advance(1e9);
    expect(h.sent()).toEqual([]);
  });

  test('ERR -> RESET empties the queues without completions; the QP can be connected again', () => {
    const h = scriptedPeer();
    h.qp.modify({ qpState: QpState.ERR });
    h.completions();
    h.qp.modify({ qpState: QpState.RESET });
    expect(h.qp.state).toBe(QpState.RESET);
    expect(h.qp.sq).toHaveLength(0);
    expect(h.qp.rq).toHaveLength(0);
    h.qp.modify(INIT);
    h.postRecv(1, 0, 8); // allowed in INIT
    h.qp.modify({ qpState: QpState.RESET });
    expect(h.qp.rq).toHaveLength(0);
    expect(h.completions()).toEqual([]);
    h.reconnect();
    h.postRecv(2, 0, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(4) });
    expect(h.sent().map((s) => [s.op, s.psn])).toEqual([['RC_ACKNOWLEDGE', h.rqPsn]]);
    expect(h.completions()).toMatchObject([{ wrId: 2n, status: WcStatus.SUCCESS }]);
  });

  test('postSend in RESET, INIT and RTR throws; postRecv in RESET throws', () => {
    const h = scriptedPeer();
    const qp = freshQp(h);
    const wr = { wrId: 1, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 4)] };
    expect(thrown(() => qp.postSend(wr)).code).toBe(VerbsErrorCode.BadState);
    expect(thrown(() => qp.postRecv({ sgList: [h.mr.sge(0, 4)] })).code).toBe(VerbsErrorCode.BadState);
    qp.modify(INIT);
    expect(thrown(() => qp.postSend(wr)).code).toBe(VerbsErrorCode.BadState);
    qp.modify(RTR);
    expect(thrown(() => qp.postSend(wr)).code).toBe(VerbsErrorCode.BadState);
    qp.modify(RTS);
    qp.postSend(wr);
  });

  test('postRecv to a QP with an SRQ throws; the SRQ feeds it', () => {
    const h = scriptedPeer({ srq: true });
    expect(thrown(() => h.qp.postRecv({ sgList: [h.mr.sge(0, 4)] })).code).toBe(VerbsErrorCode.InvalidArgument);
    h.postRecv(5, 0, 64); // goes to the SRQ
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(4) });
    expect(h.completions()).toMatchObject([{ wrId: 5n, status: WcStatus.SUCCESS, byteLen: 4 }]);
  });

  test('postSend refuses opcodes the transport lacks and malformed atomics', () => {
    const uc = scriptedPeer({ qpType: QpType.UC });
    expect(thrown(() => uc.qp.postSend({ opcode: WrOpcode.RDMA_READ, sgList: [uc.mr.sge(0, 4)], rdma: { remoteAddr: 0n, rkey: 1 } })).code).toBe(
      VerbsErrorCode.InvalidArgument,
    );
    const h = scriptedPeer();
    expect(
      thrown(() => h.qp.postSend({ opcode: WrOpcode.ATOMIC_FETCH_AND_ADD, sgList: [h.mr.sge(0, 4)], atomic: { remoteAddr: 0n, rkey: 1, compareAdd: 1n } }))
        .message,
    ).toMatch(/8 bytes/);
    expect(h.sent()).toEqual([]);
  });
});

describe('memory registration', () => {
  test('REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE is refused', () => {
    const h = scriptedPeer();
    expect(thrown(() => h.dev.regMr(h.pd, new Uint8Array(16), Access.REMOTE_WRITE)).code).toBe(VerbsErrorCode.InvalidArgument);
    expect(thrown(() => h.dev.regMr(h.pd, new Uint8Array(16), Access.REMOTE_ATOMIC | Access.REMOTE_READ)).code).toBe(VerbsErrorCode.InvalidArgument);
    expect(() => h.dev.regMr(h.pd, new Uint8Array(16), Access.REMOTE_READ)).not.toThrow();
  });

  test('a deregistered region answers no more to its R_Key (NAK remote access)', () => {
    const h = scriptedPeer();
    const r = h.reg(64, Access.LOCAL_WRITE | Access.REMOTE_READ);
    h.dev.deregMr(r.mr);
    h.inject({ bth: { opcode: op('RC_RDMA_READ_REQUEST'), psn: h.rqPsn, ackReq: true }, reth: { va: r.mr.addr(0), rkey: r.mr.rkey, dmaLength: 8 } });
    expect(h.sent().map((s) => [s.op, s.psn, s.aeth?.syndrome])).toEqual([['RC_ACKNOWLEDGE', h.rqPsn, 0x62]]);
  });
});
