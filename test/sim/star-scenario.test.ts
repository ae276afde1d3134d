/**
 * The switch model and `roce sim`'s runner: two flows into one port of a 10 Gb/s star
 * (RED marking at the paper's Kmin 5 KB, Kmax 200 KB, Pmax 1 %), with DCQCN (the paper's
 * parameters), without congestion control (tail drop, then go-back-N), and with PFC (pauses, no
 * drop, PAUSE frames on the wire); the same seed gives the same run. Then the report's judgement:
 * stalled flows named with the reason read from the engine (a lossy 8 → 1 incast waits on its local
 * ACK timers; PFC's head-of-line blocking pauses a flow to an idle port), `ok` false unless stalls
 * are expected, `completed` only for a sized flow that moved it all, and the steady figures over
 * the flows they name.
 */
import { defaultStallWindowNs, runStarScenario, type StarScenario } from '../../apps/sim/star-scenario';
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

test("without congestion control, 3 → 1: the port's buffer overflows, tail drops, then go-back-N retransmissions", () => {
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
      if (f[12] === 0x88 && f[13] === 0x08) pfcFrames.push({ pause: (((f[18 + 2 * PFC_PRIORITY] ?? 0) << 8) | (f[19 + 2 * PFC_PRIORITY] ?? 0)) !== 0, t });
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

/** 8 → 1 at 10 Gb/s into a 200 KB buffer for 5 ms. */
const incast: StarScenario = { ...base, hosts: 9, flows: Array.from({ length: 8 }, (_, src) => ({ src, dst: 8 })), bufferBytes: 200_000, durationNs: 5 * MS };

test('a lossy 8 → 1 incast without PFC or congestion control: the flows whose tails were dropped are stalled on their local ACK timers, and the run is not ok', () => {
  const r = runStarScenario({ ...incast, cc: 'none' });
  expect(r.drops).toBeGreaterThan(0);
  // Four times a full buffer's drain (160 µs) and the base round trip (4 µs, two 4096-byte-MTU frames of 4248 B on the wire).
  expect(r.stallWindowUs).toBe(683.187);
  expect(defaultStallWindowNs(incast)).toBe(683_187);
  const stalled = r.flows.filter((f) => f.state === 'stalled');
  expect(stalled.length).toBeGreaterThanOrEqual(4);
  expect(r.stalled).toEqual(r.flows.filter((f) => f.stalls.length > 0).map((f) => f.name));
  expect(r.stalled).toEqual(expect.arrayContaining(stalled.map((f) => f.name)));
  expect(r.ok).toBe(false);
  expect(r.stallsExpected).toBe(false);
  for (const f of stalled) {
    const st = f.stall!;
    expect(st).toBe(f.stalls[f.stalls.length - 1]);
    expect(st.untilUs).toBeNull();
    expect(st.reason).toBe('timeout');
    // The timer runs from the last progress: it fires 67.1 ms (timeout 14) later, after the run.
    expect(st.detail).toMatch(/local ACK timer \(67108\.864 µs\) fires at [\d.]+ µs, requests from PSN \d+ outstanding/);
    expect(st.sinceUs).toBeLessThanOrEqual(r.durationUs - r.stallWindowUs);
    // Nothing of it left the switch after it stalled.
    expect(f.gbpsOverTime.filter(([t]) => t > st.sinceUs + 500).every(([, g]) => g === 0)).toBe(true);
    expect(f.completed).toBe(false);
  }
  // Unlimited flows that kept moving are running, not completed.
  for (const f of r.flows.filter((x) => x.state !== 'stalled')) expect([f.state, f.completed]).toEqual(['running', false]);
  // The steady figures cover the flows that moved over the whole window, and only them.
  expect(r.steady.flows).toEqual(r.flows.filter((f) => f.stalls.every((x) => x.untilUs !== null && x.untilUs <= r.steady.fromUs)).map((f) => f.name));
  expect(r.steady.flowsGbps).toHaveLength(r.steady.flows.length);
  expect(r.steady.flows).not.toContain(stalled[0]!.name);
});

test('the same incast with stalls expected: still named, and the run is ok', () => {
  const r = runStarScenario({ ...incast, cc: 'none', expectStalls: true });
  expect(r.stallsExpected).toBe(true);
  expect(r.stalled.length).toBeGreaterThanOrEqual(4);
  expect(r.flows.filter((f) => f.state === 'stalled').every((f) => f.stall?.reason === 'timeout')).toBe(true);
  expect(r.ok).toBe(true);
});

test('the incast with PFC and DCQCN: no drop, no stall, every flow covered by the steady figures, ok', () => {
  const r = runStarScenario({ ...incast, pfc: { xoffBytes: 20_000, xonBytes: 10_000 }, ccParams: {} });
  expect(r.drops).toBe(0);
  expect(r.pfcPauses).toBeGreaterThan(0);
  expect(r.stalled).toEqual([]);
  expect(r.flows.every((f) => f.state === 'running' && f.stall === null && !f.completed)).toBe(true);
  expect(r.ok).toBe(true);
  expect(r.steady.flows).toEqual(r.flows.map((f) => f.name));
  expect(r.steady.flowsGbps).toHaveLength(8);
  expect(r.steady.jainIndex).toBeGreaterThan(0.9);
});

test('a sized flow that finishes is completed, an unlimited one is running, and the steady figures leave out the one done inside the window', () => {
  const r = runStarScenario({
    ...base,
    flows: [
      { src: 0, dst: 2, bytes: 512 * 1024 },
      { src: 1, dst: 2 },
    ],
    durationNs: 2 * MS,
    steadyFromNs: 1 * MS,
  });
  const [sized, open] = r.flows;
  expect(sized).toMatchObject({ name: 'a>c', state: 'completed', completed: true, bytes: 512 * 1024, stall: null, problems: [] });
  expect(open).toMatchObject({ name: 'b>c', state: 'running', completed: false, stall: null });
  expect(r.ok).toBe(true);
  expect(r.steady.flows).toEqual(['b>c']);
  expect(r.steady.flowsGbps).toHaveLength(1);
  expect(r.steady.jainIndex).toBe(1);
  // A size that does not fit in the run: not completed, and a problem.
  const short = runStarScenario({ ...base, flows: [{ src: 0, dst: 2, bytes: 100 << 20 }], durationNs: 1 * MS });
  expect(short.flows[0]).toMatchObject({ state: 'running', completed: false });
  expect(short.flows[0]!.problems.join()).toMatch(/moved \d+ of 104857600 bytes/);
  expect(short.ok).toBe(false);
  // A flow whose duration runs out before the run's end has ended; one that starts after it is pending.
  const timed = runStarScenario({
    ...base,
    flows: [
      { src: 0, dst: 2, durationNs: 0.5 * MS },
      { src: 1, dst: 2, startNs: 3 * MS },
    ],
    durationNs: 2 * MS,
  });
  expect(timed.flows.map((f) => [f.state, f.completed])).toEqual([
    ['ended', false],
    ['pending', false],
  ]);
  expect(timed.steady.flows).toEqual([]);
  expect(timed.steady.jainIndex).toBeNull();
  expect(timed.ok).toBe(true);
});

test('a stall window shorter than the queues take to drain: flows that wait behind PFC pauses or in a full queue stall, and the reasons say which', () => {
  // a>c and b>c share c; a>d has d to itself, but PFC pauses host a as a whole (one priority), so
  // a>d waits too: PFC's head-of-line blocking.
  const hol: StarScenario = {
    ...base,
    hosts: 4,
    cc: 'none',
    flows: [
      { src: 0, dst: 2 },
      { src: 1, dst: 2 },
      { src: 0, dst: 3 },
    ],
    pfc: { xoffBytes: 300_000, xonBytes: 200_000 },
    durationNs: 3 * MS,
  };
  const r = runStarScenario({ ...hol, stallWindowNs: 50_000 });
  expect(r.pfcPauses).toBeGreaterThan(0);
  const [, bc, ad] = r.flows;
  expect([bc?.name, ad?.name]).toEqual(['b>c', 'a>d']);
  expect(bc!.stalls.length).toBeGreaterThan(0);
  expect(bc!.stalls.every((x) => x.reason === 'paused' && /^PFC (has host b's uplink paused|paused host b's uplink during it)/.test(x.detail))).toBe(true);
  expect(ad!.stalls.length).toBeGreaterThan(0);
  expect(ad!.stalls.every((x) => x.reason === 'paused' && /^PFC (has host a's uplink paused|paused host a's uplink during it)/.test(x.detail))).toBe(true);
  expect([...bc!.stalls, ...ad!.stalls].every((x) => (x.untilUs ?? r.durationUs) - x.sinceUs >= 50)).toBe(true);
  expect(r.stalled).toEqual(['a>c', 'b>c', 'a>d'].filter((name) => r.flows.find((f) => f.name === name)!.stalls.length > 0));
  expect(r.ok).toBe(false);
  // The default window is longer than any of these waits: none of them is a stall.
  const d = runStarScenario(hol);
  expect(d.stalled).toEqual([]);
  expect(d.ok).toBe(true);

  // d>c starts at 1 ms behind a queue of hundreds of KB that a>c and b>c built: its first frames
  // wait in port c's queue longer than the window.
  const late = runStarScenario({
    ...hol,
    flows: [
      { src: 0, dst: 2 },
      { src: 1, dst: 2 },
      { src: 3, dst: 2, startNs: MS },
    ],
    stallWindowNs: 50_000,
  });
  const dc = late.flows[2]!;
  expect(dc.stalls[0]).toMatchObject({ sinceUs: 1000, reason: 'queued' });
  expect(dc.stalls[0]!.detail).toMatch(/port c's queue holds \d+ B/);
  expect(dc.stalls[0]!.untilUs).not.toBeNull();
});
