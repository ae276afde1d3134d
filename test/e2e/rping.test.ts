/**
 * `roce rping` between two namespaces over a veth pair, with AF_PACKET and AF_XDP: the server in
 * nsB listening on its address, the client in nsA; neither is given -d (each finds its interface
 * from -a, as rping does). -C 10 with -S 64 and 65535, -v and -V; a wrong port refused by the
 * server's CM with REJ reason 8.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

for (const [driver, label] of [
  ['packet', 'AF_PACKET'],
  ['xdp', 'AF_XDP'],
] as const) {
  describe(`roce rping over ${label} between two namespaces`, () => {
    const net = pairPerFile(reason, { mtu: 1500 });

    for (const size of [64, 65535]) {
      t(
        `-C 10 -S ${size} -v -V: both ends finish, the client's lines are rping's`,
        async () => {
          const n = net();
          const port = String(size === 64 ? 7174 : 7175);
          const server = startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '-p', port, '-S', String(size), '-v', '--driver', driver, '--timeout', '10'], 30_000);
          await later(800);
          const client = startRoce(
            n.nsA,
            ['rping', '-c', '-a', n.ipB, '-p', port, '-C', '10', '-S', String(size), '-v', '-V', '--driver', driver, '--timeout', '10'],
            30_000,
          );
          const c = await client.done;
          const s = await server.done;
          expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 0 });
          expect({ code: s.code, why: explain(s) }).toMatchObject({ code: 0 });
          const lines = c.stdout.trimEnd().split('\n');
          expect(lines).toHaveLength(10);
          lines.forEach((l, i) => expect(l.startsWith(`ping data: rdma-ping-${i}: `)).toBe(true));
          expect(lines[0]?.length).toBe('ping data: '.length + size - 1);
          expect(s.stdout.trimEnd().split('\n')).toEqual(lines.map((l) => `server ${l}`));
        },
        40_000,
      );
    }

    // The server's device learns the client's MAC from the kernel on its first miss: the REJ to the first REQ
    // cannot go out, the one to the REQ resent after the CM response timeout does.
    t(
      "a port nobody listens on: the server's CM rejects (reason 8), the client exits 1 with it",
      async () => {
        const n = net();
        const server = startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '-p', '7000', '--driver', driver, '--json'], 30_000);
        await later(800);
        const c = await startRoce(n.nsA, ['rping', '-c', '-a', n.ipB, '-p', '7001', '-C', '1', '--driver', driver, '--json'], 20_000).done;
        server.kill();
        await server.done;
        expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 1 });
        expect(c.json).toMatchObject({ ok: false, code: 'ROCE_ERR_RPING_REJECTED' });
        expect(String(c.json?.['error'])).toMatch(/REJ reason 8/);
      },
      30_000,
    );
  });
}
