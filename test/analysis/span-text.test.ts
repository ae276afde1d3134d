/** The text report's spans of capture time (analysis/text-report.ts `spanText`) keep every digit the capture has. */
import fc from 'fast-check';
import { spanText } from '../../analysis/text-report';

test("the report's spans: µs, ms or s, three decimals and as many more as the capture has, none cut", () => {
  expect(spanText(2_960_423, 9)).toBe('2.960423 ms');
  expect(spanText(2_960_000, 6)).toBe('2.960 ms');
  expect(spanText(149_687, 9)).toBe('149.687 µs');
  expect(spanText(154_000, 6)).toBe('154.000 µs');
  expect(spanText(2_124_710_400, 9)).toBe('2.124710400 s');
  expect(spanText(29_958_009_000, 6)).toBe('29.958009 s');
  // A µs capture whose span has ns in it anyway (two interfaces): the ns are kept.
  expect(spanText(2_960_423, 6)).toBe('2.960423 ms');
  expect(spanText(-1_500, 9)).toBe('-1.500 µs');
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 53 - 1 }), fc.constantFrom(6, 9), (ns, digits) => {
      const m = /^(\d+)\.(\d+) (µs|ms|s)$/.exec(spanText(ns, digits));
      expect(m).not.toBeNull();
      const [, whole, frac, unit] = m as unknown as [string, string, string, string];
      const scale = { µs: 3, ms: 6, s: 9 }[unit] as number;
      expect(BigInt(whole) * 10n ** BigInt(scale) + BigInt(frac.padEnd(scale, '0').slice(0, scale))).toBe(BigInt(ns));
    }),
    { numRuns: 2000 },
  );
});
