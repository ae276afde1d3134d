/**
 * Every per-frame flag on hand-built sequences, one small conversation each.
 */
import { FLAG_NAMES } from '../../analysis/flags';
import { Op, Syn, ack, analyze, flagsOf, frame, req, QP_A } from './frames';
import { analyzeCapture } from '../../analysis/analyzer';
import { PcapWriter } from '../../packets/pcap';

describe('per-frame flags', () => {
  test('retransmission after a NAK, and the NAK itself', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 100, { len: 8 }),
      req(1, Op.SEND_ONLY, 101, { len: 8 }),
      ack(5, 100, Syn.NAK_SEQ),
      req(7, Op.SEND_ONLY, 100, { len: 8 }),
      req(8, Op.SEND_ONLY, 101, { len: 8 }),
      ack(12, 101),
    ]);
    expect(flagsOf(r, 1)).toEqual([]);
    expect(flagsOf(r, 3)).toEqual(['nakSeqErr']);
    expect(flagsOf(r, 4)).toEqual(['retransmission']);
    expect(flagsOf(r, 5)).toEqual(['retransmission']);
    expect(r.flagCounts.retransmission).toBe(2);
  });

  test('outOfSequence: a hole in the requests the capture shows', () => {
    const r = analyze([req(0, Op.SEND_ONLY, 100, { len: 8 }), req(1, Op.SEND_ONLY, 102, { len: 8 }), req(2, Op.SEND_ONLY, 103, { len: 8 })]);
    expect(flagsOf(r, 2)).toEqual(['outOfSequence']);
    expect(flagsOf(r, 3)).toEqual(['outOfSequence']);
  });

  test('notCaptured: a hole the responder then acknowledges was the capture’s, not the wire’s', () => {
    const r = analyze([req(0, Op.SEND_ONLY, 100, { len: 8 }), req(1, Op.SEND_ONLY, 102, { len: 8 }), req(2, Op.SEND_ONLY, 103, { len: 8 }), ack(3, 103)]);
    expect(flagsOf(r, 2)).toEqual(['notCaptured']);
    expect(flagsOf(r, 3)).toEqual([]);
    expect(r.flagCounts.outOfSequence).toBe(0);
    expect(r.flagCounts.notCaptured).toBe(1);
    expect(r.captureGaps).toEqual([{ conversation: 1, requester: 'a', firstPsn: 101, lastPsn: 101, frame: 2, how: 'notCaptured' }]);
    expect(r.captureQuality).toMatchObject({ framesCaptured: 4, framesImplied: 1, captureGaps: 1 });
    expect(r.violations).toEqual([]);
  });

  test('a hole the responder NAKs stays outOfSequence (lost on the wire before the capture point)', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 100, { len: 8 }),
      req(1, Op.SEND_ONLY, 102, { len: 8 }),
      ack(2, 101, Syn.NAK_SEQ),
      req(9, Op.SEND_ONLY, 101, { len: 8 }),
      req(10, Op.SEND_ONLY, 102, { len: 8 }),
      ack(11, 102),
    ]);
    expect(flagsOf(r, 2)).toEqual(['outOfSequence']);
    expect(r.captureGaps).toEqual([]);
  });

  test('ackedUnseen: an ACK for requests the capture never showed', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 100, { len: 8 }),
      ack(1, 100),
      req(2, Op.SEND_ONLY, 101, { len: 8 }),
      ack(4, 102),
      req(5, Op.SEND_ONLY, 103, { len: 8 }),
      ack(6, 103),
    ]);
    expect(flagsOf(r, 4)).toEqual(['ackedUnseen']);
    expect(flagsOf(r, 5)).toEqual([]);
    expect(r.captureGaps).toEqual([{ conversation: 1, requester: 'a', firstPsn: 102, lastPsn: 102, frame: 4, how: 'ackedUnseen' }]);
    expect(r.violations).toEqual([]);
  });

  test('truncated: a frame the capture cut short is analysed from its headers', () => {
    const w = new PcapWriter({ nanosecond: true, snaplen: 70 });
    w.add(frame(req(0, Op.SEND_ONLY, 1, { len: 200 })), 0n);
    w.add(frame(ack(1, 1)), 1000n);
    const r = analyzeCapture(w.toBytes(), { allFrames: true });
    expect(flagsOf(r, 1)).toEqual(['truncated']);
    expect(r.messages.map((m) => [m.op, m.size, m.status])).toEqual([['SEND', 200, 'ok']]);
    expect(r.captureQuality).toMatchObject({ truncated: 1, icrc: 'preserved' });
  });

  test('duplicateRequest: a request the responder already has; duplicateFrame: an immediate copy', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 100, { len: 8 }),
      req(0.5, Op.SEND_ONLY, 100, { len: 8 }),
      req(1, Op.SEND_ONLY, 101, { len: 8 }),
      ack(3, 101),
      req(40, Op.SEND_ONLY, 100, { len: 8 }),
    ]);
    expect(flagsOf(r, 2)).toEqual(['duplicateFrame']);
    expect(flagsOf(r, 5)).toEqual(['retransmission', 'duplicateRequest']);
  });

  test.each([
    ['nakInvReq', Syn.NAK_INV],
    ['nakRemAccess', Syn.NAK_ACC],
    ['nakRemOp', Syn.NAK_OP],
    ['rnrNak', Syn.rnr(13)],
  ])('%s', (flag, syn) => {
    const r = analyze([req(0, Op.SEND_ONLY, 7, { len: 8 }), ack(5, 7, syn)]);
    expect(flagsOf(r, 2)).toEqual([flag]);
  });

  test('ackCoalesced: one ACK for two AckReq requests', () => {
    const r = analyze([req(0, Op.SEND_ONLY, 1, { len: 8 }), req(1, Op.SEND_ONLY, 2, { len: 8 }), ack(5, 2)]);
    expect(flagsOf(r, 3)).toEqual(['ackCoalesced']);
    const fj = r.conversations[0]!.flows.a!.figures;
    expect(fj.ackReqPackets / fj.acks).toBe(2);
  });

  test('impliedAck: a READ response completes the SEND before it', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 1, { len: 8, ackReq: false }),
      req(1, Op.READ_REQUEST, 2, { reth: { va: 0x1000n, rkey: 5, dmaLength: 16 } }),
      {
        us: 6,
        from: 'b',
        t: { bth: { opcode: Op.READ_RESPONSE_ONLY, destQp: QP_A, psn: 2 }, aeth: { syndrome: Syn.ACK, msn: 2 }, payload: new Uint8Array(16) },
      },
    ]);
    expect(flagsOf(r, 3)).toEqual(['impliedAck']);
    expect(r.messages.map((m) => [m.op, m.status])).toEqual([
      ['SEND', 'ok'],
      ['READ', 'ok'],
    ]);
    expect(r.messages[1]!.responseLatencyNs).toBe(5000);
  });

  test('icrcBad, ecnCe and cnp', () => {
    const r = analyze([
      req(0, Op.SEND_ONLY, 1, { len: 8, ecnCe: true }),
      req(1, Op.SEND_ONLY, 2, { len: 8, badIcrc: true }),
      ack(2, 1),
      // A CNP goes to the QP whose traffic was marked: the requester, known once a response named it.
      { us: 3, from: 'b', t: { bth: { opcode: Op.CNP, destQp: QP_A, psn: 0, becn: true } } },
    ]);
    expect(flagsOf(r, 1)).toEqual(['ecnCe']);
    expect(flagsOf(r, 2)).toEqual(['icrcBad']);
    expect(flagsOf(r, 4)).toEqual(['cnp']);
    expect(r.conversations[0]!.cnps).toBe(1);
  });

  test('malformed: an ACK carrying payload', () => {
    const w = new PcapWriter({ nanosecond: true });
    w.add(frame(req(0, Op.SEND_ONLY, 1, { len: 8 })), 0n);
    w.add(
      frame({ us: 1, from: 'b', t: { bth: { opcode: Op.ACK, destQp: QP_A, psn: 1 }, aeth: { syndrome: Syn.ACK, msn: 1 }, payload: new Uint8Array(8) } }),
      1000n,
    );
    const r = analyzeCapture(w.toBytes(), { allFrames: true });
    expect(flagsOf(r, 2)).toEqual(['malformed']);
  });

  test('every flag name is exercised by this file', () => {
    // Keep this list in step with FLAG_NAMES: a new flag needs a test above.
    expect([...FLAG_NAMES].sort()).toEqual(
      [
        'retransmission',
        'duplicateRequest',
        'outOfSequence',
        'duplicateFrame',
        'nakSeqErr',
        'nakInvReq',
        'nakRemAccess',
        'nakRemOp',
        'rnrNak',
        'impliedAck',
        'ackCoalesced',
        'icrcBad',
        'malformed',
        'cnp',
        'ecnCe',
        'notCaptured',
        'ackedUnseen',
        'truncated',
      ].sort(),
    );
  });
});
