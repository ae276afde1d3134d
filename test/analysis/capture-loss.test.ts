/**
 * `roce analyze` of captures that lost every k-th record (k 2..16, every offset up to 4), taken on
 * the responder's host and on the requester's. A response to requests the capture lost, and a second
 * NAK for a PSN the requester sent again in between (its RNR NAK lost), are not rule violations
 * (docs/analysis.md, "Capture loss"), and neither is the rest of a go-back-N burst whose first packet,
 * the resend that drew an RNR NAK, the capture lost: no rule is broken in any of them.
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { dropRecords, roceFrames } from '../support/degrade';
import { everyKth, ownCapture } from '../support/own-capture';

test('every k-th record lost: no rule violation', () => {
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
  expect([...seen]).toEqual([]);
});
