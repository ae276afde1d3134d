/**
 * Exact capture times (base/exact-time.ts): seconds and nanoseconds are those of the BigInt
 * arithmetic at any size and sign, differences are exact, and the decimals follow the capture's
 * resolution.
 */
import fc from 'fast-check';
import { decimalsOf, exactTime, frameTimeOf, secondsOfNs, secondsText, spanTime, timeDifference, timeDigitsOf } from '../../base/exact-time';

const NS = 1_000_000_000n;
const nsOf = (t: { sec: number; nsec: number }): bigint => BigInt(t.sec) * NS + BigInt(t.nsec);
/** A 64-bit pcapng time in ns, or that less an if_tsoffset. */
const anyNs = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n }),
  fc.bigInt({ min: -3n * NS, max: 3n * NS }),
);

test('exactTime splits any time in ns into whole seconds, rounded down, and 0 ≤ nsec < 10^9', () => {
  fc.assert(
    fc.property(anyNs, (ns) => {
      const t = exactTime(ns, 9);
      expect(nsOf(t)).toBe(ns);
      expect(t.nsec >= 0 && t.nsec < 1e9 && Number.isInteger(t.nsec)).toBe(true);
      expect(secondsOfNs(ns)).toBe(t.sec);
    }),
    { numRuns: 2000 },
  );
  expect(exactTime(-1n, 9)).toEqual({ sec: -1, nsec: 999_999_999, digits: 9 });
  expect(exactTime(1_705_320_000_000_001_184n, 9)).toEqual({ sec: 1_705_320_000, nsec: 1184, digits: 9 });
});

test('timeDifference is the exact difference, with the finer of the two resolutions', () => {
  fc.assert(
    fc.property(anyNs, anyNs, fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 }), (a, b, da, db) => {
      const d = timeDifference(exactTime(a, da), exactTime(b, db), { sec: 0, nsec: 0, digits: 0 });
      expect(nsOf(d)).toBe(a - b);
      expect(d.digits).toBe(Math.max(da, db));
      const f = frameTimeOf(exactTime(a, da), exactTime(b, db));
      expect(nsOf({ sec: f.relSec, nsec: f.relNsec })).toBe(a - b);
    }),
    { numRuns: 2000 },
  );
});

test("spanTime and secondsText: a span of whole ns, printed as tshark prints frame.time_relative, with the capture's decimals", () => {
  expect(secondsText(spanTime(1184, 9))).toBe('0.000001184');
  expect(secondsText(spanTime(2_137_801_000, 6))).toBe('2.137801');
  expect(secondsText(spanTime(-1000, 6))).toBe('-0.000001');
  // A digit beyond the resolution is never dropped.
  expect(secondsText(spanTime(1184, 6))).toBe('0.000001184');
  fc.assert(
    fc.property(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), (ns) => {
      expect(nsOf(spanTime(ns, 9))).toBe(BigInt(ns));
    }),
    { numRuns: 2000 },
  );
});

test('decimals: from if_tsresol, and read back from a printed time', () => {
  expect([0, 3, 6, 9, 10, 18, 63].map(timeDigitsOf)).toEqual([0, 3, 6, 9, 9, 9, 9]);
  expect(decimalsOf('1705320000.000001184')).toBe(9);
  expect(decimalsOf('1705320000.000001')).toBe(6);
  expect(decimalsOf('1705320000')).toBe(0);
});
