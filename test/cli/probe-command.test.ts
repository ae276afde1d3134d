/**
 * `roce probe`: --list, a bundled scenario's table and JSON, --show, a scenario file, --fail-on,
 * and the exit statuses of its help (2 for a usage error or a scenario that cannot be read, with
 * the file and line; 1 for a run that cannot be made or a --fail-on figure that failed).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { BUNDLED_SCENARIOS } from '../../apps/probe/bundled-scenarios';
import { FIGURE_KINDS, type Figure } from '../../apps/probe/measurements';
import { parseProbeFailOn, probeFailures } from '../../apps/probe/probe-report';
import type { ProbeResult } from '../../apps/probe/probe-result';
import { localAckTimeoutNs } from '../../stack/qp-attributes';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-probe-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function probe(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await run(['probe', ...argv], o);
  return { code, out: o.out, err: o.err };
}

test('--list names every bundled scenario with its summary; --json lists them as objects', async () => {
  const r = await probe('--list');
  expect(r.code).toBe(0);
  for (const b of BUNDLED_SCENARIOS) expect(r.out).toMatch(new RegExp(`^${b.name} +${b.summary.replace(/[()×^.]/g, '\\$&')}$`, 'm'));
  const j = await probe('--list', '--json');
  expect(JSON.parse(j.out)).toEqual(BUNDLED_SCENARIOS.map((b) => ({ name: b.name, summary: b.summary })));
});

test('a bundled scenario: the table has measured beside configured, the verdict and the clause', async () => {
  const r = await probe('--scenario', 'timeout-withheld-ack');
  expect(r.code).toBe(0);
  expect(r.err).toBe('');
  expect(r.out).toMatch(/^scenario timeout-withheld-ack: DUT requester \(ib_write_bw\) on the memory link/);
  expect(r.out).toMatch(/error ±0 ns; path round trip 4\.000 µs/);
  expect(r.out).toMatch(/^figure +QP +PSN +measured +DUT +configured +seen +verdict +clause$/m);
  expect(r.out).toMatch(/^timeoutRetransmit +0 +15 +4194\.304 µs +- +4194\.304 µs +PSN 0 +pass +IBTA vol\. 1 §9\.7\.6\.1\.3$/m);
  expect(r.out).toMatch(/DUT's work completions: QP 0: SUCCESS/);
});

test('--json: the result object, its figures with their keys, ok and no failures', async () => {
  const r = await probe('--scenario', 'nak-generation', '--json', '--latency-us', '5', '--fail-on', 'any');
  expect(r.code).toBe(0);
  const j = JSON.parse(r.out) as ProbeResult & { ok: boolean; source: string; failures: string[] };
  expect(j).toMatchObject({ ok: true, source: 'bundled nak-generation', scenario: 'nak-generation', pathRttNs: 10_000, failures: [] });
  expect(Object.keys(j.figures[0]!).sort()).toEqual([
    'clause',
    'configured',
    'detail',
    'dutNs',
    'eventLine',
    'kind',
    'measuredNs',
    'psn',
    'qp',
    'value',
    'verdict',
  ]);
  expect(j.figures[0]).toMatchObject({ kind: 'nakGeneration', measuredNs: 10_000, dutNs: 0, verdict: 'pass' });
});

test('a scenario file runs; --show prints it back; a bundled one with --show prints its YAML', async () => {
  const file = path.join(dir, 'mine.yml');
  const text =
    'name: mine\ndut:\n  role: requester\n  tool: ib_write_bw\ntraffic:\n  message-size: 2048\n  min-retransmit-timeout: 9\nevents:\n  - type: drop\n    psn: 1\n';
  fs.writeFileSync(file, text);
  const r = await probe(file, '--json');
  expect(r.code).toBe(0);
  const j = JSON.parse(r.out) as ProbeResult;
  expect(j.figures).toEqual([expect.objectContaining({ kind: 'timeoutRetransmit', measuredNs: localAckTimeoutNs(9), verdict: 'pass', eventLine: 9 })]);
  expect((await probe(file, '--show')).out).toBe(text);
  expect((await probe('--scenario', 'rnr-wait', '--show')).out).toBe(BUNDLED_SCENARIOS.find((b) => b.name === 'rnr-wait')!.yaml);
});

test.each([
  [['--scenario', 'no-such'], /--scenario "no-such" names no bundled scenario \(nak-generation, /],
  [[], /give a SCENARIO file, --scenario NAME or --list/],
  [['--list', '--scenario', 'rnr-wait'], /--list takes no scenario/],
  [['--driver', 'bogus', '--scenario', 'rnr-wait'], /--driver must be memory, xdp or packet, not "bogus"/],
  [['--driver', 'xdp', '--scenario', 'rnr-wait'], /--driver xdp needs --dev IFACE/],
  [['--dev', 'eth0', '--scenario', 'rnr-wait'], /--dev is for a live DUT \(--driver xdp or packet\)/],
  [['--driver', 'packet', '--dev', 'eth0', '--scenario', 'nak-generation'], /the DUT is the responder .*--dut IP/],
  [['--driver', 'packet', '--dev', 'eth0', '--latency-us', '3', '--scenario', 'rnr-wait'], /--latency-us sets the in-memory link/],
  [['--fail-on', 'nakGeneration,bogus', '--scenario', 'rnr-wait'], /--fail-on: unknown bogus/],
  [['--latency-us', '-1', '--scenario', 'rnr-wait'], /--latency-us must be an integer/],
])('usage error %j: exit 2, one line', async (argv, message) => {
  const r = await probe(...argv);
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err).toMatch(message);
  expect(r.err.trimEnd().split('\n')).toHaveLength(1);
});

test('a scenario that cannot be read: exit 2, the file and the line', async () => {
  const file = path.join(dir, 'bad.yml');
  fs.writeFileSync(file, 'name: bad\ndut:\n  role: requester\n  tool: ib_write_bw\nevents:\n  - type: drop\n    psn: 1\n    iter: &x 2\n');
  const r = await probe(file);
  expect(r).toEqual({ code: 2, out: '', err: `roce probe: ${file}: line 8: anchors and aliases ('&') are outside the subset\n` });
  const missing = await probe(path.join(dir, 'none.yml'));
  expect(missing.code).toBe(2);
  expect(missing.err).toMatch(/^roce probe: .*none\.yml: no such file/);
});

test('a run that cannot be made (an rping DUT on the in-memory link, which moves perftest workloads): exit 1, why; --json says why', async () => {
  const file = path.join(dir, 'rping.yml');
  fs.writeFileSync(file, 'name: rping\ndut:\n  role: requester\n  tool: rping\nevents:\n  - type: drop-read-response\n    psn: 0\n');
  const r = await probe(file);
  expect(r.code).toBe(1);
  expect(r.err).toBe(
    `roce probe: ${file}: an rping DUT runs live (--driver xdp|packet): the in-memory link moves perftest's workload, not rping's exchange over the RDMA CM\n`,
  );
  const j = await probe(file, '--json');
  expect(j.code).toBe(1);
  expect(JSON.parse(j.out)).toMatchObject({ ok: false, code: 'ROCE_ERR_PROBE_RUN' });
});

test('--fail-on: a failed figure of a kind named fails the run, one of another kind does not', () => {
  const fig = (kind: Figure['kind'], verdict: Figure['verdict']): Figure => ({
    kind,
    qp: 0,
    psn: 3,
    eventLine: 7,
    measuredNs: 1,
    dutNs: null,
    configured: 2,
    value: 2,
    verdict,
    detail: 'd',
    clause: 'c',
  });
  const result = { figures: [fig('nakGeneration', 'fail'), fig('rnrWait', 'pass'), fig('retryCount', 'none')] } as ProbeResult;
  expect(probeFailures(result, parseProbeFailOn(['any']).kinds)).toEqual(['nakGeneration (QP 0, PSN 3, line 7): d']);
  expect(probeFailures(result, parseProbeFailOn(['rnrWait,retryCount']).kinds)).toEqual([]);
  expect([...parseProbeFailOn(['any']).kinds].sort()).toEqual([...FIGURE_KINDS].sort());
});
