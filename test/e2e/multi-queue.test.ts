/**
 * AF_XDP over every receive queue: two namespaces joined by a veth with 4 queues per
 * end. On a veth a frame sent on transmit queue N arrives on the peer's receive queue N, and the
 * multi-queue driver gives each flow (UDP source port, one per QP) a queue in turn, so several
 * QPs reach every queue of the peer, which must serve them all. A queue that cannot be had is an
 * error naming it and the remedies, never a device that silently loses what lands there.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, runPair, startRoce } from './harness';
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import { XdpQueueError, openXdpQueues } from '../../apps/host/xdp-queues';
import { type DeviceEntry, devicesCommand } from '../../cli/devices-command';
import { memoryOutput } from '../../cli/output';

const reason = e2eSkipReason();
const t = testUnless(reason);
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Q {
  queue: number;
  rxFrames: number;
  txFrames: number;
}

describe('AF_XDP on a veth with 4 queues per end', () => {
  const pair = pairPerFile(reason, { mtu: 1500, queues: 4 });

  t(
    'cmatose -c 4: the CM flow and four QPs use all four queues each way; every queue of each end receives',
    async () => {
      const n = pair();
      const server = startRoce(n.nsB, ['cmatose', '-b', n.ipB, '-c', '4', '--driver', 'xdp', '--json', '--timeout', '10'], 30_000);
      await later(800);
      const client = startRoce(n.nsA, ['cmatose', '-s', n.ipB, '-c', '4', '--driver', 'xdp', '--json', '--timeout', '10'], 30_000);
      const c = await client.done;
      const s = await server.done;
      expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 0 });
      expect({ code: s.code, why: explain(s) }).toMatchObject({ code: 0 });
      expect(s.json).toMatchObject({ ok: true, established: 4, echoed: 4 });
      for (const j of [c.json, s.json]) {
        const qs = j?.['queues'] as Q[];
        expect(qs.map((q) => q.queue)).toEqual([0, 1, 2, 3]);
        for (const q of qs) {
          expect({ queue: q.queue, rx: q.rxFrames > 0, tx: q.txFrames > 0 }).toEqual({ queue: q.queue, rx: true, tx: true });
        }
      }
    },
    40_000,
  );

  t(
    "perftest write --verify: the data arrives whole; the per-queue counters add up to the device's",
    async () => {
      const n = pair();
      const { server, client } = await runPair(n, 'perftest', ['write', '-s', '65536', '-n', '200', '--verify'], { driver: 'xdp', timeoutMs: 30_000 });
      expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
      expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
      expect(client.json).toMatchObject({ ok: true });
      const qs = client.json?.['queues'] as Q[];
      expect(qs).toHaveLength(4);
      // 200 × 64 KiB at MTU 1024: 12 800 WRITE packets left the client, every one on some queue.
      expect(qs.reduce((a, q) => a + q.txFrames, 0)).toBeGreaterThanOrEqual(12_800);
    },
    40_000,
  );

  t(
    '--queues 0,9: the interface has 4: exit 1 naming them',
    async () => {
      const n = pair();
      const bad = await startRoce(n.nsB, ['pingpong', '-d', n.ifB, '--driver', 'xdp', '--queues', '0,9', '--json'], 20_000).done;
      expect({ code: bad.code, why: explain(bad) }).toMatchObject({ code: 1 });
      expect(bad.json).toMatchObject({ ok: false, code: 'ROCE_ERR_XDP_QUEUE' });
      expect(String(bad.json?.['error'])).toMatch(/has 4 receive queues \(0\.\.3\), not 9/);
    },
    40_000,
  );

  t(
    'roce devices: 4 receive queues; --probe names a queue AF_XDP cannot open, with the remedies',
    async () => {
      const n = pair();
      const list = async (): Promise<DeviceEntry> => {
        const o = memoryOutput();
        expect(await devicesCommand(['--netns', n.nsB, '--probe', '--json'], o)).toBe(0);
        return (JSON.parse(o.out) as DeviceEntry[]).find((d) => d.name === n.ifB)!;
      };
      expect(await list()).toMatchObject({ usable: true, rxQueues: 4, queueProblems: [] });
      const holder = AfXdpDriver.open({ ifname: n.ifB, netns: n.nsB, queue: 3 });
      try {
        const d = await list();
        expect(d.queueProblems).toHaveLength(1);
        expect(d.queueProblems[0]).toMatch(/receive queue 3 of .* cannot be opened.*ethtool -L/);
      } finally {
        holder.close();
      }
      const o = memoryOutput();
      await devicesCommand(['--netns', n.nsB], o);
      expect(o.out).toContain('receive queues: 4 (AF_XDP opens a socket on each; --queues to choose)');
    },
    40_000,
  );

  t(
    'a queue held by another socket of this process: the open fails naming it and the remedies, and closes what it opened',
    () => {
      const n = pair();
      const holder = AfXdpDriver.open({ ifname: n.ifB, netns: n.nsB, queue: 2 });
      try {
        let err: unknown = null;
        try {
          openXdpQueues(n.ifB, { queues: null, available: 4, busyPoll: false, netns: n.nsB }).close();
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(XdpQueueError);
        expect((err as XdpQueueError).code).toBe('ROCE_ERR_XDP_QUEUE');
        expect((err as Error).message).toMatch(/receive queue 2 of .* cannot be opened .*ethtool -L .* combined 1.*--queues 0.*--driver packet/);
        // Queues 0 and 1 were closed again: they open now.
        const again = openXdpQueues(n.ifB, { queues: [0, 1], available: 4, busyPoll: false, netns: n.nsB });
        again.close();
      } finally {
        holder.close();
      }
    },
    40_000,
  );
});
