/**
 * `roce perftest --perform_warm_up` between two namespaces (short runs): the client sends
 * WRITEs before its measured loop until the rate settles (at least 0.6 s of its own time, at most
 * 1.5 s), leaves them out of the figures and reports them apart; the server, given no flag, takes
 * them as it takes the others, and the data checks out.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, runPair } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const net = pairPerFile(reason, { mtu: 4200 });

t(
  'write 64 KiB -n 200 --perform_warm_up: the measured loop is the 200 messages; the warm-up is counted apart',
  async () => {
    const { server, client } = await runPair(net(), 'perftest', ['write', '-s', '65536', '-n', '200', '-m', '4096', '--verify'], {
      driver: 'xdp',
      timeoutMs: 60_000,
      sideArgs: { client: ['--perform_warm_up'] },
    });
    expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
    expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
    const c = client.json as Record<string, unknown>;
    const s = server.json as Record<string, unknown>;
    expect(c).toMatchObject({ ok: true, messages: 200, iterations: 200, bytes: 200 * 65536 });
    const w = c['warmUp'] as { messages: number; seconds: number; settled: boolean };
    expect(w.messages).toBeGreaterThan(0);
    expect(w.seconds).toBeGreaterThanOrEqual(0.6);
    expect(w.seconds).toBeLessThan(5);
    // 16 packets per 64 KiB WRITE at MTU 4096, warm-up and measured alike, and whatever was resent.
    const counters = c['counters'] as Record<string, number>;
    expect(counters['sent_pkts']).toBe((200 + w.messages) * 16 + (counters['retransmitted_pkts'] ?? 0));
    expect(s['ok']).toBe(true);
    expect((s['verify'] as { mismatches: number }).mismatches).toBe(0);
  },
  90_000,
);
