/**
 * The same runners on a RealClock (as with a real NIC driver): two devices on
 * an in-memory link whose frames are delivered by real timers, out-of-band
 * exchange over 127.0.0.1 TCP. Small runs: the link's timers make every hop
 * take about a millisecond.
 */
import { RealClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import { runPingpong } from '../../apps/pingpong/pingpong';

test('bandwidth, latency and pingpong complete and verify on real time', async () => {
  const clock = new RealClock();
  const link = createMemoryLink({ clock, mtu: 1500, macA: 2, macB: 3, bandwidthBps: 0, faults: {} });
  const a = new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], neighbors: { '198.18.0.2': 3 }, seed: 5 });
  const b = new Device({ driver: link.b, clock, ipv4: ['198.18.0.2'], neighbors: { '198.18.0.1': 2 }, seed: 6 });
  try {
    for (const [verb, lat, iters, size] of [
      ['write', false, 200, 4096],
      ['send', false, 200, 2048],
      ['read', true, 20, 2],
      ['send', true, 20, 2],
      ['write', true, 20, 8],
    ] as const) {
      const l = await TcpChannel.listen(0, '127.0.0.1');
      try {
        const [s, c] = await Promise.all([
          runPerftest(b, { verb, lat, role: 'server', listener: l, iters, size, verify: true, runTimeoutMs: 10_000 }),
          runPerftest(a, { verb, lat, role: 'client', server: '127.0.0.1', port: l.port, iters, size, verify: true, runTimeoutMs: 10_000 }),
        ]);
        expect([verb, lat, c.ok, s.ok]).toEqual([verb, lat, true, true]);
        expect(c.mtu).toBe(1024); // 1500-byte link
        if (lat) expect(c.latencyUs?.p50).toBeGreaterThan(0);
        else expect(c.gbps).toBeGreaterThan(0);
      } finally {
        l.close();
      }
    }
    const l = await TcpChannel.listen(0, '127.0.0.1');
    const [s, c] = await Promise.all([
      runPingpong(b, { role: 'server', listener: l, iters: 30 }),
      runPingpong(a, { role: 'client', server: '127.0.0.1', port: l.port, iters: 30 }),
    ]);
    l.close();
    expect(s.ok && c.ok).toBe(true);
    expect(c.bytes).toBe(4096 * 30 * 2);
  } finally {
    link.close();
  }
}, 30_000);
