/**
 * `roce analyze` of captures that lost every k-th record (k 2..16, every offset up to 4), taken on
 * the responder's host and on the requester's. A response to requests the capture lost, and a second
 * NAK for a PSN the requester sent again in between (its RNR NAK lost), are not rule violations
 * (docs/analysis.md, "Capture loss"). What is left is the two rules on how the requester reacts to an
 * RNR NAK, which can still misread a burst whose first packet the capture lost.
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { RuleId } from '../../analysis/types';
import { dropRecords, roceFrames } from '../support/degrade';
import { everyKth, ownCapture } from '../support/own-capture';

test('every k-th record lost: no responseForSentPsn or oneNakPerGap, and only the RNR reaction rules otherwise', () => {
  const seen = new Map<string, number>();
  let captures = 0;
  for (const where of ['host-b', 'host-a'] as const) {
    for (const seed of [1, 2, 3, 4]) {
      const whole = ownCapture(seed, where);
      expect(analyzeCapture(whole).violations).toEqual([]);
      const n = roceFrames(whole).length;
      for (let k = 2; k <= 16; k++) {
        for (let off = 0; off < Math.min(k, 4); off++) {
          captures++;
          for (const v of analyzeCapture(dropRecords(whole, everyKth(n, k, 1 + off))).violations) seen.set(v.rule, (seen.get(v.rule) ?? 0) + 1);
        }
      }
    }
  }
  expect(captures).toBe(456);
  expect(seen.get(RuleId.RESPONSE_FOR_SENT_PSN)).toBeUndefined();
  expect(seen.get(RuleId.ONE_NAK_PER_GAP)).toBeUndefined();
  for (const rule of seen.keys()) expect([RuleId.RNR_WAIT_RESPECTED, RuleId.RETRANSMIT_FROM_FIRST_UNACKED]).toContain(rule);
});
