/**
 * perftest -q: several QPs in one bandwidth test, both ends this implementation over the simulated
 * link (virtual clock, out-of-band exchange over 127.0.0.1 TCP), every byte verified in each QP's
 * own area; and the options' checks.
 */
import { expectRefused, runPerftestPair } from './pair';

const QPS = 4;

test.each([
  ['write', { iters: 60, size: 1000 }, 1000],
  ['read', { iters: 60, size: 3000, mtu: 1024 }, 3000],
  ['send', { iters: 60, size: 2000, mtu: 1024, rxDepth: 16 }, 2000],
  ['atomic', { iters: 60 }, 8],
] as const)(
  '%s bandwidth with -q 4: each QP moves -n messages into its own area, all verified',
  async (verb, extra, size) => {
    const { s, c } = await runPerftestPair({ verb, lat: false, ...extra, qps: QPS });
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
  },
  30_000,
);

test('-q 4 in duration mode: every QP posts until the end, and all that was posted completes', async () => {
  const { s, c } = await runPerftestPair({ verb: 'write', lat: false, durationS: 0.004, marginS: 0.001, size: 4096, qps: QPS, verify: false });
  expect(c.ok && s.ok).toBe(true);
  expect(c.messages).toBeGreaterThan(0);
  expect(c.iterations).toBeGreaterThanOrEqual(c.messages);
}, 30_000);

test('-q is checked: latency tests and out-of-range counts are refused before anything is sent', async () => {
  await expectRefused({}, [
    [{ lat: true, qps: 2 }, /only available in bandwidth tests/],
    [{ qps: 0 }, /must be 1\.\.16384/],
    [{ qps: 16385 }, /must be 1\.\.16384/],
    [{ qps: 1.5 }, /must be 1\.\.16384/],
  ]);
});
