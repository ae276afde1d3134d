/**
 * `--steer` over a veth with 4 queues per end (issue 13). A veth has no flow classifier (ethtool:
 * "ntuple-filters: off [fixed]", every rule call "Operation not supported"), so here --steer must
 * fail the way it fails on any NIC without ntuple: ROCE_ERR_XDP_STEER quoting ethtool, the other
 * remedies, exit 1, and the interface exactly as before (features and rules). Without ethtool it
 * says so. This kernel has no netdevsim, so a NIC that takes the rules is covered only by the
 * recorded-output tests (test/host/roce-steering.test.ts).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type NetnsPair, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';
import { type DeviceEntry, devicesCommand } from '../../cli/devices-command';
import { memoryOutput } from '../../cli/output';

function ethtoolReason(): string | null {
  try {
    execFileSync('ethtool', ['--version'], { stdio: 'ignore', timeout: 10_000 });
    return null;
  } catch {
    return 'ethtool is not installed (scripts/setup-system.sh installs it)';
  }
}

const reason = e2eSkipReason() ?? ethtoolReason();
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

describe('--steer on a veth with 4 queues', () => {
  let net: NetnsPair | null = null;
  beforeAll(() => {
    if (reason === null) net = createNetnsPair({ mtu: 1500, queues: 4 });
  });
  afterAll(() => {
    if (net !== null) destroyNetnsPair(net);
    net = null;
  });

  t('pingpong --steer: ROCE_ERR_XDP_STEER quoting ethtool, the remedies, exit 1; features and rules unchanged', async () => {
    const n = net as NetnsPair;
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
  }, 40_000);

  t('perftest --steer --queues 2 (text output): the rule asked for is queue 2; exit 1; unchanged', async () => {
    const n = net as NetnsPair;
    const before = ethtoolState(n.nsB, n.ifB);
    const r = await startRoce(n.nsB, ['perftest', 'write', '-d', n.ifB, '--steer', '--queues', '2'], 30_000).done;
    expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 1 });
    expect(r.stderr).toMatch(new RegExp(`^roce perftest: --steer on ${n.ifB}: ethtool -N ${n.ifB} flow-type udp4 dst-port 4791 action 2 failed: .*Operation not supported`, 'm'));
    expect(ethtoolState(n.nsB, n.ifB)).toBe(before);
  }, 40_000);

  t('without ethtool on the PATH: says it is not installed, with the remedies; exit 1', async () => {
    const n = net as NetnsPair;
    // A PATH holding only `ip` (the harness runs `ip netns exec NS node ...`; node is an absolute path).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-noethtool-'));
    try {
      const ip = execFileSync('sh', ['-c', 'command -v ip'], { encoding: 'utf8', timeout: 10_000 }).trim();
      fs.symlinkSync(ip, path.join(dir, 'ip'));
      const r = await startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '--steer', '--json'], 30_000, { PATH: dir }).done;
      expect({ code: r.code, why: explain(r) }).toMatchObject({ code: 1 });
      expect(r.json).toMatchObject({ ok: false, code: 'ROCE_ERR_XDP_STEER' });
      expect(String(r.json?.['error'])).toBe(`--steer on ${n.ifB}: ethtool is not installed (apt-get install ethtool); without it use one queue (ethtool -L ${n.ifB} combined 1), or --driver packet, which sees every queue`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);

  t('roce devices: ntuple off [fixed] and no rules readable (ethtool\'s words); the text says --steer will not work', async () => {
    const n = net as NetnsPair;
    const o = memoryOutput();
    expect(await devicesCommand(['--netns', n.nsB, '--json'], o)).toBe(0);
    const d = (JSON.parse(o.out) as DeviceEntry[]).find((x) => x.name === n.ifB)!;
    expect(d.steering).toMatchObject({ ethtool: true, ntuple: 'fixed off', roceRules: null });
    expect(d.steering?.problem).toMatch(/Cannot get RX rings: Operation not supported/);
    const text = memoryOutput();
    await devicesCommand(['--netns', n.nsB], text);
    expect(text.out).toMatch(/ {2}ntuple steering: ntuple-filters off \[fixed\]; no rules readable \(Cannot get RX rings: Operation not supported;.*\): --steer will not work here\n/);
  }, 40_000);
});
