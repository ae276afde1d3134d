/**
 * The latency statistics `roce pingpong` and `roce perftest --lat` report: nearest-rank
 * percentiles, perftest's t_typical (its median) and t_stdev, and a histogram of log-spaced buckets, four to an octave, that holds every sample
 * (the buckets bench/c/latency_report.h prints for the C references).
 */
import fc from 'fast-check';
import { latencyHistogram, latencyStats } from '../../apps/perftest/measurement';

test('percentiles by nearest rank, and the histogram', () => {
  const samples = Array.from({ length: 1000 }, (_, i) => i + 1); // 1 .. 1000 µs
  const s = latencyStats(samples);
  expect(s).toMatchObject({ min: 1, p50: 500, typical: 500.5, p90: 900, p99: 990, p999: 999, max: 1000, avg: 500.5 });
  // The population standard deviation of 1..1000: sqrt((1000^2 - 1) / 12).
  expect(s?.stdev).toBeCloseTo(Math.sqrt((1000 ** 2 - 1) / 12), 2);
  // perftest's t_typical of an odd count is the middle sample; the spread of equal samples is 0.
  expect(latencyStats([3, 1, 2])).toMatchObject({ typical: 2, p50: 2, stdev: 0.816 });
  expect(latencyStats([5, 5, 5, 5])).toMatchObject({ typical: 5, stdev: 0 });
  // Bucket k holds [2^(k/4), 2^((k+1)/4)): 1 µs alone in [1, 1.19), 2 in [2, 2.38), and so on.
  const h = s?.histogram ?? [];
  expect(h[0]).toEqual([1, 1]);
  expect(h.find(([lo]) => lo === 2)).toEqual([2, 1]);
  expect(h.find(([lo]) => lo === 512)).toEqual([512, Math.ceil(512 * 2 ** 0.25) - 512]);
  expect(latencyStats([])).toBeNull();
});

test('every sample lands in exactly the bucket whose range holds it', () => {
  fc.assert(
    fc.property(fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }), (xs) => {
      const h = latencyHistogram(xs);
      expect(h.reduce((n, [, c]) => n + c, 0)).toBe(xs.length);
      for (let i = 1; i < h.length; i++) expect((h[i] as [number, number])[0]).toBeGreaterThan((h[i - 1] as [number, number])[0]);
      for (const [lo, c] of h) {
        const hi = lo * 2 ** 0.25;
        const inside = xs.filter((x) => (lo === 1 ? x < hi * 1.0005 : x >= lo * 0.9995 && x < hi * 1.0005)).length;
        expect(inside).toBeGreaterThanOrEqual(c);
      }
    }),
    { numRuns: 300 },
  );
});
