/**
 * Issue 14, validation 3, as docs/congestion.md states it: `roce sim --fluid` at 40 Gb/s with the
 * DCQCN paper's parameters, the steady state of 50-100 ms against the three models.
 * - 2 and 4 flows, the mean of seeds 1-3: rate, queue, marking and CNP rate within 15 % of the
 *   marks model and of the hybrid model; the paper's fluid model further off on the queue and the
 *   marking.
 * - 8 flows, marked on departure (the switch's default): the run stays near RED's slope, the mean
 *   of seeds 1-3 within 15 % of the hybrid model on every figure.
 * - 8 flows marked on arrival (`--ecn ...,at=enqueue`): the run and the hybrid model both cross
 *   Kmax (a marking above pmax), the fixed points cannot; rate and CNP rate still within 15 % of
 *   the hybrid model.
 * The runs are the built `roce` in child processes (`npm test` builds first): the packet simulation
 * runs several times slower inside the test runner's module sandbox.
 *
 * @group long
 */
import { roceSimJson } from '../support/roce-sim-process';

interface Figure {
  sim: number;
  fluid: number;
}
interface Fluid {
  rateGbps: Figure;
  queueBytes: Figure;
  markProbability: Figure;
  cnpsPerFlowPerMs: Figure;
  marks: { rateGbps: Figure; queueBytes: Figure; markProbability: Figure; cnpsPerFlowPerMs: Figure };
  hybrid: { rateGbps: Figure; queueBytes: Figure; markProbability: Figure; cnpsPerFlowPerMs: Figure; aboveKmax: number };
}

async function sim(hosts: number, seed: number, ecn = 'kmin=5K,kmax=200K,pmax=0.01'): Promise<Fluid> {
  const args = [
    '--hosts',
    String(hosts),
    '--link-rate',
    '40G',
    '--buffer',
    '12M',
    '--mtu',
    '1024',
    '--ecn',
    ecn,
    '--cc',
    'dcqcn-paper',
    '--duration',
    '100ms',
    '--seed',
    String(seed),
    '--fluid',
  ];
  const { code, json } = await roceSimJson<{ fluid: Fluid }>(args, 180_000);
  if (code !== 0) throw new Error(`roce sim --hosts ${hosts} --seed ${seed}: exit ${code}`);
  return json.fluid;
}

type Key = 'rateGbps' | 'queueBytes' | 'markProbability' | 'cnpsPerFlowPerMs';
const KEYS: Key[] = ['rateGbps', 'queueBytes', 'markProbability', 'cnpsPerFlowPerMs'];

/** The runs' mean against a model's figure (the same in every run: the models do not depend on the run's seed). */
function off(runs: Fluid[], _key: Key, model: (f: Fluid) => Figure): number {
  const mean = runs.reduce((a, f) => a + model(f).sim, 0) / runs.length;
  const m = model(runs[0]!).fluid;
  for (const f of runs) expect(model(f).fluid).toBe(m);
  return (mean - m) / m;
}

test.each([3, 5])(
  '%i hosts (flows into one): the mean of seeds 1-3 within 15 %% of the marks and hybrid models',
  async (hosts) => {
    const runs = [await sim(hosts, 1), ...(await Promise.all([sim(hosts, 2), sim(hosts, 3)]))];
    for (const key of KEYS) {
      const byMarks = off(runs, key, (f) => f.marks[key]);
      const byHybrid = off(runs, key, (f) => f.hybrid[key]);
      expect({ key, byMarks: Math.abs(byMarks) < 0.15, byHybrid: Math.abs(byHybrid) < 0.15 }).toEqual({ key, byMarks: true, byHybrid: true });
    }
    // The paper's equations average the reaction point's steps away: further off on the queue and the marking.
    for (const key of ['queueBytes', 'markProbability'] as const) {
      expect(Math.abs(off(runs, key, (f) => f[key]))).toBeGreaterThan(Math.abs(off(runs, key, (f) => f.hybrid[key])));
    }
  },
  300_000,
);

test("9 hosts (8 flows into one), marked on departure: the run stays near RED's slope, the mean of seeds 1-3 within 15 % of the hybrid model", async () => {
  const fs = await Promise.all([1, 2, 3].map((seed) => sim(9, seed)));
  // Seeds 1-3: 119, 123 and 116 KB, 1.12, 0.85 and 0.87 % marked (pmax is 1 %), 3.00 CNPs per flow
  // and ms; the hybrid model 124 KB, 0.89 %, 3.03. One seed's marking alone strays by up to 26 %.
  for (const f of fs) {
    expect(f.markProbability.sim).toBeLessThan(0.015);
    expect(f.hybrid.aboveKmax).toBeLessThan(0.01);
  }
  for (const key of KEYS) expect({ key, within: Math.abs(off(fs, key, (x) => x.hybrid[key])) < 0.15 }).toEqual({ key, within: true });
}, 600_000);

test('9 hosts (8 flows into one), marked on arrival (at=enqueue): the run and the hybrid model cross Kmax together; rate and CNP rate within 15 % of the hybrid model', async () => {
  const f = await sim(9, 1, 'kmin=5K,kmax=200K,pmax=0.01,at=enqueue');
  // RED's slope gives at most pmax (1 %): a higher marking means packets above Kmax, all marked.
  expect(f.markProbability.sim).toBeGreaterThan(0.02);
  expect(f.hybrid.aboveKmax).toBeGreaterThan(0.02);
  expect(f.hybrid.markProbability.fluid).toBeGreaterThan(0.02);
  // The fixed points sit on the slope.
  expect(f.markProbability.fluid).toBeLessThan(0.01);
  expect(f.marks.markProbability.fluid).toBeLessThan(0.01);
  for (const key of ['rateGbps', 'cnpsPerFlowPerMs'] as const) expect(Math.abs(off([f], key, (x) => x.hybrid[key]))).toBeLessThan(0.15);
}, 300_000);
