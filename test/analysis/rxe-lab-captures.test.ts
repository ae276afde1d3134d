/**
 * `roce analyze` on the rxe lab's recorded captures (captures/rxe/, provenance in captures/README.md):
 * no rule violation, rxe's own choices in the `rxe` class with the rxe source named, and the
 * loss-recovery episodes as the frames show them. send-bw-rnr.pcap is ib_send_bw against a
 * one-deep receive queue both ways; read-write-loss.pcap is ib_read_bw both ways and ib_write_bw
 * with 3 % loss each way after the capture point.
 */
import * as path from 'node:path';
import { analyzeFile, type AnalysisResult, type CapturePoint } from '../../analysis/analyzer';
import { RxeBehaviourId } from '../../analysis/rxe-behaviours';
import { RuleId } from '../../analysis/types';
import { analyzeCommand } from '../../cli/analyze-command';
import { memoryOutput } from '../../cli/output';
import { judgeCapture } from '../../apps/sweep/capture-judgement';
import * as fs from 'node:fs';

const RXE = path.resolve(__dirname, '..', '..', 'captures', 'rxe');
const RNR = path.join(RXE, 'send-bw-rnr.pcap');
const LOSS = path.join(RXE, 'read-write-loss.pcap');
/** The lab's capture is qemu's filter-dump on the guest's NIC. */
const AT_GUEST: CapturePoint = 'host:198.18.0.1';

const analyse = (file: string, capturePoint: CapturePoint = 'unknown'): AnalysisResult => analyzeFile(file, { capturePoint });

describe('send-bw-rnr.pcap: ib_send_bw against a receive queue one WQE deep, both ways', () => {
  // Conversation 1: roce-ts requester, rxe responder (ib_send_bw -r 1 in the guest).
  // Conversation 2: rxe requester (ib_send_bw in the guest), roce-ts responder (--rx-depth 1).
  test('no violation; every episode an RNR episode that resends from the RNR NAK’s PSN', () => {
    const r = analyse(RNR);
    expect(r.violations).toEqual([]);
    expect(r.episodesByTrigger).toEqual({ nak: 0, rnr: 9, timeout: 0, impliedNak: 0 });
    expect(r.episodes.map((e) => [e.conversation, e.triggerFrame, e.firstRetransmitFrame])).toEqual([
      [1, 73, 75],
      [1, 97, 100],
      [1, 114, 116],
      [2, 189, 191],
      [2, 221, 224],
      [2, 232, 247],
      [2, 264, 266],
      [2, 276, 281],
      [2, 289, 292],
    ]);
    for (const e of r.episodes) {
      // Go-back-N from the PSN the RNR NAK named, after its 640 µs timer (rxe waits longer: jiffies under qemu).
      expect(e.rnrTimerNs).toBe(640_000);
      expect(e.retransmitDelayNs).toBeGreaterThanOrEqual(640_000);
    }
  });

  test('the requests rxe sends during its RNR wait are neither the retransmission nor a new episode', () => {
    // Frame 232 is an RNR NAK for PSN 4857636; rxe's requester goes on with PSNs 4857639.. (frames
    // 234-246) and goes back to 4857636 at frame 247. The analyzer used to call frame 234 the
    // retransmission and report retransmitFromFirstUnacked (three times in this capture) and
    // rnrWaitRespected (twice).
    for (const at of ['unknown', AT_GUEST, 'sent'] as const) {
      const r = analyse(RNR, at);
      expect(r.violationCount).toBe(0);
      expect(r.violationsByRule.get(RuleId.RETRANSMIT_FROM_FIRST_UNACKED) ?? 0).toBe(0);
      expect(r.episodes.find((e) => e.triggerFrame === 232)).toMatchObject({ trigger: 'rnr', gapPsn: 4857636, firstRetransmitFrame: 247 });
    }
  });

  test('rxe behaviour: a sequence NAK after each RNR NAK (rxe’s responder, and roce-ts’s, which copies it)', () => {
    const r = analyse(RNR);
    expect(r.rxeBehavioursById).toEqual({
      [RxeBehaviourId.SENDS_DURING_RNR_WAIT]: 0,
      [RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK]: 9,
      [RxeBehaviourId.RETRY_FROM_STALE_COMPLETER_PSN]: 0,
    });
    const seq = r.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK);
    expect(seq.map((b) => [b.conversation, ...b.frames])).toEqual([
      [1, 73, 74],
      [1, 97, 98],
      [1, 114, 115],
      [2, 189, 190],
      [2, 221, 222],
      [2, 232, 233],
      [2, 264, 265],
      [2, 276, 277],
      [2, 289, 290],
    ]);
    for (const b of seq) expect(b).toMatchObject({ class: 'rxe', by: 'responder', ibta: 'silent', source: expect.stringContaining('rxe_resp.c check_psn()') });
    // Each RNR NAK and its sequence NAK made one RNR episode, not an RNR and a NAK episode.
    expect(r.episodesByTrigger.nak).toBe(0);
  });

  test('rxe behaviour: its requester sends past the RNR NAK’s PSN during the wait (seen at its own NIC)', () => {
    const r = analyse(RNR, AT_GUEST);
    const during = r.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT);
    // RNR NAK, first and last request past its PSN, the resend of its PSN.
    expect(during.map((b) => [b.conversation, b.psn, ...b.frames])).toEqual([
      [2, 4857636, 232, 234, 246, 247],
      [2, 4857644, 276, 278, 280, 281],
      [2, 4857648, 289, 291, 292],
    ]);
    for (const b of during)
      expect(b).toMatchObject({ class: 'rxe', by: 'requester', ibta: 'silent', source: expect.stringContaining('rxe_req.c rxe_requester()') });
    // roce-ts's requester (conversation 1) waits without sending.
    expect(during.every((b) => b.conversation === 2)).toBe(true);
  });

  test('--fail-on any passes; --fail-on rxe and a kind by name fail, and say what', async () => {
    const any = memoryOutput();
    expect(await analyzeCommand(['--fail-on', 'any', RNR], any)).toBe(0);
    expect(any.out).toContain('0 rule violation(s), 9 rxe behaviour(s) (not violations)');
    expect(any.out).toContain('rxe behaviour (rxe’s own, cited to its source; not counted as violations):');
    const rxe = memoryOutput();
    expect(await analyzeCommand(['--fail-on', 'rxe', '--capture-point', AT_GUEST, RNR], rxe)).toBe(1);
    expect(rxe.err).toContain('rxe sendsDuringRnrWait: 3 times');
    expect(rxe.err).toContain('rxe seqNakAfterRnrNak: 9 times');
    const one = memoryOutput();
    expect(await analyzeCommand(['--fail-on', 'sendsDuringRnrWait', RNR], one)).toBe(0);
    const json = memoryOutput();
    expect(await analyzeCommand(['--json', RNR], json)).toBe(0);
    const doc = JSON.parse(json.out) as { summary: { violations: number; rxeBehaviours: Record<string, number> }; rxeBehaviours: { behaviour: string }[] };
    expect(doc.summary).toMatchObject({ violations: 0, rxeBehaviours: { sendsDuringRnrWait: 0, seqNakAfterRnrNak: 9 } });
    expect(doc.rxeBehaviours).toHaveLength(9);
  });

  test('roce replay in both roles: every captured answer matched, no violation', () => {
    const j = judgeCapture(fs.readFileSync(RNR));
    expect({
      responder: [j.replay.responder.conversations, j.replay.responder.violations],
      requester: [j.replay.requester.conversations, j.replay.requester.violations],
    }).toEqual({ responder: [2, 0], requester: [2, 0] });
  });
});

describe('send-bw-rnr-late.pcap: the same scenario, the responders answering queued copies late', () => {
  const LATE = path.join(RXE, 'send-bw-rnr-late.pcap');
  test('no violation: rxe’s second go-back-N to a PSN acknowledged since is named in the rxe class, with its source', () => {
    const r = analyse(LATE);
    // RNR NAKs 439, 445 and 451 (each with its sequence NAK) for PSN 9016822 answer copies of two
    // go-back-N bursts; rxe goes back to it at 453, ACKs 457 and 470 acknowledge through 9016829,
    // and after a further RNR wait rxe goes back to 9016822 again at 473 (docs/conformance.md).
    expect(r.violations).toEqual([]);
    const stale = r.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.RETRY_FROM_STALE_COMPLETER_PSN);
    expect(stale.map((b) => [b.conversation, b.by, b.ibta, b.psn, b.frames])).toEqual([[2, 'requester', 'forbidden', 9016822, [439, 445, 451, 453, 473]]]);
    expect(stale[0]?.source).toMatch(/rxe_comp\.c rxe_completer\(\).*req_retry\(\)/);
    const c = r.conversations.find((x) => x.id === 2);
    expect(c?.[stale[0]!.requester].ip).toBe('198.18.0.1');
  });

  test('a second RNR NAK for a PSN with no resend between answers an older copy: roce-ts’s resend 58 µs after it answers the first', () => {
    // RNR NAKs 139 and 141 for PSN 4150263 answer copies 97 and 119; roce-ts's resend at 143 is its
    // answer to 139, 19.8 ms on (it was read as a resend 58 µs into 141's wait: rnrWaitRespected).
    const r = analyse(LATE);
    expect(r.violationsByRule.get(RuleId.RNR_WAIT_RESPECTED) ?? 0).toBe(0);
    expect(r.episodes.find((e) => e.firstRetransmitFrame === 143)).toMatchObject({ trigger: 'rnr', triggerFrame: 139, gapPsn: 4150263 });
    expect(r.rxeBehavioursById).toEqual({ sendsDuringRnrWait: 1, seqNakAfterRnrNak: 16, retryFromStaleCompleterPsn: 1 });
    // rxe's requester after the RNR NAK 336: requests a round trip after it (345-348), or from 0.6 ms
    // after it at its own NIC (338-348), before its resend at 349.
    const during = (at: CapturePoint) =>
      analyse(LATE, at)
        .rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT)
        .map((b) => [b.conversation, ...b.frames]);
    expect(during('unknown')).toEqual([[2, 336, 345, 348, 349]]);
    expect(during(AT_GUEST)).toEqual([[2, 336, 338, 348, 349]]);
  });
});

describe('read-write-loss.pcap: READ retries both ways and a WRITE under 3 % loss each way', () => {
  // Conversation 1: roce-ts READs from rxe; 2: rxe READs from roce-ts; 3: roce-ts WRITEs to rxe.
  test('capture point "sent": no violation; READ retries by both requesters and a NAK episode for the WRITE', () => {
    const r = analyse(LOSS, 'sent');
    expect(r.violations).toEqual([]);
    expect(r.episodesByTrigger).toEqual({ nak: 1, rnr: 0, timeout: 4, impliedNak: 0 });
    expect(r.episodes.map((e) => [e.conversation, e.trigger, e.gapPsn, e.firstRetransmitFrame])).toEqual([
      [1, 'timeout', 9587350, 92],
      [2, 'timeout', 12861693, 223],
      [2, 'timeout', 12861696, 227],
      [2, 'timeout', 12861700, 232],
      [3, 'nak', 7451877, 332],
    ]);
    expect(r.rxeBehaviours).toEqual([]);
  });

  test('roce replay in both roles: no violation', () => {
    const j = judgeCapture(fs.readFileSync(LOSS), { capturePoint: 'sent' });
    expect({
      responder: [j.replay.responder.conversations, j.replay.responder.violations],
      requester: [j.replay.requester.conversations, j.replay.requester.violations],
    }).toEqual({ responder: [3, 0], requester: [3, 0] });
  });
});
