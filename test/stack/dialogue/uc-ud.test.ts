/**
 * Scripted dialogues for the unreliable transports: UC drops a message with
 * a lost packet and resynchronises on the next FIRST/ONLY, never answering
 * (IBTA vol. 1 §9.8); UD checks the Q_Key, puts the GRH area in front of the
 * data and completes too-long datagrams with a length error (§10.8.3.1, §11.4.1.1).
 */
import { scriptedPeer, op, pattern, psnPlus, PEER_QPN, PEER_GID, PEER_MAC } from '../../support/scripted-peer';
import { QpType } from '../../../stack/qp-type-and-state';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from '../../../stack/work-completion';

describe('UC', () => {
  test('a lost MIDDLE drops the message (no completion, no answer); the next message is received into the same WQE', () => {
    const h = scriptedPeer({ qpType: QpType.UC });
    const P = h.rqPsn;
    h.postRecv(1, 0, 1024);
    h.postRecv(2, 1024, 1024);
    h.inject(
      { bth: { opcode: op('UC_SEND_FIRST'), psn: P }, payload: pattern(256, 1) },
      // P+1 (MIDDLE) is lost
      { bth: { opcode: op('UC_SEND_LAST'), psn: psnPlus(P, 2) }, payload: pattern(50, 2) },
    );
    expect(h.completions()).toEqual([]);
    const next = pattern(30, 3);
    h.inject({ bth: { opcode: op('UC_SEND_ONLY'), psn: psnPlus(P, 3) }, payload: next });
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 30 }]);
    expect(Buffer.from(h.buf.subarray(0, 30)).equals(Buffer.from(next))).toBe(true);
    expect(h.qp.rq.map((w) => w.wrId)).toEqual([2n]);
    expect(h.sent()).toEqual([]);
  });

  test('a lost FIRST: MIDDLE and LAST are dropped, then a new message is taken', () => {
    const h = scriptedPeer({ qpType: QpType.UC });
    const P = h.rqPsn;
    h.postRecv(1, 0, 1024);
    h.inject(
      { bth: { opcode: op('UC_SEND_MIDDLE'), psn: psnPlus(P, 1) }, payload: pattern(256) },
      { bth: { opcode: op('UC_SEND_LAST'), psn: psnPlus(P, 2) }, payload: pattern(10) },
    );
    expect(h.completions()).toEqual([]);
    h.inject(
      {
        bth: { opcode: op('UC_RDMA_WRITE_FIRST'), psn: psnPlus(P, 3) },
        reth: { va: h.mr.addr(2048), rkey: h.mr.rkey, dmaLength: 300 },
        payload: pattern(256, 5),
      },
      { bth: { opcode: op('UC_RDMA_WRITE_LAST_WITH_IMMEDIATE'), psn: psnPlus(P, 4) }, immDt: 5, payload: pattern(44, 5 + 256) },
    );
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV_RDMA_WITH_IMM, byteLen: 300, immData: 5 }]);
    expect(Buffer.from(h.buf.subarray(2048, 2348)).equals(Buffer.from(pattern(300, 5)))).toBe(true);
    expect(h.sent()).toEqual([]);
  });

  test('UC sends never ask for an ACK and complete once sent', () => {
    const h = scriptedPeer({ qpType: QpType.UC });
    const S = h.sqPsn;
    h.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 600)], sendFlags: SendFlags.SIGNALED });
    expect(h.sent().map((s) => [s.op, s.psn, s.ackReq, s.destQp])).toEqual([
      ['UC_SEND_FIRST', S, false, PEER_QPN],
      ['UC_SEND_MIDDLE', psnPlus(S, 1), false, PEER_QPN],
      ['UC_SEND_LAST', psnPlus(S, 2), false, PEER_QPN],
    ]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.SEND }]);
  });

  test('no receive WQE: the message is dropped silently (no RNR NAK on UC)', () => {
    const h = scriptedPeer({ qpType: QpType.UC });
    h.inject({ bth: { opcode: op('UC_SEND_ONLY'), psn: h.rqPsn }, payload: pattern(8) });
    expect(h.sent()).toEqual([]);
    h.postRecv(1, 0, 64);
    h.inject({ bth: { opcode: op('UC_SEND_ONLY'), psn: psnPlus(h.rqPsn, 1) }, payload: pattern(8) });
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, byteLen: 8 }]);
  });
});

describe('UD', () => {
  const QKEY = 0x11111111;

  test('a Q_Key mismatch is dropped and counted', () => {
    const h = scriptedPeer({ qpType: QpType.UD });
    h.postRecv(1, 0, 256);
    h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: 7 }, deth: { qkey: 0x22222222, srcQp: PEER_QPN }, payload: pattern(16) });
    expect(h.completions()).toEqual([]);
    expect(h.qp.counters.qkey_violation).toBe(1);
    expect(h.qp.rq).toHaveLength(1);
    expect(h.sent()).toEqual([]);
  });

  test('the receive buffer starts with the 40-byte GRH area: 20 zero bytes and the IPv4 header; GRH flag, srcQp', () => {
    const h = scriptedPeer({ qpType: QpType.UD });
    h.buf.fill(0xaa, 0, 300);
    h.postRecv(1, 0, 256);
    const data = pattern(64, 9);
    const spec = { bth: { opcode: op('UD_SEND_ONLY_WITH_IMMEDIATE'), psn: 12345 }, deth: { qkey: QKEY, srcQp: PEER_QPN }, immDt: 0xbeef, payload: data };
    const frame = h.frame(spec);
    h.injectFrames(frame);
    expect(h.completions()).toEqual([
      {
        wrId: 1n,
        status: WcStatus.SUCCESS,
        opcode: WcOpcode.RECV,
        byteLen: 104,
        qpNum: h.qp.qpNum,
        srcQp: PEER_QPN,
        wcFlags: WcFlags.GRH | WcFlags.WITH_IMM,
        immData: 0xbeef,
        vendorErr: '',
      },
    ]);
    expect(h.buf.subarray(0, 20).every((b) => b === 0)).toBe(true);
    expect(Buffer.from(h.buf.subarray(20, 40)).equals(Buffer.from(frame.subarray(14, 34)))).toBe(true);
    expect(Buffer.from(h.buf.subarray(40, 104)).equals(Buffer.from(data))).toBe(true);
    expect(h.buf[104]).toBe(0xaa);
  });

  test('a datagram longer than the receive buffer: LOC_LEN_ERR completion, nothing else', () => {
    const h = scriptedPeer({ qpType: QpType.UD });
    h.postRecv(1, 0, 80);
    h.postRecv(2, 100, 200);
    h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: 1 }, deth: { qkey: QKEY, srcQp: PEER_QPN }, payload: pattern(64) });
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.LOC_LEN_ERR, srcQp: PEER_QPN }]);
    h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: 2 }, deth: { qkey: QKEY, srcQp: PEER_QPN }, payload: pattern(64) });
    expect(h.completions()).toMatchObject([{ wrId: 2n, status: WcStatus.SUCCESS, byteLen: 104 }]);
    expect(h.sent()).toEqual([]);
  });

  test('a UD send carries the DETH (Q_Key, source QP) to the address handle', () => {
    const h = scriptedPeer({ qpType: QpType.UD });
    const ah = h.dev.createAh(h.pd, { dgid: PEER_GID, dmac: PEER_MAC });
    h.qp.postSend({
      wrId: 1,
      opcode: WrOpcode.SEND,
      sgList: [h.mr.sge(0, 32)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: 0x1234, remoteQkey: 0x42 },
    });
    h.qp.postSend({
      wrId: 2,
      opcode: WrOpcode.SEND,
      sgList: [h.mr.sge(0, 32)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: 0x1234, remoteQkey: 0x8000_0000 },
    });
    expect(h.sent().map((s) => [s.op, s.destQp, s.deth, s.payload.length])).toEqual([
      ['UD_SEND_ONLY', 0x1234, { qkey: 0x42, srcQp: h.qp.qpNum }, 32],
      ['UD_SEND_ONLY', 0x1234, { qkey: QKEY, srcQp: h.qp.qpNum }, 32], // high bit: the QP's own Q_Key (C10-15)
    ]);
    expect(h.completions().map((w) => w.status)).toEqual([WcStatus.SUCCESS, WcStatus.SUCCESS]);
  });
});
