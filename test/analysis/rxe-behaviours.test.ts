/**
 * The `rxe` class of `roce analyze` (analysis/rxe-behaviours.ts) on hand-built sequences shaped as
 * the rxe lab's captures show them, and the three readings of RNR waits the lab's captures corrected:
 * a burst going on during an RNR wait, an ACK for copies sent before an RNR NAK, and a sequence NAK
 * drawn by a captured request behind the RNR NAK'd one. Frame numbers count from 1 in step order.
 */
import { Op, Syn, ack, analyze, req } from './frames';
import { RuleId } from '../../analysis/types';
import { RxeBehaviourId, RXE_BEHAVIOUR_IDS } from '../../analysis/rxe-behaviours';
import { failOnFindings, failOnNames, parseFailOn } from '../../analysis/fail-on';

const send = (us: number, psn: number) => req(us, Op.SEND_ONLY, psn, { len: 8 });

describe('sendsDuringRnrWait', () => {
  test('new requests past the RNR NAK’d PSN before its resend: named, with the RNR NAK, the first and last of them and the resend', () => {
    const r = analyze([
      send(0, 10), // 1
      send(1, 11), // 2
      ack(5, 10, Syn.rnr(1)), // 3: RNR NAK, timer 0.01 ms
      ack(6, 10, Syn.NAK_SEQ), // 4: drawn by 11
      send(2000, 12), // 5: new, during the wait
      send(3000, 13), // 6
      send(9000, 10), // 7: the resend after the wait
      send(9001, 11),
      send(9002, 12),
      send(9003, 13),
      ack(9010, 13),
    ]);
    expect(r.violations).toEqual([]);
    expect(r.episodes.map((e) => [e.trigger, e.gapPsn, e.triggerFrame, e.firstRetransmitFrame])).toEqual([['rnr', 10, 3, 7]]);
    expect(r.rxeBehaviours.map((b) => [b.behaviour, b.by, b.frames, b.psn])).toEqual([
      [RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK, 'responder', [3, 4], 10],
      [RxeBehaviourId.SENDS_DURING_RNR_WAIT, 'requester', [3, 5, 6, 7], 10],
    ]);
    expect(r.rxeBehavioursById).toEqual({ sendsDuringRnrWait: 1, seqNakAfterRnrNak: 1, retryFromStaleCompleterPsn: 0 });
    for (const b of r.rxeBehaviours) expect(b).toMatchObject({ class: 'rxe', ibta: 'silent', conversation: 1, requester: 'a' });
  });

  test('a requester that waits (roce-ts) shows neither; a request in flight when the NAK was captured does not count', () => {
    const waits = analyze([send(0, 10), send(1, 11), ack(5, 10, Syn.rnr(1)), send(2000, 10), send(2001, 11), ack(2010, 11)]);
    expect(waits.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT)).toEqual([]);
    // 12 is captured 100 µs after the RNR NAK: within the 500 µs the requester may not have had it yet.
    const inFlight = analyze([send(0, 10), send(1, 11), ack(5, 10, Syn.rnr(1)), send(105, 12), send(2000, 10), send(2001, 11), send(2002, 12), ack(2010, 12)]);
    expect(inFlight.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT)).toEqual([]);
    expect(inFlight.violations).toEqual([]);
  });

  test('a go-back-N burst that goes on after a pause during an RNR wait is the same burst, not a timer’s new episode', () => {
    const steps = [
      send(0, 10), // 1
      send(1, 11), // 2
      send(2, 12), // 3
      send(3, 13), // 4
      ack(10, 9 + 0, Syn.ACK), // 5: nothing new (an ACK of 9)
      ack(11, 10, Syn.rnr(1)), // 6
      ack(12, 10, Syn.NAK_SEQ), // 7
      send(1000, 10), // 8: the resend after the wait, a burst 10..
      send(1001, 11), // 9
      ack(1005, 10, Syn.rnr(1)), // 10: refused again, the burst has sent 11 already
      ack(1006, 10, Syn.NAK_SEQ), // 11: drawn by 11 (frame 9), not by a request the capture lost
      send(3000, 12), // 12: the burst goes on 2 ms later, during the wait
      send(3001, 13), // 13
      send(6000, 10), // 14: the rewind after the wait
      send(6001, 11),
      send(6002, 12),
      send(6003, 13),
      ack(6010, 13),
    ];
    const r = analyze(steps);
    // Read as a new episode at 12, this was retransmitFromFirstUnacked ("after the RNR wait for PSN 10,
    // retransmission starts at PSN 12"), and the rewind at frame 14 a NAK episode.
    expect(r.violations).toEqual([]);
    expect(r.violationsByRule.get(RuleId.RETRANSMIT_FROM_FIRST_UNACKED) ?? 0).toBe(0);
    expect(r.episodes.map((e) => [e.trigger, e.gapPsn, e.triggerFrame, e.firstRetransmitFrame])).toEqual([
      ['rnr', 10, 6, 8],
      ['rnr', 10, 10, 14],
    ]);
    expect(r.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT).map((b) => b.frames)).toEqual([[10, 12, 13, 14]]);
    expect(r.flagCounts.notCaptured).toBe(0);
  });
});

describe('the responder’s expected PSN after an RNR NAK', () => {
  test('an ACK for copies sent before the RNR NAK moves it: the next request is in sequence, no capture gap', () => {
    const r = analyze([
      send(0, 10), // 1
      send(1, 11), // 2
      send(2000, 10), // 3: a timeout resend
      send(2001, 11), // 4
      ack(2010, 10, Syn.rnr(1)), // 5: a slow responder refuses the first copy of 10
      ack(2011, 10, Syn.NAK_SEQ), // 6: and NAKs the first copy of 11
      ack(2020, 11), // 7: then takes the second copies
      send(3000, 12), // 8: new, in sequence for the responder
      ack(3010, 12),
    ]);
    expect(r.violations).toEqual([]);
    expect(r.captureGaps).toEqual([]);
    expect({ notCaptured: r.flagCounts.notCaptured, outOfSequence: r.flagCounts.outOfSequence }).toEqual({ notCaptured: 0, outOfSequence: 0 });
    expect(r.rxeBehaviours.map((b) => b.behaviour)).toEqual([RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK]);
  });
});

describe('a responder slow to drain its queue (rxe under qemu) answers older copies late', () => {
  // Copies of PSN 10 go out at 0, 2000 and 4000 µs; the responder answers each with an RNR NAK
  // and, for the packet behind it, a sequence NAK, milliseconds late.
  const copies = [send(0, 10), send(1, 11), send(2000, 10), send(2001, 11), send(4000, 10), send(4001, 11)];

  test('more RNR NAKs in a row than copies captured show a lost resend; as many do not', () => {
    const late = analyze([
      ...copies, // frames 1-6
      ack(4500, 10, Syn.rnr(1)), // 7: for the copy at 0
      ack(4501, 10, Syn.NAK_SEQ), // 8
      ack(4600, 10, Syn.rnr(1)), // 9: for the copy at 2000, no copy captured since 7
      ack(4601, 10, Syn.NAK_SEQ), // 10
      ack(4700, 10, Syn.rnr(1)), // 11: for the copy at 4000
      send(9000, 10), // 12: the resend after the wait
      send(9001, 11),
      ack(9010, 11),
    ]);
    expect(late.violations).toEqual([]);
    // No resend the capture lost: 11 at 9001 goes on the burst from 9000.
    expect(late.episodes.map((e) => [e.trigger, e.gapPsn, e.firstRetransmitFrame, e.resentPackets])).toContainEqual(['rnr', 10, 12, 2]);
    expect(late.captureQuality.framesImplied).toBe(0);
  });

  test('a resend within a round trip of another RNR NAK answers the sequence NAK before it', () => {
    const r = analyze([
      send(0, 9), // 1
      ack(50, 9), // 2: a round trip of 50 µs
      send(100, 10), // 3
      send(101, 11), // 4
      ack(110, 10, Syn.rnr(13)), // 5: 0.96 ms
      send(2000, 10), // 6: the resend after the wait
      send(2001, 11), // 7
      ack(3800, 10, Syn.NAK_SEQ), // 8: for 4, late
      ack(4020, 10, Syn.rnr(13)), // 9: for 6, late
      send(4040, 10), // 10: the requester's answer to 8, sent before 9 reached it
      send(4041, 11),
      ack(4100, 11),
    ]);
    // Read as the answer to 9, frame 10 came 20 µs into a 0.96 ms wait (rnrWaitRespected).
    expect(r.violations).toEqual([]);
    expect(r.episodes.map((e) => [e.trigger, e.triggerFrame, e.firstRetransmitFrame])).toEqual([
      ['rnr', 5, 6],
      ['nak', 8, 10],
    ]);
  });
});

describe('--fail-on and the rxe class', () => {
  test('any leaves the class out; rxe names every kind; a kind by name', () => {
    expect(parseFailOn(['any']).failOn.rxe.size).toBe(0);
    expect([...parseFailOn(['rxe']).failOn.rxe]).toEqual([...RXE_BEHAVIOUR_IDS]);
    expect([...parseFailOn(['any,seqNakAfterRnrNak']).failOn.rxe]).toEqual(['seqNakAfterRnrNak']);
    expect(parseFailOn(['rxe-ish']).unknown).toEqual(['rxe-ish']);
    expect(failOnNames()).toEqual(expect.arrayContaining(['any', 'rxe', 'sendsDuringRnrWait', 'seqNakAfterRnrNak']));
    const counts = {
      violationsByRule: new Map(),
      flagCounts: analyze([]).flagCounts,
      rxeBehavioursById: { sendsDuringRnrWait: 2, seqNakAfterRnrNak: 1, retryFromStaleCompleterPsn: 0 },
    };
    expect(failOnFindings(parseFailOn(['any']).failOn, counts)).toEqual([]);
    expect(failOnFindings(parseFailOn(['rxe']).failOn, counts)).toEqual(['rxe sendsDuringRnrWait: 2 times', 'rxe seqNakAfterRnrNak: 1 time']);
  });
});
