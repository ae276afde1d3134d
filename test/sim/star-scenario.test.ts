/**
 * The switch model and `roce sim`'s runner: two flows into one port of a 10 Gb/s star
 * (RED marking at the paper's Kmin 5 KB, Kmax 200 KB, Pmax 1 %), with DCQCN (the paper's
 * parameters), without congestion control (tail drop, then go-back-N), and with PFC (pauses, no
 * drop, PAUSE frames on the wire); the same seed gives the same run.
 */
import { runStarScenario, type StarScenario } from '../../apps/sim/star-scenario';
import { DCQCN_PAPER_PARAMS } from '../../stack/congestion/parameters';
import { PFC_PRIORITY } from '../../nic-driver/star-switch';

const MS = 1e6;
const base: StarScenario = {
  hosts: 3,
  flows: [
    { src: 0, dst: 2 },
    { src: 1, dst: 2 },
  ],
  linkRateBps: 10e9,
  bufferBytes: 1 << 20,
  ecn: { kind: 'red', kminBytes: 5_000, kmaxBytes: 200_000, pmax: 0.01 },
  pfc: null,
  cc: 'dcqcn',
  ccParams: DCQCN_PAPER_PARAMS,
  durationNs: 10 * MS,
  seed: 1,
};

/** Mean Gb/s of a series over (from, to] µs. */
const meanOver = (series: readonly [number, number][], from: number, to: number): number => {
  const xs = series.filter(([t]) => t > from && t <= to).map(([, g]) => g);
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
};

test('two flows into one port with DCQCN: marks answered by CNPs, the rates cut and shared, the queue below the buffer, no drop', () => {
  const r = runStarScenario(base);
  expect(r.ok).toBe(true);
  expect(r.ecnMarked).toBeGreaterThan(0);
  expect(r.cnpsSent).toBeGreaterThan(0);
  // At most one CNP per flow per 50 µs (N): never more than the run allows.
  expect(r.cnpsSent).toBeLessThanOrEqual(2 * (10_000 / 50));
  expect(r.cnpsHandled).toBeLessThanOrEqual(r.cnpsSent); // a CNP may be on the wire when the run ends
  expect(r.cnpsHandled).toBeGreaterThanOrEqual(r.cnpsSent - 2);
  expect(r.drops).toBe(0);
  expect(r.pfcPauses).toBe(0);
  expect(r.retransmissions).toBe(0);
  expect(r.queue.port).toBe('c');
  expect(r.queue.maxBytes).toBeLessThan(1 << 20);
  const [a, b] = r.flows;
  if (a === undefined || b === undefined) throw new Error('two flows');
  // The reaction points cut below the line rate at the first congestion.
  expect(Math.min(...(a.rateOverTime ?? []).map(([, g]) => g))).toBeLessThan(5);
  // Over the second half the two share the port evenly, and keep it busy.
  const ga = meanOver(a.gbpsOverTime, 5000, 10_000);
  const gb = meanOver(b.gbpsOverTime, 5000, 10_000);
  expect(Math.abs(ga - gb)).toBeLessThan(0.1 * (ga + gb));
  expect(ga + gb).toBeGreaterThan(6);
  expect(ga + gb).toBeLessThanOrEqual(10);
  expect(a.bytes).toBeGreaterThan(0);
});

test('without congestion control, 3 → 1: the port\'s buffer overflows, tail drops, then go-back-N retransmissions', () => {
  const r = runStarScenario({ ...base, hosts: 4, flows: [0, 1, 2].map((src) => ({ src, dst: 3 })), cc: 'none', durationNs: 8 * MS });
  expect(r.cnpsSent).toBe(0);
  expect(r.flows.every((f) => f.rateOverTime === null)).toBe(true);
  expect(r.queue.port).toBe('d');
  expect(r.queue.maxBytes).toBeGreaterThan((1 << 20) - 9000); // filled to the brim
  expect(r.drops).toBeGreaterThan(0);
  expect(r.retransmissions).toBeGreaterThan(0);
  expect(r.ecnMarked).toBe(0); // without congestion control the frames are Not-ECT: RED marks only ECN-capable ones
});

test('with PFC and no congestion control: the senders are paused, nothing is dropped, and the PAUSE frames are on the wire', () => {
  const pfcFrames: { pause: boolean; t: number }[] = [];
  const r = runStarScenario({
    ...base,
    cc: 'none',
    durationNs: 3 * MS,
    pfc: { xoffBytes: 300_000, xonBytes: 200_000 },
    capture: (f, t) => {
      if (f[12] === 0x88 && f[13] === 0x08) pfcFrames.push({ pause: ((f[18 + 2 * PFC_PRIORITY] ?? 0) << 8 | (f[19 + 2 * PFC_PRIORITY] ?? 0)) !== 0, t });
    },
  });
  expect(r.drops).toBe(0);
  expect(r.retransmissions).toBe(0);
  expect(r.pfcPauses).toBeGreaterThan(0);
  expect(pfcFrames.filter((p) => p.pause).length).toBe(r.pfcPauses);
  // Pauses and resumes alternate, per paused sender; the queue never reaches the buffer.
  expect(pfcFrames.filter((p) => !p.pause).length).toBeGreaterThan(0);
  expect(r.queue.maxBytes).toBeLessThan(1 << 20);
  // The port stays busy: paused senders share it.
  const total = r.flows.reduce((s, f) => s + meanOver(f.gbpsOverTime, 1000, 3000), 0);
  expect(total).toBeGreaterThan(9);
});

test('the same seed gives the same run, frame for frame', () => {
  const frames = (): string[] => {
    const out: string[] = [];
    const r = runStarScenario({ ...base, durationNs: 2 * MS, capture: (f, t) => out.push(`${t}:${Buffer.from(f).toString('base64')}`) });
    out.push(JSON.stringify(r));
    return out;
  };
  const x = frames();
  const y = frames();
  expect(x.length).toBeGreaterThan(200);
  expect(y).toEqual(x);
});

test('a star that cannot be built is refused with a typed error', () => {
  expect(() => runStarScenario({ ...base, bufferBytes: 100 })).toThrow(/bufferBytes must be at least 9000/);
  expect(() => runStarScenario({ ...base, ecn: { kind: 'red', kminBytes: 10, kmaxBytes: 5, pmax: 0.1 } })).toThrow(/RED marking needs/);
  expect(() => runStarScenario({ ...base, pfc: { xoffBytes: 10, xonBytes: 20 } })).toThrow(/PFC needs/);
  expect(() => runStarScenario({ ...base, hosts: 1 })).toThrow(/2 to 64 hosts/);
});
