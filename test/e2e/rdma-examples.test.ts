/**
 * `roce cmatose` and `roce rdma-server` / `roce rdma-client` between two namespaces over a veth
 * pair: the server in nsB on its address, the client in nsA; neither is given -d (each finds its
 * interface from -s or -b). cmatose -c 4 over AF_PACKET, the rdma examples over AF_XDP.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('librdmacm examples between two namespaces', () => {
  const net = pairPerFile(reason, { mtu: 1500 });

  t(
    'cmatose -c 4 over AF_PACKET: both ends finish, four connections, every reply the echo',
    async () => {
      const n = net();
      const server = startRoce(n.nsB, ['cmatose', '-b', n.ipB, '-c', '4', '--driver', 'packet', '--json', '--timeout', '10'], 30_000);
      await later(800);
      const client = startRoce(n.nsA, ['cmatose', '-s', n.ipB, '-c', '4', '--driver', 'packet', '--json', '--timeout', '10'], 30_000);
      const c = await client.done;
      const s = await server.done;
      expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 0 });
      expect({ code: s.code, why: explain(s) }).toMatchObject({ code: 0 });
      expect(c.json).toMatchObject({ ok: true, role: 'client', established: 4 });
      expect(s.json).toMatchObject({ ok: true, role: 'server', established: 4, echoed: 4 });
    },
    40_000,
  );

  t(
    'rdma-server / rdma-client over AF_XDP: 16 bytes each way, inline',
    async () => {
      const n = net();
      const server = startRoce(n.nsB, ['rdma-server', '-s', n.ipB, '--driver', 'xdp', '--json', '--timeout', '10'], 30_000);
      await later(800);
      const c = await startRoce(n.nsA, ['rdma-client', '-s', n.ipB, '--driver', 'xdp', '--json', '--timeout', '10'], 30_000).done;
      const s = await server.done;
      expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 0 });
      expect({ code: s.code, why: explain(s) }).toMatchObject({ code: 0 });
      expect(c.json).toMatchObject({ ok: true, test: 'rdma_client', inline: true, received: '00'.repeat(16) });
      expect(s.json).toMatchObject({ ok: true, test: 'rdma_server', inline: true, received: '00'.repeat(16) });
    },
    40_000,
  );
});
