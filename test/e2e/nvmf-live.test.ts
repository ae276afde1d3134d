/**
 * `roce nvmf target` and `roce nvmf host` as processes in two namespaces over a veth pair, each
 * with --pcap: the host's data compares equal, the target reports one association ended by
 * disconnect with one SEND with Invalidate; `roce decode` shows both captures as NVMe-oF (Connect,
 * Identify, Read, Write, Flush, the CQE in a SEND with Invalidate) and `roce analyze` finds them
 * clean (no violation; every NVMe command completed, none with an error status). A second target
 * run ends at SIGINT with its report.
 *
 * @group netns
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type NetnsPair, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';
import { ROOT, e2eSkipReason, explain, startRoce } from './harness';

const base = e2eSkipReason();
const t = testUnless(base);
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let dir = '';
let net: NetnsPair | null = null;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-nvmf-'));
  if (base === null) net = createNetnsPair({ mtu: 1500 });
});
afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
  fs.rmSync(dir, { recursive: true, force: true });
});

function roce(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'roce.js'), ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

t(
  'host against target with --pcap: data equal, the captures decode as NVMe-oF and analyze clean',
  async () => {
    const n = net as NetnsPair;
    const tp = path.join(dir, 'target.pcap');
    const hp = path.join(dir, 'host.pcap');
    const target = startRoce(
      n.nsB,
      ['nvmf', 'target', '--addr', n.ipB, '-d', n.ifB, '--driver', 'packet', '--size', '4M', '--sessions', '1', '--timeout', '30', '--json', '--pcap', tp],
      60_000,
    );
    await later(1500);
    const host = await startRoce(n.nsA, ['nvmf', 'host', '--addr', n.ipB, '-d', n.ifA, '--driver', 'packet', '--blocks', '64', '--json', '--pcap', hp], 60_000)
      .done;
    const tr = await target.done;
    expect({ code: host.code, why: explain(host) }).toMatchObject({ code: 0 });
    expect({ code: tr.code, why: explain(tr) }).toMatchObject({ code: 0 });
    expect(host.json).toMatchObject({ ok: true, verified: true, flushed: true, written: { bytes: 32768, inCapsule: 4096 } });
    expect(tr.json).toMatchObject({ ok: true, ended: 'served 1 association' });
    for (const file of [tp, hp]) {
      const d = roce('decode', file);
      expect(d.code).toBe(0);
      for (const what of ['NVMe Fabrics Connect', 'NVMe Identify', 'NVMe Write', 'NVMe Read', 'NVMe Flush', 'RC_SEND_ONLY_WITH_INVALIDATE'])
        expect(d.out).toContain(what);
      // The admin queue's capsules are one SQE (nvmet-rdma): its Connect's data goes by keyed SGL, which
      // the target reads; the I/O queue's, within the in-capsule data the controller offers, in the capsule.
      expect(d.out).toMatch(/NVMe Fabrics Connect cid \d+ qid 0 sqsize \d+ kato \d+ ms keyed 0x[0-9a-f]+ 1024 B key/);
      expect(d.out).toMatch(/NVMe Fabrics Connect cid \d+ qid 1 sqsize .* in-capsule 1024 B/);
      const a = roce('analyze', '--json', file);
      expect({ code: a.code, err: a.err }).toEqual({ code: 0, err: '' });
      const j = JSON.parse(a.out) as {
        violations: unknown[];
        nvme?: { queues: { commands: number; completed: number; errors: unknown[]; neverCompleted: unknown[] }[] };
      };
      expect(j.violations).toEqual([]);
      const qs = j.nvme?.queues ?? [];
      expect(qs.length).toBe(2);
      for (const q of qs)
        expect({ commands: q.commands > 0, completed: q.completed === q.commands, errors: q.errors, never: q.neverCompleted }).toEqual({
          commands: true,
          completed: true,
          errors: [],
          never: [],
        });
    }
  },
  120_000,
);

t(
  'the target ends cleanly at SIGINT: its report, exit 0',
  async () => {
    const n = net as NetnsPair;
    const target = startRoce(n.nsB, ['nvmf', 'target', '--addr', n.ipB, '-d', n.ifB, '--driver', 'packet', '--size', '1M', '--json'], 30_000);
    await later(1500);
    target.kill('SIGINT');
    const r = await target.done;
    expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 0 });
    expect(r.json).toMatchObject({ ok: true, ended: 'stopped', associations: [] });
  },
  60_000,
);
