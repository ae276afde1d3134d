/**
 * `roce analyze` of captures that lost every k-th record (k 2..16, every offset up to 4), taken on
 * the responder's host and on the requester's. A response to requests the capture lost, and a second
 * NAK for a PSN the requester sent again in between (its RNR NAK lost), are not rule violations
 * (docs/analysis.md, "Capture loss"), and neither is the rest of a go-back-N burst whose first packet,
 * the resend that drew an RNR NAK, the capture lost: no rule is broken in any of them. The wider
 * run (seeds 5-16, k up to 24) is capture-loss-wide.test.ts, in the long group.
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { RuleId } from '../../analysis/types';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import { dropRecords, retimed, roceFrames } from '../support/degrade';
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

test('a requester that resends at once after an RNR NAK is caught, in the whole capture and with records lost around it', () => {
  let mutated = 0;
  for (const where of ['host-b', 'host-a'] as const) {
    for (const seed of [1, 2, 3, 4]) {
      const whole = ownCapture(seed, where);
      const frames = roceFrames(whole);
      // The first RNR NAK and the requester's next request at its PSN (the resend after the wait).
      const rnrAt = frames.findIndex((f) => f.p.aeth !== null && decodeSyndrome(f.p.aeth.syndrome).kind === AethKind.RNR_NAK);
      const rnr = frames[rnrAt];
      if (rnr === undefined) continue;
      // (Both hosts number their QPs alike here: a request, with no AETH, to the same QPN.)
      const resend = frames.slice(rnrAt + 1).find((f) => f.p.aeth === null && f.p.bth?.psn === rnr.p.bth?.psn && f.p.bth?.destQp === rnr.p.bth?.destQp);
      if (resend === undefined) continue;
      mutated++;
      // Everything from the RNR NAK to the resend moved to 9 µs after it, within its 10 µs timer: the
      // wait not kept. (Closer than DUP_WINDOW_NS to the refused request, the same bytes would read as
      // the capture's duplicate of it.)
      let nakNs = 0n;
      const hasty = retimed(whole, (n, ns) => {
        if (n === rnr.n) nakNs = ns;
        return n > rnr.n && n <= resend.n ? nakNs + 9000n : ns;
      });
      // Records lost between the two, where a lost resend and its burst are told apart from a hasty one:
      // responses and the other QP's frames (a lost first transmission of this QP's turns its requester
      // rules off, lossBeforeCapture, as before).
      const byN = new Map(frames.map((f) => [f.n, f.p]));
      const other = (n: number): boolean => byN.get(n)?.aeth !== null || byN.get(n)?.bth?.destQp !== rnr.p.bth?.destQp;
      for (const drop of [new Set<number>(), ...[1, 2, 3].map((k) => new Set([...everyKth(resend.n - 1, k, rnr.n + 1)].filter(other)))]) {
        const v = analyzeCapture(dropRecords(hasty, drop)).violations.filter((x) => x.rule === RuleId.RNR_WAIT_RESPECTED);
        expect(v.length).toBeGreaterThan(0);
      }
    }
  }
  expect(mutated).toBe(8);
});
