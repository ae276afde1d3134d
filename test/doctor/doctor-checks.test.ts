/**
 * The parts of `roce probe --doctor`'s checks that need no host: the path MTU an interface MTU
 * carries (the kernel's iboe_get_mtu()), the GIDs an interface's addresses make, and which of them
 * a DUT's address needs.
 */
import { CheckStatus, gidCheck, gidsOf, mtuCheck, pathMtuFor } from '../../apps/doctor/doctor-checks';

describe('doctor checks', () => {
  test('path MTU from the interface MTU: 96 bytes of RoCE headers off, then the largest IB MTU that fits', () => {
    expect([1500, 1120, 1119, 9000, 4192, 4191, 300].map(pathMtuFor)).toEqual([1024, 1024, 512, 4096, 4096, 2048, 0]);
    expect(mtuCheck(1500, 1024, 'eth0').status).toBe(CheckStatus.OK);
    const bad = mtuCheck(1500, 4096, 'eth0');
    expect(bad.status).toBe(CheckStatus.PROBLEM);
    expect(bad.fix).toBe('ip link set eth0 mtu 4192 (on both ends and every hop), or use a path MTU of 1024 (perftest -m 1024, --mtu 1024)');
  });

  test('GIDs: link-local first (GID 0), then IPv4-mapped, then global IPv6; the DUT names the kind it needs', () => {
    const gids = gidsOf({ ipv4: ['198.18.0.1'], ipv6: ['fd00::1', 'fe80::1'] });
    expect(gids).toEqual([
      { gid: 'fe80::1', kind: 'linkLocal' },
      { gid: '::ffff:198.18.0.1', kind: 'ipv4Mapped' },
      { gid: 'fd00::1', kind: 'ipv6' },
    ]);
    const v4 = gidCheck(gids, '198.18.0.2', 'eth0');
    expect(v4.status).toBe(CheckStatus.INFO);
    expect(v4.detail).toContain('GID index 1 here; GID 0 is fe80::1 (linkLocal)');
    expect(v4.fix).toContain('perftest -x 1');
    expect(gidCheck(gids, 'fe80::2', 'eth0').status).toBe(CheckStatus.OK);
    expect(gidCheck(gidsOf({ ipv4: [], ipv6: ['fe80::1'] }), '198.18.0.2', 'eth0')).toMatchObject({ status: CheckStatus.PROBLEM });
    expect(gidCheck([], undefined, 'eth0')).toMatchObject({ status: CheckStatus.PROBLEM, fix: 'ip addr add ADDR/LEN dev eth0' });
  });
});
