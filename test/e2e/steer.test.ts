/**
 * `--steer` over a veth with 4 queues per end. A veth has no flow classifier (ethtool:
 * "ntuple-filters: off [fixed]", every rule call "Operation not supported"), so here --steer must
 * fail the way it fails on any NIC without ntuple: ROCE_ERR_XDP_STEER quoting ethtool, the other
 * remedies, exit 1, and the interface exactly as before (features and rules). Without ethtool it
 * says so. This kernel has no netdevsim, so a NIC that takes the rules is covered only by
 * ethtool's recorded output: in test/host/roce-steering.test.ts, and here through the real CLI
 * process, with an `ethtool` first on the PATH that answers each expected call with the recorded
 * text of a NIC that takes the rules and logs the calls: the run itself (AF_XDP on queue 0 only,
 * the pingpong over the veth) is real, and the log shows the rules deleted and ntuple turned off
 * at the end of a run and on SIGTERM.
 *
 * @group netns
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pairPerFile } from '../support/netns';
import { missingToolReason, testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';
import { type DeviceEntry, devicesCommand } from '../../cli/devices-command';
import { memoryOutput } from '../../cli/output';
import * as E from '../host/ethtool-outputs';
import { runPair } from './harness';

const reason = e2eSkipReason() ?? missingToolReason('ethtool', 'ethtool is not installed (scripts/setup-system.sh installs it)');
const t = testUnless(reason);

/** What ethtool says of the interface (stdout, stderr and status of -k and -n): must not change. */
function ethtoolState(ns: string, ifname: string): string {
  const one = (args: string[]): string => {
    try {
      return `ok\n${execFileSync('ip', ['netns', 'exec', ns, 'ethtool', ...args], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] })}`;
    } catch (e) {
      const x = e as { status?: number; stdout?: string; stderr?: string };
      return `exit ${x.status}\n${x.stdout ?? ''}${x.stderr ?? ''}`;
    }
  };
  return `${one(['-k', ifname])}\n${one(['-n', ifname])}`;
}

/**
 * A directory with an `ethtool` that answers `steps` in order (an unexpected call exits 99 and
 * says so) and appends each call to `calls`. Returns the directory and a reader of the log.
 */
function replayingEthtool(steps: E.EthtoolStep[]): { dir: string; calls: () => string[]; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ethtool-replay-'));
  fs.writeFileSync(path.join(dir, 'steps.json'), JSON.stringify(steps));
  const script = `#!${process.execPath}
const fs = require('fs');
const dir = ${JSON.stringify(dir)};
const steps = JSON.parse(fs.readFileSync(dir + '/steps.json', 'utf8'));
const cmd = process.argv.slice(2).join(' ');
fs.appendFileSync(dir + '/calls', cmd + '\\n');
const done = fs.readFileSync(dir + '/calls', 'utf8').trim().split('\\n').length - 1;
const step = steps[done];
if (step === undefined || step[0] !== cmd) { process.stderr.write('replay: unexpected ethtool ' + cmd + '\\n'); process.exit(99); }
process.stdout.write(step[1].stdout);
process.stderr.write(step[1].stderr);
process.exit(step[1].status);
`;
  fs.writeFileSync(path.join(dir, 'ethtool'), script, { mode: 0o755 });
  return {
    dir,
    calls: () => (fs.existsSync(path.join(dir, 'calls')) ? fs.readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n') : []),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** All the calls of a run on a NIC that takes the rules, in order (test/host/ethtool-outputs.ts). */
function takingNicRun(ifname: string): E.EthtoolStep[] {
  const t = E.takingNic(ifname);
  return [...t.install, ...t.verify, ...t.remove];
}

describe('--steer on a veth with 4 queues', () => {
  const pair = pairPerFile(reason, { mtu: 1500, queues: 4 });

  t(
    'pingpong --steer: ROCE_ERR_XDP_STEER quoting ethtool, the remedies, exit 1; features and rules unchanged',
    async () => {
      const n = pair();
      const before = ethtoolState(n.nsB, n.ifB);
      expect(before).toMatch(/ntuple-filters: off \[fixed\]/);
      const r = await startRoce(n.nsB, ['pingpong', '-d', n.ifB, '--driver', 'xdp', '--steer', '--json'], 30_000).done;
      expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 1 });
      expect(r.json).toMatchObject({ ok: false, code: 'ROCE_ERR_XDP_STEER' });
      const msg = String(r.json?.['error']);
      expect(msg).toContain(`--steer on ${n.ifB}: ethtool -N ${n.ifB} flow-type udp4 dst-port 4791 action 0 failed: `);
      expect(msg).toMatch(/Operation not supported.*\(the driver has no ntuple flow steering\) \(ntuple-filters: off \[fixed\]\)/);
      expect(msg).toContain(`use one queue (ethtool -L ${n.ifB} combined 1), or --driver packet, which sees every queue`);
      expect(r.stderr).toContain(`roce pingpong: ${msg}`);
      expect(ethtoolState(n.nsB, n.ifB)).toBe(before);
    },
    40_000,
  );

  t(
    'perftest --steer --queues 2 (text output): the rule asked for is queue 2; exit 1; unchanged',
    async () => {
      const n = pair();
      const before = ethtoolState(n.nsB, n.ifB);
      const r = await startRoce(n.nsB, ['perftest', 'write', '-d', n.ifB, '--steer', '--queues', '2'], 30_000).done;
      expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 1 });
      expect(r.stderr).toMatch(
        new RegExp(`^roce perftest: --steer on ${n.ifB}: ethtool -N ${n.ifB} flow-type udp4 dst-port 4791 action 2 failed: .*Operation not supported`, 'm'),
      );
      expect(ethtoolState(n.nsB, n.ifB)).toBe(before);
    },
    40_000,
  );

  t(
    'without ethtool on the PATH: says it is not installed, with the remedies; exit 1',
    async () => {
      const n = pair();
      // A PATH holding only `ip` (the harness runs `ip netns exec NS node ...`; node is an absolute path).
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-noethtool-'));
      try {
        const ip = execFileSync('sh', ['-c', 'command -v ip'], { encoding: 'utf8', timeout: 10_000 }).trim();
        fs.symlinkSync(ip, path.join(dir, 'ip'));
        const r = await startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '--steer', '--json'], 30_000, { PATH: dir }).done;
        expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 1 });
        expect(r.json).toMatchObject({ ok: false, code: 'ROCE_ERR_XDP_STEER' });
        expect(String(r.json?.['error'])).toBe(
          `--steer on ${n.ifB}: ethtool is not installed (apt-get install ethtool); without it use one queue (ethtool -L ${n.ifB} combined 1), or --driver packet, which sees every queue`,
        );
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    40_000,
  );

  t(
    "roce devices: ntuple off [fixed] and no rules readable (ethtool's words); the text says --steer will not work",
    async () => {
      const n = pair();
      const o = memoryOutput();
      expect(await devicesCommand(['--netns', n.nsB, '--json'], o)).toBe(0);
      const d = (JSON.parse(o.out) as DeviceEntry[]).find((x) => x.name === n.ifB)!;
      expect(d.steering).toMatchObject({ ethtool: true, ntuple: 'fixed off', roceRules: null });
      expect(d.steering?.problem).toMatch(/Cannot get RX rings: Operation not supported/);
      const text = memoryOutput();
      await devicesCommand(['--netns', n.nsB], text);
      expect(text.out).toMatch(
        / {2}ntuple steering: ntuple-filters off \[fixed\]; no rules readable \(Cannot get RX rings: Operation not supported;.*\): --steer will not work here\n/,
      );
    },
    40_000,
  );

  t(
    'a NIC that takes the rules (recorded answers): the pingpong runs on queue 0 alone; the JSON names the rules; they are deleted and ntuple turned off at the end',
    async () => {
      const n = pair();
      const nic = replayingEthtool(takingNicRun(n.ifB));
      try {
        // The client serves queue 0 only too: on a veth a frame sent on queue N arrives on the peer's queue N.
        const { server, client } = await runPair(n, 'pingpong', ['-n', '20'], {
          driver: 'xdp',
          env: { PATH: `${nic.dir}:${process.env['PATH'] ?? ''}` },
          sideArgs: { server: ['--steer'], client: ['--queues', '0'] },
        });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        expect(server.json).toMatchObject({
          ok: true,
          steer: {
            queue: 0,
            rules: [
              { id: 1023, flowType: 'udp4' },
              { id: 1022, flowType: 'udp6' },
            ],
            ntupleTurnedOn: true,
          },
        });
        // One AF_XDP socket: no per-queue counters.
        expect(server.json?.['queues']).toBeUndefined();
        expect(nic.calls()).toEqual(takingNicRun(n.ifB).map((s) => s[0]));
      } finally {
        nic.cleanup();
      }
    },
    60_000,
  );

  t(
    'SIGTERM while the server waits: the rules are deleted and ntuple turned off before the process ends by the signal',
    async () => {
      const n = pair();
      const nic = replayingEthtool(takingNicRun(n.ifB));
      const ready = path.join(nic.dir, 'ready');
      try {
        const server = startRoce(n.nsB, ['pingpong', '-d', n.ifB, '--steer', '--json'], 30_000, {
          PATH: `${nic.dir}:${process.env['PATH'] ?? ''}`,
          ROCE_READY_FILE: ready,
        });
        // Wait for "listening" (the ready file) within the harness's own bound; the process ends by itself if it never comes.
        const listening = await new Promise<boolean>((resolve) => {
          const poll = setInterval(() => {
            if (fs.existsSync(ready)) {
              clearInterval(poll);
              resolve(true);
            }
          }, 50);
          void server.done.then(() => {
            clearInterval(poll);
            resolve(fs.existsSync(ready));
          });
        });
        expect(listening).toBe(true);
        expect(nic.calls()).toEqual(
          takingNicRun(n.ifB)
            .slice(0, 6)
            .map((s) => s[0]),
        );
        server.kill('SIGTERM');
        const r = await server.done;
        expect({ signal: r.signal, why: explain(r) }).toMatchObject({ signal: 'SIGTERM' });
        expect(nic.calls()).toEqual(takingNicRun(n.ifB).map((s) => s[0]));
      } finally {
        nic.cleanup();
      }
    },
    60_000,
  );
});
