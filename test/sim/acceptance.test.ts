/**
 * `roce sim` against the literature and the project's own models, as docs/congestion.md states
 * them ("Acceptance runs"):
 * - the DCQCN paper's settings at 40 Gb/s (Zhu et al., SIGCOMM 2015: RED Kmin 5 KB, Kmax 200 KB,
 *   Pmax 1 %, its parameters): two flows into one port, and an 8 → 1 incast with PFC armed. Near
 *   line rate, Jain ≥ 0.98, no drops, PFC pauses only in the first millisecond (the first burst,
 *   every flow at line rate);
 * - HPCC's parameter set at 10 Gb/s (its run.py's DCQCN: Kmin 40 KB, Kmax 160 KB, Pmax 0.2, and its
 *   reaction point's settings), 2 and 8 flows with PFC: the steady queue within ±50 % of the fluid model's fixed point and below
 *   Kmax, and no pause after the first 10 ms;
 * - a lossy incast without PFC: the stalled flows named with their reason, `ok: false`, exit 1.
 * The runs are the built `roce` in child processes (`npm test` builds first): the packet
 * simulation runs several times slower inside the test runner's module sandbox. Every figure is
 * on the virtual clock under a seed, so the same on any machine.
 *
 * @group long
 */
import { HPCC_DCQCN_10G_ARG } from '../support/hpcc-dcqcn';
import { roceSimJson } from '../support/roce-sim-process';

interface Flow {
  name: string;
  state: string;
  stall: { reason: string } | null;
}
interface Result {
  ok: boolean;
  flows: Flow[];
  stalled: string[];
  drops: number;
  pfcPauses: number;
  pfcPausesUs: { first: number; last: number } | null;
  steady: { flows: string[]; flowsGbps: number[]; jainIndex: number | null; queueMeanBytes: number };
  fluid?: { queueBytes: { sim: number; fluid: number } | null };
}

async function sim(args: string[]): Promise<{ code: number; r: Result }> {
  const { code, json } = await roceSimJson<Result>(args, 600_000);
  return { code, r: json };
}

const PAPER_40G = ['--link-rate', '40G', '--mtu', '1024', '--cc', 'dcqcn-paper', '--seed', '1'];
/** Frames of a 1024-byte MTU on the wire: 1090 bytes of frame in 1114 of wire time. */
const FRAME_SHARE_1024 = 1090 / 1114;

function expectNearLineRate(r: Result, lineGbps: number): void {
  const total = r.steady.flowsGbps.reduce((a, x) => a + x, 0);
  // Steady Gb/s counts frame bytes without preamble and gap: line rate is lineGbps * FRAME_SHARE.
  expect({ total, atLeast: total >= 0.95 * lineGbps * FRAME_SHARE_1024 }).toEqual({ total, atLeast: true });
}

test('the DCQCN paper, two flows into one 40 Gb/s port: near line rate, Jain >= 0.98, no drops, no pause after the first millisecond', async () => {
  const { code, r } = await sim(['--hosts', '3', ...PAPER_40G, '--buffer', '12M', '--pfc', 'xoff=300K,xon=200K', '--duration', '100ms']);
  expect({ code, ok: r.ok, stalled: r.stalled, drops: r.drops }).toEqual({ code: 0, ok: true, stalled: [], drops: 0 });
  expect(r.steady.flows).toEqual(['a>c', 'b>c']);
  expectNearLineRate(r, 40);
  expect(r.steady.jainIndex).toBeGreaterThanOrEqual(0.98);
  expect(r.pfcPausesUs === null || r.pfcPausesUs.last <= 1000).toBe(true);
}, 600_000);

test('the DCQCN paper, 8 → 1 incast at 40 Gb/s with PFC: near line rate, Jain >= 0.98, no drops, pauses only in the first millisecond', async () => {
  const { code, r } = await sim(['--hosts', '9', ...PAPER_40G, '--buffer', '1M', '--pfc', 'xoff=100K,xon=80K', '--duration', '20ms']);
  expect({ code, ok: r.ok, stalled: r.stalled, drops: r.drops }).toEqual({ code: 0, ok: true, stalled: [], drops: 0 });
  expect(r.steady.flows).toHaveLength(8);
  expectNearLineRate(r, 40);
  expect(r.steady.jainIndex).toBeGreaterThanOrEqual(0.98);
  expect(r.pfcPausesUs === null || r.pfcPausesUs.last <= 1000).toBe(true);
}, 600_000);

// HPCC's ns-3 DCQCN at 10 Gb/s (test/support/hpcc-dcqcn.ts), with a 1024-byte MTU for its 1000-byte payloads.
const HPCC_10G = [
  '--link-rate',
  '10G',
  '--mtu',
  '1024',
  '--buffer',
  '1M',
  '--ecn',
  'kmin=40K,kmax=160K,pmax=0.2',
  '--pfc',
  'xoff=100K,xon=80K',
  '--cc',
  'dcqcn',
  '--cc-param',
  HPCC_DCQCN_10G_ARG,
  '--duration',
  '40ms',
  '--seed',
  '1',
  '--fluid',
];
const KMAX = 160_000;

test.each([
  ['2 flows', 3],
  ['8 flows', 9],
])(
  "HPCC's parameter set at 10 Gb/s, %s with PFC: the steady queue within ±50 %% of the fluid fixed point and below Kmax, no pause after 10 ms",
  async (_n, hosts) => {
    const { code, r } = await sim(['--hosts', String(hosts), ...HPCC_10G]);
    expect({ code, ok: r.ok, stalled: r.stalled, drops: r.drops }).toEqual({ code: 0, ok: true, stalled: [], drops: 0 });
    const q = r.fluid?.queueBytes ?? null;
    if (q === null) throw new Error('roce sim --fluid gave no queue figure');
    const off = (q.sim - q.fluid) / q.fluid;
    expect({ sim: q.sim, fluid: q.fluid, within: Math.abs(off) <= 0.5, belowKmax: q.sim < KMAX }).toEqual({
      sim: q.sim,
      fluid: q.fluid,
      within: true,
      belowKmax: true,
    });
    expect(r.pfcPausesUs === null || r.pfcPausesUs.last <= 10_000).toBe(true);
  },
  600_000,
);

test('a lossy incast without PFC: the stalled flows are named with their reason, the run is not ok and exits 1', async () => {
  const { code, r } = await sim(['--hosts', '9', '--link-rate', '10G', '--buffer', '200K', '--cc', 'dcqcn', '--duration', '10ms', '--seed', '1']);
  expect({ code, ok: r.ok }).toEqual({ code: 1, ok: false });
  expect(r.drops).toBeGreaterThan(0);
  expect(r.stalled.length).toBeGreaterThan(0);
  for (const name of r.stalled) {
    const f = r.flows.find((x) => x.name === name);
    expect({ name, state: f?.state, reason: f?.stall?.reason }).toEqual({ name, state: 'stalled', reason: 'timeout' });
  }
  // The steady figures leave the stalled flows out.
  for (const name of r.stalled) expect(r.steady.flows).not.toContain(name);
}, 600_000);
