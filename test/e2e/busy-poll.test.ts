/**
 * The busy-poll mode (ROCE_BUSY_POLL=1) end to end, between two namespaces: its idle wait spins
 * on the receive rings itself (apps/host/host-device.ts spinWait), runs what posts deferred, and
 * holds the responses of a burst for the requester's flush (Device.pollCoalescing). Every run
 * must still complete with its data checked, on both drivers, for the tools whose loops wait
 * this way: rc_pingpong (-c), and perftest's latency and bandwidth runs (--verify), with loss
 * so that held ACKs, NAKs and retransmissions all take the coalescing path.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, runPair, HOST_DRIVERS } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);

const net = pairPerFile(reason, { mtu: 9000 });

const lastJson = (s: string): Record<string, unknown> => JSON.parse(s.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;

describe('busy-poll runs complete with their data checked', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    t(
      `${label}: rc_pingpong -c, 2000 round trips, with a latency histogram`,
      async () => {
        const { server, client } = await runPair(net(), 'pingpong', ['-s', '64', '-n', '2000', '-c'], { driver, busyPoll: true, timeoutMs: 40_000 });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        const j = lastJson(client.stdout);
        expect(j['ok']).toBe(true);
        expect((j['verify'] as { messagesChecked: number; mismatches: number }).mismatches).toBe(0);
        expect((j['verify'] as { messagesChecked: number }).messagesChecked).toBe(2000);
        const lat = j['latencyUs'] as { p50: number; p99: number; p999: number; histogram: [number, number][] };
        expect(lat.p50).toBeGreaterThan(0);
        expect(lat.p99).toBeGreaterThanOrEqual(lat.p50);
        expect(lat.p999).toBeGreaterThanOrEqual(lat.p99);
        // One sample per round trip after the first (the time between two SENDs), all in the histogram.
        expect(lat.histogram.reduce((n, [, c]) => n + c, 0)).toBe(1999);
      },
      60_000,
    );

    t(
      `${label}: perftest write --lat and send bandwidth with 2 % loss, --verify`,
      async () => {
        const lat = await runPair(net(), 'perftest', ['write', '--lat', '-s', '64', '-n', '2000'], { driver, busyPoll: true, timeoutMs: 40_000 });
        expect({ code: lat.client.code, why: explain(lat.client) }).toMatchObject({ code: 0 });
        expect({ code: lat.server.code, why: explain(lat.server) }).toMatchObject({ code: 0 });
        const loss = { ROCE_FAULTS: JSON.stringify({ rx: { drop: 0.02 } }) };
        const bw = await runPair(net(), 'perftest', ['send', '-s', '8192', '-n', '400', '-u', '14', '--verify'], {
          driver,
          busyPoll: true,
          timeoutMs: 50_000,
          env: loss,
        });
        expect({ code: bw.client.code, why: explain(bw.client) }).toMatchObject({ code: 0 });
        expect({ code: bw.server.code, why: explain(bw.server) }).toMatchObject({ code: 0 });
        expect(lastJson(bw.client.stdout)['ok']).toBe(true);
        expect(lastJson(bw.server.stdout)['ok']).toBe(true);
      },
      110_000,
    );
  }
});
