/**
 * The doctor's checks before a live `roce probe` run, on a veth pair where the fault is made: our
 * end down, our MTU below the scenario's path MTU, a DUT address nobody answers ARP for, a DUT
 * server with nothing on UDP 4791. Each run ends with ROCE_ERR_PROBE_DOCTOR naming the check and
 * its fix, before any traffic (no "waiting for the DUT" line, no connect attempt) and within the
 * checks' bound; --no-doctor goes on to the run. And a correct setup the checks must not stop:
 * the DUT as the client (`roce perftest`, which takes UDP 4791 only once it runs) while its
 * kernel still answers ICMP port unreachable: `info`, and the run completes.
 *
 * @group netns
 */
import { execFileSync } from 'node:child_process';
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, HOST_DRIVERS, startRoce } from './harness';
import { preRunBoundMs } from '../../apps/doctor/pre-run';

const reason = e2eSkipReason();
const t = testUnless(reason);
const net = pairPerFile(reason, { mtu: 1500 });
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let port = 21000 + Math.floor(Math.random() * 20000);

interface Check {
  check: string;
  status: string;
  detail: string;
  fix: string | null;
}
interface Refused {
  code: number | null;
  json: { ok: boolean; code?: string; error?: string; doctor?: Check[] | null; live?: { error: string | null } };
  stdout: string;
  stderr: string;
  ms: number;
  why: string;
}

/** `roce probe --scenario NAME` live in nsB with `args`; --timeout 5 bounds a run the checks let through. */
async function probe(driver: 'xdp' | 'packet', name: string, args: readonly string[]): Promise<Refused> {
  const p = net();
  const start = Date.now();
  const r = await startRoce(
    p.nsB,
    ['probe', '--scenario', name, '--driver', driver, '--dev', p.ifB, '--port', String(port++), '--timeout', '5', '--json', ...args],
    40_000,
  ).done;
  if (r.json === null) throw new Error(`probe: ${explain(r)}`);
  return { code: r.code, json: r.json as Refused['json'], stdout: r.stdout, stderr: r.stderr, ms: Date.now() - start, why: explain(r) };
}

const ip = (ns: string, ...args: string[]): void => {
  execFileSync('ip', ['-n', ns, ...args], { timeout: 10_000 });
};

/** The run was refused by its checks: status 1, the code, nothing of the run, `check` a problem named on stderr with its fix. */
function expectRefused(r: Refused, check: string): Check {
  expect({ code: r.code, why: r.why }).toMatchObject({ code: 1 });
  expect(r.json).toMatchObject({ ok: false, code: 'ROCE_ERR_PROBE_DOCTOR' });
  expect(r.stdout).not.toMatch(/waiting for the DUT/);
  expect(r.json.live).toBeUndefined();
  const c = r.json.doctor?.find((x) => x.check === check);
  expect(c).toMatchObject({ status: 'problem' });
  expect(r.stderr).toContain(`the checks before the run found a problem (${check}), so no traffic was sent`);
  expect(r.stderr).toContain(`  ${check}: ${c!.detail}`);
  expect(r.stderr).toContain(`    fix: ${c!.fix}`);
  // Process start-up on a loaded host on top of the checks' own bound.
  expect(r.ms).toBeLessThan(preRunBoundMs() + 10_000);
  return c!;
}

describe('roce probe: the checks before a live run', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    t(
      `${label}: our end down, then our MTU below the scenario's path MTU: refused naming the check and its fix; --no-doctor runs anyway`,
      async () => {
        const p = net();
        ip(p.nsB, 'link', 'set', p.ifB, 'down');
        try {
          const r = await probe(driver, 'nak-retransmit', []);
          const c = expectRefused(r, 'interface');
          expect(c.detail).toBe(`${p.ifB} is DOWN`);
          expect(c.fix).toContain(`ip link set ${p.ifB} up`);
        } finally {
          ip(p.nsB, 'link', 'set', p.ifB, 'up');
        }

        ip(p.nsB, 'link', 'set', p.ifB, 'mtu', '1100');
        try {
          const r = await probe(driver, 'nak-retransmit', []);
          const c = expectRefused(r, 'mtu');
          expect(c.detail).toContain(`${p.ifB} MTU 1100 carries a path MTU of 512`);
          expect(c.fix).toContain(`ip link set ${p.ifB} mtu 1120`);
          // The checks that passed are in the JSON too, for CI to see what was checked.
          expect(r.json.doctor?.find((x) => x.check === 'interface')).toMatchObject({ status: 'ok' });
          // --no-doctor: no checks, the run starts and fails its own way.
          const n = await probe(driver, 'nak-retransmit', ['--no-doctor']);
          expect(n.code).toBe(1);
          // The live runner's own refusal of the path MTU on our end, after the checks would have run.
          expect(n.json.code).toBe('ROCE_ERR_PERFTEST_CONFIG');
          expect(n.json.doctor).toBeUndefined();
          expect(n.stderr).not.toMatch(/checks before the run/);
        } finally {
          ip(p.nsB, 'link', 'set', p.ifB, 'mtu', '1500');
        }
      },
      90_000,
    );
  }

  t(
    'a DUT address nobody answers ARP for: the neighbour check refuses the run, and UDP 4791 is not asked',
    async () => {
      const p = net();
      // In the pair's /24, on no interface.
      const r = await probe('packet', 'nak-generation', ['--dut', '198.18.0.77']);
      const c = expectRefused(r, 'neighbour');
      expect(c.detail).toContain('cannot resolve 198.18.0.77');
      expect(c.fix).toContain(`ip neigh show dev ${p.ifB}`);
      expect(r.json.doctor?.map((x) => x.check)).toEqual(['interface', 'mtu', 'gids', 'neighbour']);
    },
    60_000,
  );

  t(
    'a DUT server with nothing on UDP 4791 (no roce command running there): its ICMP port unreachable refuses the run after the settle time',
    async () => {
      const p = net();
      const r = await probe('packet', 'nak-generation', ['--dut', p.ipA]);
      const c = expectRefused(r, 'roce-port');
      expect(c.detail).toMatch(
        new RegExp(`^${p.ipA.replace(/\./g, '\\.')} answered UDP port 4791 with ICMP port unreachable \\(all \\d+ asks over \\d+ ms\\)`),
      );
      expect(c.fix).toContain("start the DUT's server before this command, or give --no-doctor");
      expect(r.json.doctor?.find((x) => x.check === 'neighbour')).toMatchObject({ status: 'ok' });
    },
    60_000,
  );

  t(
    'the DUT as the client, started after we listen: its kernel answered our ask on UDP 4791 with ICMP (its roce perftest was not running yet), which is info, and the run completes',
    async () => {
      const p = net();
      const pt = String(port++);
      const pr = startRoce(
        p.nsB,
        ['probe', '--scenario', 'nak-retransmit', '--driver', 'packet', '--dev', p.ifB, '--dut', p.ipA, '--port', pt, '--timeout', '30', '--json'],
        60_000,
      );
      // The DUT's client starts once we listen (after the checks), as a user starts it after reading the command we print.
      const listening = (): boolean =>
        execFileSync('ip', ['netns', 'exec', p.nsB, 'ss', '-Htln', `sport = :${pt}`], { timeout: 10_000, encoding: 'utf8' }).trim() !== '';
      while (!listening() && pr.child.exitCode === null) await later(100);
      const dut = startRoce(
        p.nsA,
        ['perftest', 'write', p.ipB, '--dev', p.ifA, '-s', '16384', '-n', '5', '-m', '1024', '-u', '14', '--driver', 'packet', '--port', pt, '--timeout', '30'],
        60_000,
      );
      const [r, d] = await Promise.all([pr.done, dut.done]);
      expect({ code: r.code, why: explain(r), dut: explain(d) }).toMatchObject({ code: 0 });
      const checks = (r.json?.['doctor'] ?? []) as Check[];
      expect(checks.map((c) => c.check)).toEqual(['interface', 'mtu', 'gids', 'neighbour', 'roce-port']);
      expect(checks.filter((c) => c.status === 'problem')).toEqual([]);
      const rp = checks.find((c) => c.check === 'roce-port');
      expect(rp).toMatchObject({ status: 'info' });
      expect(rp?.detail).toContain(`${p.ipA} answered UDP port 4791 with ICMP port unreachable: nothing takes RoCE v2 there now. Not a reason to stop`);
      expect(r.json?.['figures']).toEqual([expect.objectContaining({ kind: 'nakRetransmit', psn: 4, verdict: 'pass' })]);
    },
    90_000,
  );
});
