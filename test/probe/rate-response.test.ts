/**
 * `roce probe`'s `cnp` event and its rate figures. On the in-memory link the DUT is this stack's
 * DCQCN reaction point (stack/congestion/rp/dcqcn.ts) with the scenario's `dcqcn:` parameters,
 * paced at `rate-mbps`, so the truth is known: the first cut is R(1 − α/2) with
 * α = rp_initial_alpha_value/1024, bounded by rp_min_dec_fac, and the increases come every
 * rp_time_reset µs and every rp_byte_reset bytes. Each reading must contain the value the DUT was
 * set with; a scenario that claims other values fails; a DUT whose rate does not move has no
 * reaction point (`none`). The level reader is checked on frames paced as the pacer paces them.
 */
import { bundledScenario } from '../../apps/probe/bundled-scenarios';
import { type Figure, measure } from '../../apps/probe/measurements';
import { runInMemory } from '../../apps/probe/memory-runner';
import { type FrameRecord, frameRecord } from '../../apps/probe/probe-driver';
import { ProbeError } from '../../apps/probe/probe-error';
import { GAP_NOISE_NS, pacedLevels } from '../../apps/probe/rate-levels';
import { parseScenario } from '../../apps/probe/scenario';
import { Opcode } from '../../packets/opcodes';
import { wireBytes } from '../../packets/wire-size';

const scenarioText = (dcqcn: Record<string, number>, events = ['  - type: cnp', '    psn: 256']): string =>
  [
    'name: rate',
    'dut:',
    '  role: requester',
    '  tool: ib_write_bw',
    'traffic:',
    '  num-msgs-per-qp: 4',
    '  message-size: 1048576',
    '  mtu: 1024',
    '  rate-mbps: 10000',
    ...(Object.keys(dcqcn).length > 0 ? ['dcqcn:', ...Object.entries(dcqcn).map(([k, v]) => `  ${k}: ${v}`)] : []),
    'events:',
    ...events,
  ].join('\n');

const figure = (figs: readonly Figure[], kind: Figure['kind']): Figure => {
  const f = figs.find((x) => x.kind === kind);
  if (f === undefined) throw new Error(`no ${kind} figure`);
  return f;
};

test('pacedLevels: frames paced as the pacer paces them (whole-ns timer, exact turns) give each rate and where it began', () => {
  // 200 frames at 10 Gb/s, 300 at 5 Gb/s, 300 at 7.5 Gb/s; a turn is the last turn plus the gap, the frame leaves at its ceiling.
  const len = 1078;
  const frames: { timeNs: number; len: number }[] = [];
  let turn = 1000.3;
  const rates = [...Array(200).fill(10_000), ...Array(300).fill(5000), ...Array(300).fill(7500)] as number[];
  for (const r of rates) {
    frames.push({ timeNs: Math.ceil(turn), len });
    turn += (wireBytes(len) * 8000) / r;
  }
  const levels = pacedLevels(frames);
  expect(levels.map((l) => Math.round(l.mbps))).toEqual([10_000, 5000, 7500]);
  // The gap after frame k is the rate frame k left with: frame 200 is the first to leave at 5 Gb/s, so the first gap at it ends at frame 201.
  expect(levels.map((l) => l.first)).toEqual([1, 201, 501]);
  for (const l of levels) expect(Math.abs(l.mbps - Math.round(l.mbps))).toBeLessThan(0.5);
  expect(GAP_NOISE_NS).toBe(2);
});

test.each([
  { dcqcn: { rp_time_reset: 300, rp_byte_reset: 32767 }, timer: 0 },
  { dcqcn: { rp_time_reset: 55, rp_byte_reset: 10485760 }, byte: 1 },
  { dcqcn: { rp_time_reset: 100, rp_byte_reset: 65536 } },
  { dcqcn: { rp_time_reset: 20, rp_byte_reset: 8192 } },
  { dcqcn: { rp_time_reset: 300, rp_byte_reset: 32767, rp_min_dec_fac: 80 } },
  { dcqcn: { rp_time_reset: 300, rp_byte_reset: 32767, rp_initial_alpha_value: 512 } },
])('one CNP to a DCQCN DUT set with $dcqcn: the cut and the readings hold what it was set with', ({ dcqcn }) => {
  const s = parseScenario(scenarioText(dcqcn));
  const r = runInMemory(s, { latencyNs: 2000 });
  const cut = figure(r.figures, 'rateCut');
  const rec = figure(r.figures, 'rateRecovery');
  expect([cut.verdict, rec.verdict]).toEqual(['pass', 'pass']);
  const alpha = (dcqcn.rp_initial_alpha_value ?? 1023) / 1024;
  const want = 1 - Math.min(alpha / 2, (100 - (dcqcn.rp_min_dec_fac ?? 50)) / 100);
  const d = cut.rate!.estimate.decreases[0]!;
  expect(d.toMbps / d.fromMbps).toBeCloseTo(want, 3);
  expect(cut.rate!.beforeMbps).toBeGreaterThan(9990);
  expect(cut.rate!.beforeMbps).toBeLessThanOrEqual(10_000);
  // The cut shows one round trip (4 µs) and at most one frame gap at the cut rate after our CNP left.
  expect(cut.measuredNs!).toBeGreaterThanOrEqual(4000);
  expect(cut.measuredNs!).toBeLessThanOrEqual(4000 + (2 * wireBytes(1078) * 8000) / d.toMbps);
  const e = rec.rate!.estimate;
  expect(e.fits).toBeGreaterThan(0);
  const T = dcqcn.rp_time_reset * 1000;
  expect(e.timeResetNs!.lo).toBeLessThanOrEqual(T);
  if (e.timeResetNs!.hi !== null) expect(e.timeResetNs!.hi).toBeGreaterThanOrEqual(T);
  expect(e.byteReset!.lo).toBeLessThanOrEqual(dcqcn.rp_byte_reset);
  if (e.byteReset!.hi !== null) expect(e.byteReset!.hi).toBeGreaterThanOrEqual(dcqcn.rp_byte_reset);
  // Fast recovery toward the rate before the CNP (R_T stays at the line rate: no clamp on the first cut).
  expect(e.targetMbps!).toBeGreaterThan(9900);
  expect(rec.measuredNs).not.toBeNull();
});

test('where both counters step, the readings are intervals a few percent wide around the values set', () => {
  const r = runInMemory(parseScenario(scenarioText({ rp_time_reset: 20, rp_byte_reset: 8192 })));
  const e = figure(r.figures, 'rateRecovery').rate!.estimate;
  expect(e.timerSteps).toBeGreaterThan(0);
  expect(e.byteSteps).toBeGreaterThan(0);
  expect(e.timeResetNs!.hi! - e.timeResetNs!.lo).toBeLessThan(0.1 * 20_000);
  expect(e.byteReset!.hi! - e.byteReset!.lo).toBeLessThan(0.15 * 8192);
});

test('the bundled cnp-rate scenario passes on this stack as the DUT, and a train of CNPs cuts more than once', () => {
  const b = bundledScenario('cnp-rate')!;
  const r = runInMemory(parseScenario(b.yaml));
  expect(r.figures.map((f) => `${f.kind} ${f.verdict}`)).toEqual(['rateCut pass', 'rateRecovery pass']);
  expect(r.dutCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);
  const train = runInMemory(
    parseScenario(scenarioText({ rp_time_reset: 300, rp_byte_reset: 32767 }, ['  - type: cnp', '    psn: 256', '    count: 3', '    interval-us: 100'])),
  );
  const cut = figure(train.figures, 'rateCut');
  expect(cut.rate!.cnpsNs).toHaveLength(3);
  expect(cut.rate!.cnpsNs[1]! - cut.rate!.cnpsNs[0]!).toBe(100_000);
  expect(cut.rate!.estimate.decreases).toHaveLength(3);
  // Each later cut finds α decayed since the one before (α ← (1 − g)α per rp_dce_tcp_rtt without a CNP).
  const alphas = cut.rate!.estimate.decreases.map((d) => d.alpha);
  expect(alphas[1]!).toBeLessThan(alphas[0]!);
});

/** The run's frames at our driver as the probe driver records them (for judging them against another scenario). */
function recorded(text: string): { records: FrameRecord[]; qps: { ourQpn: number; dutQpn: number; requestStartPsn: number }[] } {
  const records: FrameRecord[] = [];
  runInMemory(parseScenario(text), {
    onWire: (frame, timeNs, dir, fate) => {
      const r = frameRecord(frame, timeNs, dir, fate);
      if (r !== null) records.push(r);
    },
  });
  const rx = records.find((x) => x.dir === 'rx')!;
  const tx = records.find((x) => x.dir === 'tx')!;
  return { records, qps: [{ ourQpn: rx.destQp, dutQpn: tx.destQp, requestStartPsn: rx.psn }] };
}

test('a DUT whose timer or byte counter is not what the scenario says fails rateRecovery; one whose cut is not fails rateCut', () => {
  const { records, qps } = recorded(scenarioText({ rp_time_reset: 20, rp_byte_reset: 8192 }));
  const judged = (dcqcn: Record<string, number>): Figure[] => measure({ scenario: parseScenario(scenarioText(dcqcn)), qps, records, pathRttNs: 4000 });
  expect(judged({ rp_time_reset: 20, rp_byte_reset: 8192 }).map((f) => f.verdict)).toEqual(['pass', 'pass']);
  const wrongTimer = figure(judged({ rp_time_reset: 55, rp_byte_reset: 8192 }), 'rateRecovery');
  expect(wrongTimer.verdict).toBe('fail');
  expect(wrongTimer.detail).toMatch(/configured: rp_time_reset 55 µs, rp_byte_reset 8192 B/);
  expect(figure(judged({ rp_time_reset: 20, rp_byte_reset: 16384 }), 'rateRecovery').verdict).toBe('fail');
  expect(figure(judged({ rp_time_reset: 20, rp_byte_reset: 8192, rp_min_dec_fac: 80 }), 'rateCut').verdict).toBe('fail');
  // Without dcqcn: nothing claimed, a cut and a recovery pass.
  expect(judged({}).map((f) => f.verdict)).toEqual(['pass', 'pass']);
});

test('a DUT whose rate does not move after our CNP has no reaction point: rateCut is none, saying so', () => {
  // Frames every 881.6 ns (10 Gb/s of 1078-byte frames) before and after our CNP.
  const ours = 0x11;
  const dut = 0x22;
  const records: FrameRecord[] = [];
  for (let i = 0; i < 600; i++)
    records.push({
      timeNs: Math.ceil(i * 881.6),
      dir: 'rx',
      opcode: Opcode.RC_RDMA_WRITE_MIDDLE,
      len: 1078,
      destQp: ours,
      psn: 100 + i,
      ackReq: false,
      syndrome: -1,
      reth: null,
      fate: 'delivered',
    });
  records.splice(300, 0, {
    timeNs: Math.ceil(299 * 881.6) + 1,
    dir: 'tx',
    opcode: Opcode.CNP,
    len: 78,
    destQp: dut,
    psn: 0,
    ackReq: false,
    syndrome: -1,
    reth: null,
    fate: 'delivered',
  });
  const figs = measure({ scenario: parseScenario(scenarioText({})), qps: [{ ourQpn: ours, dutQpn: dut, requestStartPsn: 100 }], records, pathRttNs: 4000 });
  expect(figs).toHaveLength(1);
  expect(figs[0]).toMatchObject({ kind: 'rateCut', verdict: 'none', measuredNs: null });
  expect(figs[0]!.detail).toMatch(/stayed at 10000 Mb\/s after our 1 CNP\(s\): no reaction point/);
});

test.each([
  [
    ['name: c', 'dut:', '  role: responder', '  tool: ib_write_bw', 'events:', '  - type: cnp', '    psn: 1'],
    6,
    /a cnp event tells the DUT's requester to slow down: it needs dut.role requester/,
  ],
  [
    ['name: c', 'dut:', '  role: requester', '  tool: ib_write_bw', 'events:', '  - type: drop', '    psn: 1', '    count: 2'],
    8,
    /count belongs to cnp events/,
  ],
  [
    ['name: c', 'dut:', '  role: requester', '  tool: ib_write_bw', 'events:', '  - type: cnp', '    psn: 1', '    count: 0'],
    8,
    /event.count must be an integer in 1..10000/,
  ],
  [
    ['name: c', 'dut:', '  role: requester', '  tool: ib_write_bw', 'dcqcn:', '  rp_time: 5'],
    6,
    /unknown key 'rp_time' in dcqcn \(known: rp_clamp_tgt_rate, .*rp_time_reset/,
  ],
  [['name: c', 'dut:', '  role: requester', '  tool: ib_write_bw', 'dcqcn:', '  rp_gd: 5'], 6, /dcqcn.rp_gd: must be an integer 10..11, not 5/],
])('a bad cnp event or dcqcn section is refused with its line: %j', (lines, line, message) => {
  let e: unknown;
  try {
    parseScenario(lines.join('\n'));
  } catch (x) {
    e = x;
  }
  expect(e).toBeInstanceOf(ProbeError);
  expect((e as ProbeError).line).toBe(line);
  expect((e as ProbeError).message).toMatch(message);
});
