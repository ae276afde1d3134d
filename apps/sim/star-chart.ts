/**
 * The pictures of a `roce sim` result: each flow's throughput at the switch (solid)
 * and its reaction point's rate (dashed) on one panel, the busiest port's queue on another.
 * `starResultOf` checks a JSON document is such a result before anything is drawn.
 */
import type { ChartPanel } from '../../analysis/render/chart-svg';
import type { StarResult } from './star-scenario';

/** Why a document is not a `roce sim --json` result, or null when it is. */
export function notStarResult(j: unknown): string | null {
  if (typeof j !== 'object' || j === null) return 'not a JSON object';
  const o = j as Record<string, unknown>;
  if (!Array.isArray(o['flows'])) return 'no "flows" array';
  const pairs = (v: unknown): boolean =>
    Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'number' && typeof p[1] === 'number');
  for (const [i, f] of (o['flows'] as unknown[]).entries()) {
    const x = f as Record<string, unknown> | null;
    if (typeof x !== 'object' || x === null || typeof x['name'] !== 'string' || !pairs(x['gbpsOverTime']))
      return `flows[${i}] has no "name" and "gbpsOverTime" ([µs, Gb/s] pairs)`;
    if (x['rateOverTime'] !== null && x['rateOverTime'] !== undefined && !pairs(x['rateOverTime'])) return `flows[${i}].rateOverTime is not [µs, Gb/s] pairs`;
  }
  const q = o['queue'] as Record<string, unknown> | undefined;
  if (typeof q !== 'object' || q === null || !pairs(q['overTime']) || typeof q['port'] !== 'string')
    return 'no "queue" with "port" and "overTime" ([µs, bytes] pairs)';
  return null;
}

export function starPanels(r: Pick<StarResult, 'flows' | 'queue' | 'ecnMarked' | 'cnpsSent' | 'pfcPauses' | 'drops'>): ChartPanel[] {
  return [
    {
      title: `rate per flow: throughput at the switch (solid), the reaction point's rate (dashed)`,
      yLabel: 'Gb/s',
      lines: r.flows.flatMap((f) => [
        { name: `${f.name} throughput`, points: f.gbpsOverTime },
        ...(f.rateOverTime !== null && f.rateOverTime !== undefined ? [{ name: `${f.name} RP rate`, points: f.rateOverTime, dashed: true }] : []),
      ]),
    },
    {
      title: `queue of port ${r.queue.port} (the busiest); ECN marked ${r.ecnMarked}, CNPs ${r.cnpsSent}, PFC pauses ${r.pfcPauses}, drops ${r.drops}`,
      yLabel: 'bytes',
      lines: [{ name: `queue ${r.queue.port}`, points: r.queue.overTime }],
    },
  ];
}
