/**
 * `roce probe --doctor` on a veth pair where the truth is made: one end's MTU too small for the
 * path MTU asked for, a peer with nothing on UDP 4791 (its kernel answers ICMP port unreachable),
 * and a healthy pair running `roce perftest` (the server takes UDP 4791: no ICMP). Each check is
 * named with ok or problem as the pair is set up.
 *
 * @group netns
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const net = pairPerFile(reason, { mtu: 1500 });
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Check {
  check: string;
  status: string;
  detail: string;
  fix: string | null;
}

async function doctor(ns: string, args: readonly string[]): Promise<{ code: number | null; checks: Check[]; why: string }> {
  const r = await startRoce(ns, ['probe', '--doctor', '--json', ...args], 30_000).done;
  const checks = (r.json?.['checks'] ?? []) as Check[];
  return { code: r.code, checks, why: explain(r) };
}

const byName = (checks: readonly Check[], name: string): Check | undefined => checks.find((c) => c.check === name);

describe('roce probe --doctor on a veth pair', () => {
  t(
    'an interface MTU too small for the path MTU: the mtu check names it, with the MTU to set',
    async () => {
      const p = net();
      execFileSync('ip', ['-n', p.nsB, 'link', 'set', p.ifB, 'mtu', '1100'], { timeout: 10_000 });
      try {
        const r = await doctor(p.nsB, ['--dev', p.ifB, '--mtu', '1024']);
        expect({ code: r.code, why: r.why }).toMatchObject({ code: 1 });
        expect(byName(r.checks, 'mtu')).toMatchObject({ status: 'problem' });
        expect(byName(r.checks, 'mtu')?.detail).toContain(`${p.ifB} MTU 1100 carries a path MTU of 512`);
        expect(byName(r.checks, 'mtu')?.fix).toContain(`ip link set ${p.ifB} mtu 1120`);
        expect(byName(r.checks, 'interface')).toMatchObject({ status: 'ok' });
        // The other end, at 1500, carries 1024.
        const a = await doctor(p.nsA, ['--dev', p.ifA, '--mtu', '1024']);
        expect(byName(a.checks, 'mtu')).toMatchObject({ status: 'ok' });
      } finally {
        execFileSync('ip', ['-n', p.nsB, 'link', 'set', p.ifB, 'mtu', '1500'], { timeout: 10_000 });
      }
    },
    60_000,
  );

  t(
    'a peer with nothing on UDP 4791: ICMP port unreachable, named as no RoCE on the peer; its neighbour entry is fine',
    async () => {
      const p = net();
      const r = await doctor(p.nsA, ['--dev', p.ifA, '--dut', p.ipB]);
      expect({ code: r.code, why: r.why }).toMatchObject({ code: 1 });
      expect(byName(r.checks, 'neighbour')).toMatchObject({ status: 'ok' });
      expect(byName(r.checks, 'roce-port')).toMatchObject({ status: 'problem' });
      expect(byName(r.checks, 'roce-port')?.detail).toContain(`${p.ipB} answered UDP port 4791 with ICMP port unreachable`);
      expect(byName(r.checks, 'gids')?.detail).toContain(`::ffff:${p.ipA} (RoCE v2, IPv4-mapped)`);
    },
    60_000,
  );

  t(
    'a healthy pair running roce perftest: every check ok',
    async () => {
      const p = net();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'doctor-'));
      const ready = path.join(dir, 'ready');
      const common = ['write', '-n', '20', '-s', '1024', '--driver', 'packet', '--port', String(23000 + Math.floor(Math.random() * 20000)), '--timeout', '20'];
      const server = startRoce(p.nsB, ['perftest', ...common, '--dev', p.ifB], 60_000, { ROCE_READY_FILE: ready });
      try {
        // The server listens once it has written its port (bounded by the harness's timeout).
        while (!fs.existsSync(ready) && server.child.exitCode === null) await later(50);
        const r = await doctor(p.nsA, ['--dev', p.ifA, '--dut', p.ipB, '--mtu', '1024']);
        expect({ code: r.code, why: r.why, problems: r.checks.filter((c) => c.status === 'problem') }).toMatchObject({ code: 0, problems: [] });
        expect(r.checks.map((c) => c.check)).toEqual(['interface', 'mtu', 'gids', 'neighbour', 'roce-port', 'ecn']);
        expect(byName(r.checks, 'roce-port')).toMatchObject({ status: 'ok' });
        // And the pair does run.
        const client = await startRoce(p.nsA, ['perftest', ...common, p.ipB, '--dev', p.ifA], 60_000).done;
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
      } finally {
        server.kill();
        await server.done;
      }
    },
    90_000,
  );
});
