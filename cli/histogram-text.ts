/**
 * A latency histogram as text (`roce pingpong` prints it under its percentiles): one line per
 * non-empty bucket, its range in µs, its count, its share and a bar scaled to the largest bucket.
 */
const BAR = 40;

/** `histogram`: [lower bound µs, count] pairs, buckets four to an octave (apps/perftest/measurement.ts). */
export function histogramText(histogram: readonly (readonly [number, number])[], title = 'round trip histogram'): string {
  const total = histogram.reduce((n, [, c]) => n + c, 0);
  if (total === 0) return '';
  const top = Math.max(...histogram.map(([, c]) => c));
  const lines = histogram.map(([lo, c]) => {
    const hi = lo * 2 ** 0.25;
    const range = `${lo.toFixed(lo < 100 ? 2 : 0)}–${hi.toFixed(hi < 100 ? 2 : 0)}`.padStart(17);
    const bar = '#'.repeat(Math.max(1, Math.round((c / top) * BAR)));
    return `  ${range} us ${String(c).padStart(8)} ${((100 * c) / total).toFixed(2).padStart(6)} % ${bar}\n`;
  });
  return `${title} (four buckets per octave):\n${lines.join('')}`;
}
