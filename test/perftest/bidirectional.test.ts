/**
 * perftest -b: bidirectional bandwidth, both ends this implementation over the simulated link
 * (virtual clock, out-of-band exchange over 127.0.0.1 TCP): both directions move every message,
 * verified at each receiver, and each side reports the other's direction too.
 */
import { expectRefused, runPerftestPair } from './pair';
import { keyMessageCount, sessionSteps } from '../../apps/oob/perftest-session';

test.each([
  ['write', { iters: 100, size: 3000, mtu: 1024 }],
  ['read', { iters: 100, size: 3000, mtu: 1024 }],
  ['send', { iters: 100, size: 3000, mtu: 1024 }],
  ['atomic', { iters: 100 }],
  ['send', { iters: 60, size: 2000, mtu: 1024, qps: 2 }],
  ['send', { iters: 60, size: 1024, mtu: 1024, connection: 'UD' }],
] as const)(
  '%s -b %j: both directions move every message, each checked where it lands',
  async (verb, extra) => {
    const { s, c } = await runPerftestPair({ verb, lat: false, bidirectional: true, ...extra });
    expect(c.problems).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(c.ok && s.ok).toBe(true);
    const n = extra.iters * ('qps' in extra ? extra.qps : 1);
    for (const [me, peer] of [
      [c, s],
      [s, c],
    ] as const) {
      expect(me.measured).toBe('local');
      expect(me.messages).toBe(n);
      expect(me.bidirectional?.peer.messages).toBe(n);
      expect(me.bidirectional?.peer.gbps).toBeCloseTo(peer.gbps, 3);
      expect(me.bidirectional?.gbpsBothWays).toBeCloseTo(me.gbps + peer.gbps, 3);
      // Both ends requested (sent) and both served the other's requests.
      expect(me.counters.sent_pkts).toBeGreaterThanOrEqual(n); // and the ACKs of what it served (RC)
      expect(me.verify.bytesChecked).toBeGreaterThan(0);
      expect(me.verify.mismatches).toBe(0);
    }
  },
  30_000,
);

test('the -b session: both roles take the same steps, with a start barrier and the reports exchanged', () => {
  for (const verb of ['write', 'send'] as const) {
    const a = sessionSteps(verb, false, 'client', false, true);
    expect(sessionSteps(verb, false, 'server', false, true)).toEqual(a);
    expect(a.map((x) => x.kind)).toContain('bw-reports');
    expect(a.filter((x) => x.kind === 'run').length).toBe(1);
  }
  expect(keyMessageCount(sessionSteps('write', false, 'client', false, true))).toBe(5);
  expect(keyMessageCount(sessionSteps('send', false, 'client', false, true))).toBe(5);
});

test('-b is refused for latency tests, with -R, -a and -D', async () => {
  await expectRefused({ bidirectional: true }, [
    [{ lat: true }, /bandwidth tests/],
    [{ rdmaCm: true }, /RDMA CM/],
    [{ allSizes: true }, /all sizes/],
    [{ durationS: 4 }, /duration mode/],
  ]);
});
