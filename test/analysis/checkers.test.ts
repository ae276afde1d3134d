/**
 * Go-back-N rule checks on hand-crafted bad sequences, and none on good ones.
 */
import { Op, Syn, ack, analyze, req } from './frames';
import { RuleId } from '../../analysis/types';

const send = (us: number, psn: number) => req(us, Op.SEND_ONLY, psn, { len: 8 });

describe('go-back-N checkers', () => {
  test('a clean NAK recovery breaks no rule', () => {
    const r = analyze([send(0, 10), send(1, 11), send(2, 12), ack(5, 10, Syn.NAK_SEQ), send(7, 10), send(8, 11), send(9, 12), ack(12, 12)]);
    expect(r.violations).toEqual([]);
    expect(r.episodes).toHaveLength(1);
  });

  test('two NAKs for one gap', () => {
    const r = analyze([
      send(0, 10),
      send(1, 11),
      send(2, 12),
      ack(5, 10, Syn.NAK_SEQ),
      ack(6, 10, Syn.NAK_SEQ),
      send(7, 10),
      send(8, 11),
      send(9, 12),
      ack(12, 12),
    ]);
    expect(r.violations.map((v) => [v.rule, v.frames])).toEqual([[RuleId.ONE_NAK_PER_GAP, [4, 5]]]);
  });

  test('an RNR NAK for the PSN closes the gap: a new NAK after it is allowed', () => {
    const r = analyze([
      send(0, 10),
      send(1, 11),
      ack(2, 10, Syn.NAK_SEQ),
      send(4, 10),
      ack(5, 10, Syn.rnr(1)),
      ack(6, 10, Syn.NAK_SEQ),
      send(30, 10),
      send(31, 11),
      ack(33, 11),
    ]);
    expect(r.violations.filter((v) => v.rule === RuleId.ONE_NAK_PER_GAP)).toEqual([]);
  });

  test('retransmission not starting at the NAK’d PSN', () => {
    // The later resend of PSN 10 shows the first burst really skipped it (an ACK through 12 instead
    // would show the responder got 10: a retransmission the capture missed).
    const r = analyze([
      send(0, 10),
      send(1, 11),
      send(2, 12),
      ack(5, 10, Syn.NAK_SEQ),
      send(7, 11),
      send(8, 12),
      send(20000, 10),
      send(20001, 11),
      send(20002, 12),
      ack(20012, 12),
    ]);
    const v = r.violations.find((x) => x.rule === RuleId.RETRANSMIT_FROM_NAK_PSN);
    expect(v).toBeDefined();
    expect(v!.frames).toEqual([4, 5]);
    expect(v!.message).toContain('skipping 1 PSN');
  });

  test('a PSN skipped during the go-back-N resend', () => {
    // The responder's NAK for 12 shows the skip was the requester's, not a gap in the capture.
    const r = analyze([
      send(0, 10),
      send(1, 11),
      send(2, 12),
      send(3, 13),
      ack(5, 10, Syn.NAK_SEQ),
      send(7, 10),
      send(8, 11),
      send(9, 13),
      ack(12, 12, Syn.NAK_SEQ),
    ]);
    const v = r.violations.find((x) => x.rule === RuleId.NO_SKIP_ON_RETRANSMIT);
    expect(v).toBeDefined();
    expect(v!.frames).toEqual([7, 8]);
    expect(v!.psn).toBe(12);
  });

  test('resending before the RNR timer ran out', () => {
    const r = analyze([send(0, 10), ack(1, 10, Syn.rnr(13)), send(100, 10), ack(101, 10)]);
    const v = r.violations.find((x) => x.rule === RuleId.RNR_WAIT_RESPECTED);
    expect(v).toBeDefined();
    expect(v!.frames).toEqual([2, 3]);
    const ok = analyze([send(0, 10), ack(1, 10, Syn.rnr(13)), send(1000, 10), ack(1001, 10)]);
    expect(ok.violations).toEqual([]);
  });

  describe('an RNR NAK for a resend the capture lost', () => {
    // rxe's pattern: SEND 10 is refused (RNR NAK), SEND 11 behind it draws a PSN sequence error NAK;
    // after each wait the requester resends from 10. When the resend that drew the second RNR NAK
    // is not in the capture, SEND 11 just after that NAK is the lost resend's burst going on.
    const write = send;
    const whole = [
      send(0, 10),
      ack(1, 10, Syn.rnr(1)),
      write(2, 11),
      ack(3, 10, Syn.NAK_SEQ),
      send(20, 10),
      ack(21, 10, Syn.rnr(1)),
      write(22, 11),
      ack(23, 10, Syn.NAK_SEQ),
      send(40, 10),
      ack(41, 10),
      write(42, 11),
      ack(43, 11),
    ];
    const without = (frames: typeof whole, ...lost: number[]) => frames.filter((_, i) => !lost.includes(i + 1));

    test('whole, it breaks no rule and shows two RNR episodes', () => {
      const r = analyze(whole);
      expect(r.violations).toEqual([]);
      expect(r.episodes.map((e) => [e.trigger, e.gapPsn])).toEqual([
        ['rnr', 10],
        ['rnr', 10],
      ]);
    });

    test('told by a second RNR NAK with no request at its PSN between (the first RNR NAK kept), or by a NAK drawn before it', () => {
      for (const lost of [[5], [2, 5]]) {
        const r = analyze(without(whole, ...lost));
        expect(r.violations).toEqual([]);
        // The lost resend's episode is not rebuilt; SEND 11 starts none, the resend at 40 µs answers the second NAK, 19 µs after it.
        expect(r.episodes.map((e) => [e.trigger, e.gapPsn, e.retransmitDelayNs])).toEqual([['rnr', 10, 19_000]]);
      }
    });

    test('a requester that does resend at once after an RNR NAK is still caught', () => {
      const r = analyze([send(0, 10), ack(1, 10, Syn.rnr(1)), write(2, 11), ack(3, 10, Syn.NAK_SEQ), send(4, 10), write(5, 11), ack(6, 10), ack(7, 11)]);
      expect(r.violations.map((v) => v.rule)).toEqual([RuleId.RNR_WAIT_RESPECTED]);
    });
  });

  test('a NAK for a PSN already acknowledged, and an ACK for a PSN never sent', () => {
    // The ACK for 20 alone could cover requests the capture missed (ackedUnseen); the first
    // transmission of PSN 12 long after it (5 ms, past any trigger TTL) shows the requester had not sent them.
    const r = analyze([send(0, 10), send(1, 11), ack(2, 11), ack(3, 10, Syn.NAK_SEQ), ack(4, 20), send(5000, 12)]);
    expect(r.violations.map((v) => v.rule).sort()).toEqual([RuleId.NAK_PSN_NOT_ACKED, RuleId.RESPONSE_FOR_SENT_PSN].sort());
    expect(r.violations.find((v) => v.rule === RuleId.RESPONSE_FOR_SENT_PSN)!.frames).toEqual([5, 6]);
    expect(r.captureQuality.responsesBeforeRequests).toBe(0);
    const gap = analyze([send(0, 10), send(1, 11), ack(2, 11), ack(4, 20), send(5, 21)]);
    expect(gap.violations).toEqual([]);
    expect(gap.captureGaps.map((g) => [g.firstPsn, g.lastPsn, g.how])).toEqual([[12, 20, 'ackedUnseen']]);
  });

  test('an ACK captured just before the requests it acknowledges is a capture that put the directions out of order, not a violation', () => {
    // A mirror port or per-queue timestamps can record an ACK 29 µs before its request.
    const r = analyze([send(0, 10), send(1, 11), ack(2, 11), ack(10, 13), send(39, 12), send(40, 13), ack(45, 13)]);
    expect(r.violations).toEqual([]);
    expect(r.captureQuality.responsesBeforeRequests).toBe(1);
    expect(r.captureQuality.framesImplied).toBe(0);
    // The same requests only 5 ms later: the responder acknowledged PSNs nobody had sent.
    const late = analyze([send(0, 10), send(1, 11), ack(2, 11), ack(10, 13), send(5010, 12), send(5011, 13), ack(5015, 13)]);
    expect(late.violations.map((v) => v.rule)).toEqual([RuleId.RESPONSE_FOR_SENT_PSN]);
    expect(late.captureQuality.responsesBeforeRequests).toBe(0);
  });

  test('a timeout resend that skips the first unacknowledged PSN', () => {
    const r = analyze([send(0, 10), send(1, 11), send(2, 12), ack(3, 10), send(20000, 12), ack(20003, 11, Syn.NAK_SEQ)]);
    expect(r.episodes.map((e) => e.trigger)).toEqual(['timeout']);
    expect(r.violations.map((v) => v.rule)).toContain(RuleId.RETRANSMIT_FROM_FIRST_UNACKED);
    // An ACK through 12 instead shows the responder got 11: the capture missed its resend.
    const missed = analyze([send(0, 10), send(1, 11), send(2, 12), ack(3, 10), send(20000, 12), ack(20003, 12)]);
    expect(missed.violations).toEqual([]);
  });

  test('a timeout resend from an already acknowledged PSN is wasteful, not a violation', () => {
    const r = analyze([send(0, 10), send(1, 11), ack(2, 10), send(20000, 10), send(20001, 11), ack(20003, 11)]);
    expect(r.episodes.map((e) => e.trigger)).toEqual(['timeout']);
    expect(r.violations).toEqual([]);
  });
});
