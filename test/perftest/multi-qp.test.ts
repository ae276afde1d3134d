/**
 * perftest -q: several QPs in one bandwidth test, both ends this implementation over the simulated
 * link (virtual clock, out-of-band exchange over 127.0.0.1 TCP), every byte verified in each QP's
 * own area; and the options' checks.
 */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import type { PerftestVerb } from '../../apps/oob/perftest-session';
import type { PerftestConfig } from '../../apps/perftest/config';
import type { PerftestResult } from '../../apps/perftest/result';
import { runPerftest } from '../../apps/perftest/run';
import { PerftestError } from '../../apps/perftest/perftest-error';
import { pumpedPair } from '../oob/support';

async function runBoth(verb: PerftestVerb, extra: Partial<PerftestConfig>): Promise<{ s: PerftestResult; c: PerftestResult }> {
  const p = pumpedPair();
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const base = { verb, lat: false, stepTimeoutMs: 5000, runTimeoutMs: 10_000, connectTimeoutMs: 5000, verify: true, ...extra };
    const [s, c] = await Promise.all([
      runPerftest(p.sim.b, { ...base, role: 'server', listener }),
      runPerftest(p.sim.a, { ...base, role: 'client', server: '127.0.0.1', port: listener.port }),
    ]);
    return { s, c };
  } finally {
    listener.close();
    p.stop();
  }
}

const QPS = 4;

test.each([
  ['write', { iters: 60, size: 1000 }, 1000],
  ['read', { iters: 60, size: 3000, mtu: 1024 }, 3000],
  ['send', { iters: 60, size: 2000, mtu: 1024, rxDepth: 16 }, 2000],
  ['atomic', { iters: 60 }, 8],
] as const)('%s bandwidth with -q 4: each QP moves -n messages into its own area, all verified', async (verb, extra, size) => {
  const { s, c } = await runBoth(verb, { ...extra, qps: QPS });
  expect(c.problems).toEqual([]);
  expect(s.problems).toEqual([]);
  expect(c.ok && s.ok).toBe(true);
  expect(c.qps).toBe(QPS);
  // run_iter_bw: tot_iters = iters × num_of_qps, and the report carries that count.
  expect(c.messages).toBe(extra.iters * QPS);
  expect(s.messages).toBe(c.messages);
  expect(c.bytes).toBe(extra.iters * QPS * size);
  // Four distinct QPs on each side, each connected to the one the peer announced for it.
  expect(new Set(c.qpPairs.map((q) => q.local.qpn)).size).toBe(QPS);
  for (let i = 0; i < QPS; i++) {
    const cp = c.qpPairs[i];
    const sp = s.qpPairs[i];
    expect(cp?.remote).toEqual(sp?.local);
    expect(sp?.remote).toEqual(cp?.local);
  }
  // Every QP's area was checked: the receiving side's slots (or the READ client's), nothing mismatched.
  const checked = s.verify.bytesChecked + c.verify.bytesChecked;
  const slotsPerQp = Math.min(extra.iters, Math.floor(4096 / (size > 64 ? Math.ceil(size / 64) * 64 : 64)) || 1);
  expect(checked).toBeGreaterThanOrEqual(QPS * Math.min(slotsPerQp, extra.iters) * size);
  expect(s.verify.mismatches + c.verify.mismatches).toBe(0);
  // Key messages per QP: the exchanges marked "every QP" happen four times.
  expect(c.oob.messagesOut).toBeGreaterThan(QPS * 2);
}, 30_000);

test('-q 4 in duration mode: every QP posts until the end, and all that was posted completes', async () => {
  const { s, c } = await runBoth('write', { durationS: 0.004, marginS: 0.001, size: 4096, qps: QPS, verify: false });
  expect(c.ok && s.ok).toBe(true);
  expect(c.messages).toBeGreaterThan(0);
  expect(c.iterations).toBeGreaterThanOrEqual(c.messages);
}, 30_000);

test('-q is checked: latency tests and out-of-range counts are refused before anything is sent', async () => {
  const p = pumpedPair();
  try {
    for (const [cfg, msg] of [
      [{ lat: true, qps: 2 }, /only available in bandwidth tests/],
      [{ qps: 0 }, /must be 1\.\.16384/],
      [{ qps: 16385 }, /must be 1\.\.16384/],
      [{ qps: 1.5 }, /must be 1\.\.16384/],
    ] as const) {
      const e = await runPerftest(p.sim.a, { verb: 'write', lat: false, role: 'client', server: '127.0.0.1', port: 9, ...cfg }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(PerftestError);
      expect((e as PerftestError).message).toMatch(msg);
    }
  } finally {
    p.stop();
  }
});
