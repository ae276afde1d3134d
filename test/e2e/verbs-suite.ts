/**
 * Every verb over one real driver between two namespaces, each run with data verification:
 * `roce perftest` write, read, send and atomic (fetch-and-add and compare-and-swap) bandwidth
 * tests with --verify, the write/read/send latency tests with --verify, and `roce pingpong`
 * (SEND/RECV), at MTU 1500 (path MTU 1024) and MTU 9000 (path MTU 4096, multi-buffer AF_XDP).
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, runPair } from './harness';

interface Case {
  name: string;
  args: string[];
  /** 9000: also run at MTU 9000. */
  jumbo?: boolean;
}

const CASES: readonly Case[] = [
  { name: 'RDMA WRITE (ib_write_bw --verify)', args: ['write', '-s', '65536', '-n', '300', '--verify'], jumbo: true },
  { name: 'RDMA READ (ib_read_bw --verify)', args: ['read', '-s', '65536', '-n', '300', '--verify'], jumbo: true },
  { name: 'RDMA WRITE for a duration (ib_write_bw -D 2 -f 0.5 --verify)', args: ['write', '-s', '65536', '-D', '2', '-f', '0.5', '--verify'] },
  { name: 'SEND/RECV for a duration (ib_send_bw -D 2 -f 0.5 --verify)', args: ['send', '-s', '16384', '-D', '2', '-f', '0.5', '--verify'] },
  { name: 'SEND/RECV (ib_send_bw --verify)', args: ['send', '-s', '16384', '-n', '300', '--verify'], jumbo: true },
  { name: 'atomic fetch-and-add (ib_atomic_bw --verify)', args: ['atomic', '-n', '500', '--verify'] },
  { name: 'atomic compare-and-swap (ib_atomic_bw -A CMP_AND_SWAP --verify)', args: ['atomic', '-A', 'CMP_AND_SWAP', '-n', '500', '--verify'] },
  { name: 'RDMA WRITE latency (ib_write_lat --verify)', args: ['write', '--lat', '-s', '3000', '-n', '200', '--verify'] },
  { name: 'RDMA READ latency (ib_read_lat --verify)', args: ['read', '--lat', '-s', '3000', '-n', '200', '--verify'] },
  { name: 'SEND latency (ib_send_lat --verify)', args: ['send', '--lat', '-s', '3000', '-n', '200', '--verify'] },
];

export function verbsSuite(driver: 'xdp' | 'packet', label: string): void {
  const reason = e2eSkipReason();
  const t = testUnless(reason);

  for (const mtu of [1500, 9000]) {
    describe(`${label} between two namespaces, veth MTU ${mtu}`, () => {
      const net = pairPerFile(reason, { mtu });

      for (const c of CASES.filter((x) => mtu === 1500 || x.jumbo === true)) {
        t(
          `${c.name}: every byte checked on both ends`,
          async () => {
            const { server, client } = await runPair(net(), 'perftest', c.args, { driver, timeoutMs: 30_000 });
            expect({ ok: client.json?.['ok'], code: client.code, why: explain(client) }).toMatchObject({ ok: true, code: 0 });
            expect({ ok: server.json?.['ok'], code: server.code, why: explain(server) }).toMatchObject({ ok: true, code: 0 });
            const cv = client.json?.['verify'] as { bytesChecked: number; mismatches: number };
            const sv = server.json?.['verify'] as { bytesChecked: number; mismatches: number };
            // Someone checked data: the receiving side of a one-sided test, the client of READ, both ends of a ping-pong.
            expect(cv.bytesChecked + sv.bytesChecked).toBeGreaterThan(0);
            expect(cv.mismatches + sv.mismatches).toBe(0);
            expect(client.json?.['mtu']).toBe(mtu === 9000 ? 4096 : 1024);
            expect(client.json?.['driver']).toBe(driver);
          },
          40_000,
        );
      }

      t(
        'rc_pingpong (roce pingpong, SEND/RECV both ways)',
        async () => {
          const { server, client } = await runPair(net(), 'pingpong', ['-s', '2048', '-n', '300', '-m', mtu === 9000 ? '4096' : '1024'], {
            driver,
            timeoutMs: 30_000,
          });
          expect({ ok: client.json?.['ok'], code: client.code, why: explain(client) }).toMatchObject({ ok: true, code: 0 });
          expect({ ok: server.json?.['ok'], code: server.code, why: explain(server) }).toMatchObject({ ok: true, code: 0 });
          expect(client.json?.['messages']).toBe(600);
          expect(server.json?.['messages']).toBe(600);
        },
        40_000,
      );
    });
  }
}
