/**
 * `roce analyze` of captures that lost every k-th record, wider than capture-loss.test.ts: seeds
 * 5-16, k up to 24, three offsets each, on the responder's host and on the requester's (1632
 * captures analysed): no rule violation in any of them (docs/analysis.md, "Capture loss").
 *
 * @group long
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { dropRecords, roceFrames } from '../support/degrade';
import { everyKth, ownCapture } from '../support/own-capture';

test('wider: seeds 5-16, every k-th record lost for k up to 24: no rule violation', () => {
  const seen: string[] = [];
  let captures = 0;
  for (const where of ['host-b', 'host-a'] as const) {
    for (let seed = 5; seed <= 16; seed++) {
      const whole = ownCapture(seed, where);
      const n = roceFrames(whole).length;
      for (let k = 2; k <= 24; k++) {
        for (let off = 0; off < Math.min(k, 3); off++) {
          captures++;
          for (const v of analyzeCapture(dropRecords(whole, everyKth(n, k, 1 + off))).violations)
            seen.push(`${where} seed ${seed} k ${k} offset ${off}: ${v.rule} ${v.message}`);
        }
      }
    }
  }
  expect(captures).toBe(1632);
  expect(seen).toEqual([]);
});
