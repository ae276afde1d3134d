/**
 * `roce audit`'s active method against this stack on the in-memory link: a perftest server run
 * again after each run (as a user runs ib_write_bw in a loop), audited over real TCP. A stack that
 * draws its names at random comes out unpredictable, one in rxe's sequential order predictable;
 * the capture of the same runs, judged by `roce analyze --audit`'s collector, gives the same
 * values and the same verdicts for what it can see (the server's starting PSNs are not on the
 * wire in a WRITE test: the server sends no requests). The CLI command ends within its bound and
 * says why when the peer is gone.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock } from '../../apps/host/clock-pump';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import { auditPeer, type PeerAuditResult } from '../../apps/audit/peer-audit';
import { guessabilityOfCapture } from '../../analysis/guessability-capture';
import { CryptoRandom } from '../../base/crypto-random';
import { AllocationOrder } from '../../stack/allocation-order';
import { freePort } from '../oob/support';
import { roceWith } from '../support/cli';

/**
 * Runs per audit. With few values a random series can look weak by chance (three 24-bit steps all
 * under 2^19 apart: about 1 in 4096); from 6 values on, the chance is under 1 in 10^4 per series.
 */
const RUNS = 8;
const CLI_RUNS = 8;

async function audited(allocation: AllocationOrder): Promise<{ r: PeerAuditResult; capture: Uint8Array }> {
  const tap = new PcapTap();
  const sim = createSimPair({ seed: 3, tap, random: new CryptoRandom(), allocation });
  const pump = pumpVirtualClock(sim.clock);
  const l = await TcpChannel.listen(0, '127.0.0.1');
  try {
    // The peer: a perftest server run again as soon as the last one ended.
    const serve = (async () => {
      for (let i = 0; i < RUNS; i++)
        await runPerftest(sim.b, { verb: 'write', lat: false, role: 'server', listener: l, iters: 5, size: 64, connectTimeoutMs: 10_000 });
    })();
    const r = await auditPeer(sim.a, { server: '127.0.0.1', port: l.port, runs: RUNS, restartWaitMs: 5000 });
    await serve;
    return { r, capture: tap.bytes() };
  } finally {
    l.close();
    pump.stop();
  }
}

const verdicts = (r: PeerAuditResult): Record<string, string> => Object.fromEntries(r.report.judgements.map((j) => [j.kind, j.verdict]));

test('this stack (random names): every R_Key, address, QPN and starting PSN unpredictable; the capture agrees', async () => {
  const { r, capture } = await audited(AllocationOrder.RANDOM);
  expect(r.stopped).toBeNull();
  expect(r.runs).toHaveLength(RUNS);
  expect(verdicts(r)).toEqual({ rkey: 'unpredictable', va: 'unpredictable', qpn: 'unpredictable', startPsn: 'unpredictable' });
  expect(r.report.verdict).toBe('unpredictable');
  const c = guessabilityOfCapture(capture);
  const server = Object.fromEntries(c.report.judgements.filter((j) => j.host === '198.18.0.2').map((j) => [j.kind, j]));
  for (const kind of ['rkey', 'va', 'qpn'] as const) {
    const mine = r.report.judgements.find((j) => j.kind === kind);
    expect({ kind, sample: server[kind]?.sample, verdict: server[kind]?.verdict }).toEqual({ kind, sample: mine?.sample, verdict: mine?.verdict });
  }
}, 60_000);

test("a stack in rxe's sequential order: QPNs sequential, R_Keys predictable, the peer predictable; the capture agrees", async () => {
  const { r, capture } = await audited(AllocationOrder.SEQUENTIAL);
  expect(r.stopped).toBeNull();
  const qpn = r.report.judgements.find((j) => j.kind === 'qpn');
  expect(qpn).toMatchObject({ pattern: 'sequential', verdict: 'predictable' });
  expect(r.report.judgements.find((j) => j.kind === 'rkey')?.verdict).toBe('predictable');
  expect(r.report.verdict).toBe('predictable');
  // Starting PSNs come from the random source whatever the order.
  expect(r.report.judgements.find((j) => j.kind === 'startPsn')?.verdict).toBe('unpredictable');
  const c = guessabilityOfCapture(capture);
  const server = c.report.judgements.filter((j) => j.host === '198.18.0.2');
  expect(server.map((j) => [j.kind, j.verdict])).toEqual(r.report.judgements.filter((j) => j.kind !== 'startPsn').map((j) => [j.kind, j.verdict]));
}, 60_000);

describe('roce audit on the memory test mode', () => {
  async function cli(env: Record<string, string>): Promise<{ audit: { code: number; out: string; err: string }; served: number[] }> {
    const roce = roceWith({ ...process.env, ...env });
    const port = String(await freePort());
    const served: number[] = [];
    const serve = (async () => {
      for (let i = 0; i < CLI_RUNS; i++)
        served.push((await roce('perftest', 'write', '--dev', 'sim-b', '--driver', 'memory', '-p', port, '-s', '64', '-n', '5', '--json')).code);
    })();
    const audit = await roce('audit', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '-p', port, '--runs', String(CLI_RUNS), '--json');
    await serve;
    return { audit, served };
  }

  test('JSON report: unpredictable by default, predictable with ROCE_ALLOCATION=sequential', async () => {
    const random = await cli({});
    expect(random.audit.code).toBe(0);
    expect(random.served).toEqual(Array(CLI_RUNS).fill(0));
    const j = JSON.parse(random.audit.out);
    expect(j).toMatchObject({ ok: true, server: '127.0.0.1', stopped: null, report: { verdict: 'unpredictable' } });
    expect(j.runs).toHaveLength(CLI_RUNS);
    const seq = await cli({ ROCE_ALLOCATION: 'sequential' });
    expect(seq.audit.code).toBe(0);
    expect(JSON.parse(seq.audit.out)).toMatchObject({ ok: true, report: { verdict: 'predictable' } });
  }, 60_000);

  test('no peer: exit 1 within --restart-wait, naming the connection that failed', async () => {
    const roce = roceWith(process.env);
    const port = String(await freePort());
    const t0 = Date.now();
    const r = await roce('audit', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '-p', port, '--runs', '6', '--restart-wait', '1');
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`run 1 of 6: could not connect to 127\\.0\\.0\\.1:${port}`));
    expect(r.out).toMatch(/overall: unknown/);
  }, 30_000);

  test('usage errors: no server, too few runs', async () => {
    const roce = roceWith(process.env);
    expect((await roce('audit', '--dev', 'sim-a', '--driver', 'memory')).code).toBe(2);
    const few = await roce('audit', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '--runs', '2');
    expect(few.code).toBe(2);
    expect(few.err).toMatch(/runs/);
  });
});
