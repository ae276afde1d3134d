/**
 * RoCE v2 over IPv6 and over a routed path, between namespaces this test makes:
 *  - two namespaces over a veth with IPv6 addresses only (fd00:6::/64, no IPv4): rc_pingpong and a
 *    verified perftest WRITE, over AF_PACKET and AF_XDP, the GIDs the global IPv6 ones;
 *  - A → R → B, R a namespace forwarding IPv4 and IPv6 between two subnets: a verified perftest
 *    WRITE over IPv4 and over IPv6, the frames sent to the router's MAC (the route's gateway).
 *
 * @group netns
 */
import { type NetnsPairV6, type RoutedPath, createNetnsPairV6Only, createRoutedPath, destroyRoutedPath } from '../support/netns';
import { testUnless } from '../support/skip';
import { type ProcResult, e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
let nextPort = 41000 + Math.floor(Math.random() * 2000);

/** `roce CMD ARGS` as server in `nsB` and client in `nsA` towards `serverIp`. */
async function pair(
  n: { nsA: string; nsB: string; ifA: string; ifB: string },
  serverIp: string,
  cmd: string[],
  driver: 'packet' | 'xdp',
): Promise<{ s: ProcResult; c: ProcResult }> {
  const common = ['--driver', driver, '--port', String(nextPort++), '--json', '--timeout', '10'];
  const server = startRoce(n.nsB, [...cmd, '--dev', n.ifB, ...common], 30_000);
  const client = startRoce(n.nsA, [...cmd, serverIp, '--dev', n.ifA, ...common], 30_000);
  const [s, c] = await Promise.all([server.done, client.done]);
  return { s, c };
}

describe('IPv6 only, over a veth', () => {
  let net: NetnsPairV6 | null = null;
  beforeAll(() => {
    if (reason === null) net = createNetnsPairV6Only();
  });
  afterAll(() => {
    if (net !== null) destroyRoutedPath(net);
    net = null;
  });

  for (const driver of ['packet', 'xdp'] as const) {
    t(
      `pingpong and perftest write --verify over ${driver}: the GIDs are the IPv6 addresses`,
      async () => {
        const n = net as NetnsPairV6;
        const pp = await pair(n, n.ip6B, ['pingpong', '-s', '1024', '-n', '50'], driver);
        expect({ code: pp.c.code, why: explain(pp.c) }).toMatchObject({ code: 0 });
        expect({ code: pp.s.code, why: explain(pp.s) }).toMatchObject({ code: 0 });
        expect(pp.c.json).toMatchObject({ ok: true, local: { gid: n.ip6A }, remote: { gid: n.ip6B } });
        const pt = await pair(n, n.ip6B, ['perftest', 'write', '-s', '65536', '-n', '100', '--verify'], driver);
        expect({ code: pt.c.code, why: explain(pt.c) }).toMatchObject({ code: 0 });
        expect({ code: pt.s.code, why: explain(pt.s) }).toMatchObject({ code: 0 });
        expect(pt.c.json?.['ok']).toBe(true);
      },
      60_000,
    );
  }

  t(
    'pingpong -g 0 on both ends: the link-local GIDs (fe80::, from the MACs) carry the run',
    async () => {
      const n = net as NetnsPairV6;
      const pp = await pair(n, n.ip6B, ['pingpong', '-s', '1024', '-n', '20', '-g', '0'], 'packet');
      expect({ code: pp.c.code, why: explain(pp.c) }).toMatchObject({ code: 0 });
      expect({ code: pp.s.code, why: explain(pp.s) }).toMatchObject({ code: 0 });
      const local = String((pp.c.json?.['local'] as { gid: string } | undefined)?.gid);
      const remote = String((pp.c.json?.['remote'] as { gid: string } | undefined)?.gid);
      expect(local).toMatch(/^fe80::/);
      expect(remote).toMatch(/^fe80::/);
      expect(local).not.toBe(remote);
    },
    60_000,
  );
});

describe('a routed path: A → router namespace → B', () => {
  let net: RoutedPath | null = null;
  beforeAll(() => {
    if (reason === null) net = createRoutedPath();
  });
  afterAll(() => {
    if (net !== null) destroyRoutedPath(net);
    net = null;
  });

  for (const family of ['IPv4', 'IPv6'] as const) {
    t(
      `perftest write --verify over ${family}: through the gateway (which decrements the TTL or hop limit, masked by the ICRC)`,
      async () => {
        const n = net as RoutedPath;
        const dst = family === 'IPv4' ? n.ipB : n.ip6B;
        const pt = await pair(n, dst, ['perftest', 'write', '-s', '65536', '-n', '100', '--verify'], 'packet');
        expect({ code: pt.c.code, why: explain(pt.c) }).toMatchObject({ code: 0 });
        expect({ code: pt.s.code, why: explain(pt.s) }).toMatchObject({ code: 0 });
        expect(pt.c.json?.['ok']).toBe(true);
      },
      60_000,
    );
  }
});
