/**
 * RDMA CM tools under a hostile or vanishing peer, over a veth between two namespaces:
 * `roce rping` whose server QP a mixed `roce attack` flood hits, and `roce cmatose` whose client
 * stops answering in the middle of the data. Each end exits 1, not killed by the harness, with the
 * cause named: the QP's error or the bound of its own timers, never a fixed step timeout.
 *
 * @group netns
 */
import { execFileSync } from 'node:child_process';
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `ifname` in `ns` has received `packets` more frames than when called, or fails after `ms`. */
async function trafficFlowing(ns: string, ifname: string, packets = 500, ms = 30_000): Promise<void> {
  const rx = (): number =>
    Number(execFileSync('ip', ['netns', 'exec', ns, 'cat', `/sys/class/net/${ifname}/statistics/rx_packets`], { encoding: 'utf8' }).trim());
  const start = rx();
  const until = Date.now() + ms;
  while (rx() - start < packets) {
    if (Date.now() > until) throw new Error(`no traffic on ${ns}/${ifname} within ${ms} ms`);
    await sleep(100);
  }
}

describe('RDMA CM tools against a hostile or vanishing peer (AF_PACKET)', () => {
  const net = pairPerFile(reason, { mtu: 1500 });

  t(
    "rping under a mixed flood at the server's QP: both ends exit 1 naming how their QP failed",
    async () => {
      const n = net();
      const server = startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '-p', '7190', '--driver', 'packet', '--json'], 60_000, { ROCE_ALLOCATION: 'sequential' });
      await sleep(800);
      const client = startRoce(n.nsA, ['rping', '-c', '-a', n.ipB, '-p', '7190', '-C', '1000000', '--driver', 'packet', '--json'], 60_000);
      await trafficFlowing(n.nsB, n.ifB);
      // The server's RC QP is the device's first, 0x11 in rxe's sequential order (ROCE_ALLOCATION); the attacker follows its PSN from the ACKs.
      const attack = startRoce(
        n.nsA,
        [
          'attack',
          n.ipB,
          '--dev',
          n.ifA,
          '--driver',
          'packet',
          '--qpn',
          '0x11',
          '--psn',
          'follow',
          '--psn-window',
          '4',
          '--count',
          '20000',
          '--rate',
          '20000',
          '--json',
        ],
        30_000,
      );
      const [s, c, a] = await Promise.all([server.done, client.done, attack.done]);
      const detail = `client: ${explain(c)}\nserver: ${explain(s)}\nattack: ${explain(a)}`;
      expect({ server: s.timedOut, client: c.timedOut }).toEqual({ server: false, client: false });
      if (s.code === 0 || c.code === 0) throw new Error(`an end exited 0 under attack\n${detail}`);
      for (const r of [s, c]) {
        expect(r.json?.['ok']).toBe(false);
        expect(String(r.json?.['error'])).toMatch(/error state|REM_|RETRY_EXC|NAK|disconnect|WR_FLUSH|no progress within \d+ ms \(local ACK timeout/);
      }
    },
    90_000,
  );

  t(
    "cmatose whose client stops answering (SIGSTOP) mid-data: the server ends by its QPs' timers and says so",
    async () => {
      const n = net();
      const server = startRoce(n.nsB, ['cmatose', '-b', n.ipB, '-p', '7191', '-c', '1', '-C', '1000000', '-S', '100', '--driver', 'packet', '--json'], 60_000);
      await sleep(800);
      const client = startRoce(n.nsA, ['cmatose', '-s', n.ipB, '-p', '7191', '-c', '1', '-C', '1000000', '-S', '100', '--driver', 'packet', '--json'], 60_000);
      await trafficFlowing(n.nsB, n.ifB);
      client.kill('SIGSTOP');
      const s = await server.done;
      client.kill('SIGKILL');
      await client.done;
      expect({ timedOut: s.timedOut, code: s.code, why: explain(s) }).toMatchObject({ timedOut: false, code: 1 });
      expect(s.json?.['ok']).toBe(false);
      // The SENDs run out of retries (RETRY_EXC after timeout × (retry_cnt + 1)), or the wait's bound from the same timers ends it.
      expect(String(s.json?.['error'])).toMatch(/RETRY_EXC|retry|no progress within \d+ ms while .* \(local ACK timeout/);
    },
    90_000,
  );
});
