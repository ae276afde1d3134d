/**
 * The latency figures `roce analyze` gives per ULP queue or conversation (NVMe-oF commands, RPCs):
 * percentiles by rank (the smallest value at or above the fraction of the sorted sample) and a
 * histogram of 24 buckets doubling from 1 µs, the last one open (1 µs to 8 s).
 */

export interface LatencySummary {
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

const BUCKETS = 24;

/** Percentiles and histogram of latencies in µs (any order); null figures and an empty histogram for none. */
export function latencyFigures(samplesUs: readonly number[]): { latencyUs: LatencySummary | null; histogram: [number, number][] } {
  const lat = [...samplesUs].sort((a, b) => a - b);
  if (lat.length === 0) return { latencyUs: null, histogram: [] };
  const rank = (p: number): number => lat[Math.min(lat.length - 1, Math.max(0, Math.ceil(p * lat.length) - 1))] ?? 0;
  const counts = new Array<number>(BUCKETS).fill(0);
  for (const us of lat) {
    let b = 0;
    while (b < BUCKETS - 1 && us >= 2 ** b) b++;
    counts[b] = (counts[b] ?? 0) + 1;
  }
  const last = counts.reduce((m, n, i) => (n > 0 ? i : m), 0);
  const histogram: [number, number][] = [];
  for (let b = 0; b <= last; b++) histogram.push([2 ** b, counts[b] ?? 0]);
  return {
    latencyUs: {
      min: lat[0] ?? 0,
      p50: rank(0.5),
      p90: rank(0.9),
      p99: rank(0.99),
      max: lat[lat.length - 1] ?? 0,
      mean: lat.reduce((a, x) => a + x, 0) / lat.length,
    },
    histogram,
  };
}

const us = (x: number): string => `${x.toFixed(3)} µs`;

/** The two text lines of a summary (`latency (what): min …`, `histogram: …`), indented; none without samples. */
export function latencyLines(what: string, f: { latencyUs: LatencySummary | null; histogram: readonly [number, number][] }, indent: string): string[] {
  const l = f.latencyUs;
  if (l === null) return [];
  return [
    `${indent}latency (${what}): min ${us(l.min)}, p50 ${us(l.p50)}, p90 ${us(l.p90)}, p99 ${us(l.p99)}, max ${us(l.max)}, mean ${us(l.mean)}`,
    `${indent}histogram: ${f.histogram.map(([bound, n]) => `<${bound} µs ${n}`).join(', ')}`,
  ];
}
