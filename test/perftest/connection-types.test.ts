/**
 * perftest -c UC and -c UD: both ends this implementation over the simulated link (virtual clock,
 * out-of-band exchange over 127.0.0.1 TCP), every byte verified; the transport seen on the wire;
 * and perftest's checks of which verbs each transport takes.
 */
import { expectRefused, runPerftestPair } from './pair';

test.each([
  ['write', false, 'UC', { iters: 100, size: 3000, mtu: 1024 }],
  ['send', false, 'UC', { iters: 100, size: 3000, mtu: 1024 }],
  ['send', false, 'UD', { iters: 100, size: 1024, mtu: 1024 }],
  ['send', true, 'UC', { iters: 100, size: 2000, mtu: 1024 }],
  ['send', true, 'UD', { iters: 100, size: 512, mtu: 1024 }],
  ['write', true, 'UC', { iters: 100, size: 2000, mtu: 1024 }],
] as const)(
  '%s lat=%s over %s: every message arrives and checks',
  async (verb, lat, connection, extra) => {
    const { s, c } = await runPerftestPair({ verb, lat, ...extra, connection });
    expect(c.problems).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(c.ok && s.ok).toBe(true);
    expect(c.connection).toBe(connection);
    expect(c.verify.mismatches + s.verify.mismatches).toBe(0);
    expect(c.verify.bytesChecked + s.verify.bytesChecked).toBeGreaterThanOrEqual(extra.size);
    if (!lat) expect(s.messages).toBe(extra.iters);
    // Unreliable transports: nothing answers a request. The client of a bandwidth test receives no packet
    // at all (an RC client would receive ACKs), and nobody retransmits.
    expect(c.counters.sent_pkts).toBeGreaterThan(0);
    if (!lat) expect(c.counters.rcvd_pkts ?? 0).toBe(0);
    expect((c.counters.retransmitted_pkts ?? 0) + (s.counters.retransmitted_pkts ?? 0)).toBe(0);
  },
  30_000,
);

test('-c UD cuts the message size to the path MTU, as perftest does (a UD message is one packet)', async () => {
  const { s, c } = await runPerftestPair({ verb: 'send', lat: false, iters: 50, mtu: 1024, connection: 'UD' });
  expect(c.ok && s.ok).toBe(true);
  expect(c.msgSize).toBe(1024);
  expect(s.bytes).toBe(50 * 1024);
}, 30_000);

test('-c is checked as perftest checks it', async () => {
  await expectRefused({}, [
    [{ verb: 'read', connection: 'UC' }, /UC is not possible with READ/],
    [{ verb: 'atomic', connection: 'UC' }, /UC is not possible with ATOMIC/],
    [{ verb: 'write', connection: 'UD' }, /UD is only possible with SEND/],
    [{ verb: 'send', connection: 'XRC' as never }, /must be RC, UC or UD/],
  ]);
});
