/**
 * `roce devices` on the veth ends of two namespaces: the usable interface, its driver modes (found
 * by opening the drivers with --probe), MTU, active IB MTU and the GID table as show_gids prints it.
 *
 * @group netns
 */
import { devicesCommand, type DeviceEntry, expandGid } from '../../cli/devices-command';
import type { Output } from '../../cli/output';
import { type NetnsPair, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);

function collect(): Output & { text: () => string; err: () => string } {
  let o = '';
  let e = '';
  return {
    stdout: (s) => {
      o += s;
    },
    stderr: (s) => {
      e += s;
    },
    stdoutBytes: (b) => {
      o += Buffer.from(b).toString();
      return true;
    },
    flush: async () => undefined,
    readerGone: () => false,
    text: () => o,
    err: () => e,
  };
}

let net: NetnsPair | null = null;
beforeAll(() => {
  if (reason === null) net = createNetnsPair({ mtu: 1500 });
});
afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
});

t('lists the veth end with driver modes, MTU, active IB MTU and GID table (--probe --json)', async () => {
  const p = net as NetnsPair;
  const out = collect();
  expect(await devicesCommand(['--netns', p.nsA, '--probe', '--json'], out)).toBe(0);
  const list = JSON.parse(out.text()) as DeviceEntry[];
  expect(list.map((d) => d.name)).toEqual([p.ifA]); // lo is not usable, so not listed
  const d = list[0] as DeviceEntry;
  expect(d).toMatchObject({ usable: true, kernelDriver: 'veth', mtu: 1500, activeMtu: 1024, probed: true });
  // veth has native XDP but no AF_XDP zero-copy.
  expect(d.modes).toEqual(['AF_XDP copy (native XDP)', 'AF_PACKET']);
  expect(d.gids[0]?.gid).toMatch(/^fe80::/);
  expect(d.gids[1]).toEqual({ index: 1, gid: '::ffff:198.18.0.1', ipv4: '198.18.0.1', version: 'v2', netdev: p.ifA });
  expect(d.gids.some((g) => g.gid === '2001:2::1')).toBe(true);
});

t('prints show_gids-style lines, and --all gives the reason for the rest', async () => {
  const p = net as NetnsPair;
  const out = collect();
  expect(await devicesCommand(['--netns', p.nsB, '--all'], out)).toBe(0);
  const text = out.text();
  expect(text).toContain(`${p.ifB}: veth, UP`);
  expect(text).toContain('MTU 1500, active IB MTU 1024');
  expect(text).toMatch(/INDEX\s+GID\s+IPv4\s+VER\s+DEV/);
  expect(text).toContain(`1      ${expandGid('::ffff:198.18.0.2').padEnd(41)}198.18.0.2       v2   ${p.ifB}`);
  expect(text).toMatch(/lo: .*\n\s+not usable: loopback/);
});

test('expandGid writes all eight groups', () => {
  expect(expandGid('::ffff:198.18.0.1')).toBe('0000:0000:0000:0000:0000:ffff:c612:0001');
});
