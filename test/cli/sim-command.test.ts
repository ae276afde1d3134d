/** `roce sim`: the example command, its JSON, its capture, its text report, its verdict on stalled flows (exit 1, or 0 when expected) and its usage errors. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roce } from '../support/cli';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';

const EXAMPLE = [
  '--hosts',
  '3',
  '--flows',
  'a>c,b>c',
  '--link-rate',
  '10G',
  '--buffer',
  '1M',
  '--ecn',
  'kmin=5K,kmax=200K,pmax=0.01',
  '--cc',
  'dcqcn',
  '--duration',
  '3ms',
  '--seed',
  '1',
];

test('the example: JSON with the documented keys, each flow in and out of the congested port', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sim-'));
  const file = path.join(dir, 'out.pcap');
  const r = await roce('sim', ...EXAMPLE, '--json', '--pcap', file);
  expect(r.code).toBe(0);
  const j = JSON.parse(r.out) as Record<string, unknown> & { flows: Record<string, unknown>[]; queue: Record<string, unknown> };
  for (const k of ['ok', 'flows', 'queue', 'ecnMarked', 'cnpsSent', 'cnpsHandled', 'pfcPauses', 'drops']) expect(j).toHaveProperty(k);
  expect(j.ok).toBe(true);
  expect(j.flows.map((f) => [f['name'], f['src'], f['dst']])).toEqual([
    ['a>c', 'a', 'c'],
    ['b>c', 'b', 'c'],
  ]);
  for (const f of j.flows) {
    for (const k of ['bytes', 'meanGbps', 'gbpsOverTime']) expect(f).toHaveProperty(k);
    // Unlimited flows that ran to the end: running, not completed.
    expect([f['state'], f['completed'], f['stall'], f['stalls']]).toEqual(['running', false, null, []]);
    const over = f['gbpsOverTime'] as [number, number][];
    expect(over).toHaveLength(100);
    expect(over[99]?.[0]).toBe(3000);
    expect(Math.max(...over.map(([, g]) => g))).toBeLessThanOrEqual(10);
  }
  for (const k of ['maxBytes', 'meanBytes', 'overTime']) expect(j.queue).toHaveProperty(k);
  expect(j['ecnMarked'] as number).toBeGreaterThan(0);
  expect(j['cnpsSent'] as number).toBeGreaterThan(0);
  // The capture: every RoCE frame decodes with a valid ICRC, the CE marks included (the ICRC masks ECN).
  const cap = readCapture(fs.readFileSync(file));
  expect(cap.error).toBeNull();
  const frames = cap.records.map((x) => decodeFrame(x.data, x.linkType)).filter((d) => d.roce);
  expect(frames.length).toBeGreaterThan(100);
  expect(frames.every((d) => d.roce && d.icrcOk === true)).toBe(true);
  const ce = frames.filter((d) => d.roce && d.ipv4?.ecn === 3).length;
  expect(ce).toBe(j['ecnMarked']);
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

test('the text report: a row per tenth of the run, the flows, the queue and the counts', async () => {
  const r = await roce('sim', ...EXAMPLE, '--pfc', 'xoff=300K,xon=200K', '--cc', 'none');
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/time µs +a>c Gb\/s +b>c Gb\/s +queue c B/);
  expect(r.out).toMatch(/PFC pauses [1-9]\d* \([\d.]+\.\.[\d.]+ µs\), drops 0/);
  expect(r.out).toMatch(/flow a>c: running, \d+ bytes/);
  expect(r.out).toMatch(/\nok: no flow stalled \(stall window \d+(\.\d+)? µs\)\n$/);
  expect(r.out).not.toMatch(/\bus\b/);
}, 60_000);

/** A lossy 8 → 1 incast: no PFC, no congestion control, a 200 KB buffer. */
const LOSSY = ['--hosts', '9', '--buffer', '200K', '--cc', 'none', '--duration', '5ms'];

test('a lossy incast: each stalled flow named with since when and why, "not ok", exit 1', async () => {
  const r = await roce('sim', ...LOSSY);
  expect(r.code).toBe(1);
  const stalled = [
    ...r.out.matchAll(
      / flow (\w>\w): stalled, \d+ bytes.*\n {2}stalled since ([\d.]+) µs to the end: timeout, its local ACK timer \(67108\.864 µs\) fires at [\d.]+ µs/g,
    ),
  ].map((m) => m[1]);
  expect(stalled.length).toBeGreaterThanOrEqual(4);
  const verdict = /\nnot ok: (\d) of 8 flows stalled \(([^;]+); stall window 683\.187 µs\)\n$/.exec(r.out);
  expect(verdict?.[2]?.split(', ')).toEqual(stalled);
  expect(Number(verdict?.[1])).toBe(stalled.length);
  // The steady state names the flows it covers: none of the stalled ones.
  const cover = / steady state 2500\.\.5000 µs: flows (.*) Gb\/s \(Jain/.exec(r.out)?.[1] ?? '';
  for (const name of stalled) expect(cover).not.toContain(name);
}, 60_000);

test('--fluid beside a run with stalled flows: the models are not set beside it, and it says why, in text and in JSON', async () => {
  const t = await roce('sim', ...LOSSY, '--ecn', 'kmin=5K,kmax=200K,pmax=0.01', '--cc', 'dcqcn', '--fluid');
  expect(t.code).toBe(1);
  expect(t.out).toMatch(/\n models: not set beside this run: \d of 8 flows stalled \([a-h]>i(, [a-h]>i)*\), and the models take every flow as moving\n$/);
  expect(t.out).not.toContain('fixed point');
  const j = await roce('sim', ...LOSSY, '--ecn', 'kmin=5K,kmax=200K,pmax=0.01', '--cc', 'dcqcn', '--fluid', '--json');
  const r = JSON.parse(j.out) as { fluid?: unknown; fluidSkipped?: string; stalled: string[] };
  expect(r.stalled.length).toBeGreaterThan(0);
  expect(r.fluid).toBeUndefined();
  expect(r.fluidSkipped).toMatch(/flows stalled/);
}, 60_000);

test('the same with --expect-stalls: still named, "ok ... as the scenario expects", exit 0; the JSON says the same', async () => {
  const r = await roce('sim', ...LOSSY, '--expect-stalls');
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/ flow \w>i: stalled, \d+ bytes.*\n {2}stalled since [\d.]+ µs to the end: timeout/);
  expect(r.out).toMatch(/\nok: \d of 8 flows stalled \([a-h]>i(, [a-h]>i)*; stall window 683\.187 µs\), as the scenario expects \(--expect-stalls\)\n$/);
  const j = await roce('sim', ...LOSSY, '--expect-stalls', '--json');
  expect(j.code).toBe(0);
  const o = JSON.parse(j.out) as {
    ok: boolean;
    stallsExpected: boolean;
    stalled: string[];
    stallWindowUs: number;
    flows: { name: string; state: string; stall: { reason: string; untilUs: null } | null }[];
    steady: { flows: string[]; flowsGbps: number[] };
  };
  expect([o.ok, o.stallsExpected, o.stallWindowUs]).toEqual([true, true, 683.187]);
  expect(o.stalled).toEqual(o.flows.filter((f) => f.state === 'stalled').map((f) => f.name));
  expect(o.flows.filter((f) => f.state === 'stalled').every((f) => f.stall?.reason === 'timeout' && f.stall.untilUs === null)).toBe(true);
  expect(o.steady.flowsGbps).toHaveLength(o.steady.flows.length);
  const n = await roce('sim', ...LOSSY, '--json');
  expect(n.code).toBe(1);
  expect((JSON.parse(n.out) as { ok: boolean }).ok).toBe(false);
}, 60_000);

test("--fluid: the steady state and the convergence, then the fluid model's fixed point beside them, in text and in JSON", async () => {
  const argv = ['--link-rate', '40G', '--buffer', '12M', '--mtu', '1024', '--cc', 'dcqcn-paper', '--duration', '6ms', '--steady-from', '3ms', '--fluid'];
  const t = await roce('sim', ...argv);
  expect(t.code).toBe(0);
  expect(t.out).toMatch(/steady state 3000\.\.6000 µs: flows a>c [\d.]+, b>c [\d.]+ Gb\/s \(Jain [\d.]+\), queue mean \d+ B, \d+ frames, [\d.]+ % marked/);
  expect(t.out).toMatch(/convergence \(every flow within 10 % of the flows' mean over 300 µs windows\)/);
  expect(t.out).toMatch(/fluid model: 2 flows, 40 Gb\/s, 1106 B packets on the wire/);
  expect(t.out).toMatch(/rate per flow +sim +[\d.]+ Gb\/s +fixed point +20\.00 Gb\/s +[+-][\d.]+ %/);
  expect(t.out).toMatch(/queue +sim +\d+ B +fixed point +21756 B/);
  expect(t.out).toMatch(/marked +sim +[\d.]+ % +fixed point +0\.086 %/);
  expect(t.out).toMatch(/CNPs per flow +sim +[\d.]+ \/ms +fixed point +1\.85 \/ms/);
  // The marks model's fixed point depends on the frame size alone; the hybrid model runs the run's window.
  expect(t.out).toMatch(
    /marks model \(each reaction point discrete, marks independent, the queue fluid; 20000 rate cuts at each p\):\n.*\n +queue +sim +\d+ B +fixed point +25636 B/,
  );
  expect(t.out).toMatch(
    /hybrid model \(N discrete reaction points on one fluid queue, the run's window, mean of 5 seeds\):\n +rate per flow +sim +[\d.]+ Gb\/s +model +[\d.]+ Gb\/s/,
  );
  expect(t.out).toMatch(/the model's queue \d+\.\.\d+ B, [\d.]+ % of its packets sent above kmax/);
  const j = await roce('sim', ...argv, '--json');
  expect(j.code).toBe(0);
  const r = JSON.parse(j.out) as {
    steady: { fromUs: number; flowsGbps: number[] };
    convergence: { windowUs: number };
    fluid: { fixedPoint: { queueBytes: number }; queueBytes: { sim: number; fluid: number; difference: number } };
  };
  expect(r.steady.fromUs).toBe(3000);
  expect(r.steady.flowsGbps).toHaveLength(2);
  expect(r.convergence.windowUs).toBe(300);
  expect(r.fluid.queueBytes.fluid).toBe(Math.round(r.fluid.fixedPoint.queueBytes));
  expect(r.fluid.queueBytes.difference).toBeCloseTo((r.fluid.queueBytes.sim - r.fluid.queueBytes.fluid) / r.fluid.queueBytes.fluid, 9);
  const more = JSON.parse(j.out) as {
    fluid: {
      marks: { fixedPoint: { queueBytes: number }; queueBytes: { sim: number; fluid: number } };
      hybrid: { seeds: number; queueBytes: { sim: number; fluid: number } };
    };
  };
  expect(more.fluid.marks.queueBytes.fluid).toBe(Math.round(more.fluid.marks.fixedPoint.queueBytes));
  expect(more.fluid.marks.queueBytes.sim).toBe(r.fluid.queueBytes.sim);
  expect(more.fluid.hybrid.seeds).toBe(5);
  expect(more.fluid.hybrid.queueBytes.sim).toBe(r.fluid.queueBytes.sim);
  expect(more.fluid.hybrid.queueBytes.fluid).toBeGreaterThan(0);
}, 120_000);

test.each([
  [['--fluid', '--cc', 'none'], /--fluid: the fluid model is of DCQCN/],
  [['--fluid', '--ecn', 'threshold=50K'], /--fluid: the fluid model marks by RED/],
  [['--fluid', '--flows', 'a>c,c>b'], /one bottleneck/],
  [['--mtu', '1500'], /--mtu must be 256, 512, 1024, 2048 or 4096/],
  [['--duration', '2ms', '--steady-from', '2ms'], /--steady-from must be before the end/],
  [['--flows', 'a>z'], /no host "z"/],
  [['--flows', 'a>a'], /from a host to itself/],
  [['--flows', 'a-c'], /must look like a>c/],
  [['--link-rate', 'fast'], /--link-rate must be a number/],
  [['--duration', '20'], /--duration must be a time/],
  [['--ecn', 'kmin=5K'], /RED needs kmin=, kmax= and pmax=/],
  [['--ecn', 'kmin=200K,kmax=5K,pmax=0.1'], /RED marking needs/],
  [['--pfc', 'xoff=10K,xon=20K'], /PFC needs/],
  [['--cc', 'bbr'], /--cc must be dcqcn, dcqcn-paper or/],
  [['--cc', 'off'], /--cc must be dcqcn, dcqcn-paper or none, not "off"/],
  [['--cc-param', 'rp_bogus=3'], /unknown parameter rpBogus/],
  [['--cc', 'none', '--cc-param', 'rp_ai_rate=40'], /needs --cc dcqcn/],
  [['--hosts', '65'], /--hosts must be an integer/],
  [['--stall-window', '0ns'], /--stall-window must be more than 0/],
  [['--stall-window', '3'], /--stall-window must be a time/],
] as const)('%j is a usage error', async (argv, msg) => {
  const r = await roce('sim', ...argv);
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
