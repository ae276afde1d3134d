/**
 * The shared NicDriver suite and AF_PACKET-specific checks, over a veth pair
 * between two network namespaces made for this file (test/support/netns.ts).
 * Both driver ends live in this process: each opens its socket inside its
 * namespace through the `netns` option. Skipped with a reason when not root,
 * without `ip netns`, or without the native addon (scripts/build-native.sh).
 *
 * @group netns
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { AfPacketDriver, type AfPacketOptions } from '../../nic-driver/af-packet-driver';
import { NativeErrorCode, NicDriverError, nativeDir } from '../../nic-driver/native-binding';
import { interfaceInfo, resolveNeighbor } from '../../nic-driver/interface-info';
import { nativeNetnsSkipReason, netnsDrivers, nstatCounter, runInNetns } from '../support/netns';
import { testUnless } from '../support/skip';
import { type FrameKind, netnsDriverSuite, ours, testFrame, udpBetween } from './driver-suite';

const reason = nativeNetnsSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** TPACKET_V3 hands over a block after at most retireMs (1 ms); leave the kernel time to move the frames. */
const PUMP_MS = 40;

const net = netnsDrivers((ifname, netns, extra: Partial<AfPacketOptions> = {}) => AfPacketDriver.open({ ifname, netns, ...extra }));
const { pair, open } = net;
const udpKind = (): FrameKind => udpBetween(pair);

netnsDriverSuite('AF_PACKET', net, reason, PUMP_MS);

describe('AF_PACKET driver', () => {
  t('reports the interface MAC and MTU, and binds the UDP guard', () => {
    const p = pair();
    const b = open('b');
    expect(b.mac).toBe(p.macB);
    expect(b.mtu).toBe(1500);
    expect(['udp6', 'udp4']).toContain(b.udpGuard);
    expect(b.name).toBe(`af-packet:${p.ifB}`);
  });

  t('receives only UDP to the RoCE port: ARP, ICMP and other UDP ports stay with the kernel', async () => {
    const p = pair();
    const b = open('b');
    const ping = await runInNetns(p.nsA, 'ping', ['-c', '2', '-i', '0.2', '-W', '1', p.ipB], 5000);
    expect(ping.code).toBe(0); // the kernel answered ARP and ICMP echo
    const a = open('a');
    const other = testFrame(a, b, 1, 100, udpKind());
    other[37] = 0x99; // UDP destination port 4761, not 4791
    expect(a.txBurst([other, testFrame(a, b, 2, 100, udpKind())])).toBe(2);
    await sleep(PUMP_MS);
    const got = b.rxBurst(64);
    expect(got.every((f) => ((f[36]! << 8) | f[37]!) === 4791)).toBe(true);
    expect(ours(got)).toHaveLength(1);
  });

  t('no ICMP port unreachable for RoCE frames addressed to the host (the guard socket is the listener)', async () => {
    const p = pair();
    const send = async (guard: boolean): Promise<number> => {
      const b = open('b', { udpGuard: guard });
      const a = open('a');
      const before = nstatCounter(p.nsB, 'IcmpOutDestUnreachs');
      a.txBurst(Array.from({ length: 20 }, (_, i) => testFrame(a, b, i, 200, udpKind())));
      await sleep(100);
      expect(ours(b.rxBurst(64))).toHaveLength(20);
      const after = nstatCounter(p.nsB, 'IcmpOutDestUnreachs');
      a.close();
      b.close();
      return after - before;
    };
    expect(await send(true)).toBe(0);
    // The control: without the guard the kernel does answer, so the counter would have seen it.
    expect(await send(false)).toBeGreaterThan(0);
  });

  t('a VLAN-tagged frame arrives with its tag where it was on the wire', async () => {
    const a = open('a');
    const b = open('b');
    const plain = testFrame(a, b, 7, 300, udpKind());
    const tagged = new Uint8Array(plain.length + 4);
    tagged.set(plain.subarray(0, 12), 0);
    tagged.set([0x81, 0x00, 0x20, 0x2a], 12); // PCP 1, VID 42
    tagged.set(plain.subarray(12), 16);
    a.txBurst([tagged]);
    await sleep(PUMP_MS);
    const got = b.rxBurst(64);
    expect(got).toHaveLength(1);
    expect(Buffer.from(got[0]!).equals(Buffer.from(tagged))).toBe(true);
  });

  t('a frame over the MTU is counted as txDropped, not sent', () => {
    const a = open('a');
    const b = open('b');
    expect(a.txBurst([testFrame(a, b, 1, 1515, udpKind())])).toBe(1);
    expect(a.stats.txDropped).toBe(1);
    expect(a.stats.txFrames).toBe(0);
  });

  t('9000-byte MTU: jumbo frames arrive intact', async () => {
    const p = net.newPair({ mtu: 9000 });
    const a = open('a', {}, p);
    const b = open('b', {}, p);
    const frames = [9014, 4096, 8000].map((n, i) =>
      testFrame(
        a,
        b,
        i,
        n,
        udpBetween(() => p),
      ),
    );
    expect(a.txBurst(frames)).toBe(3);
    await sleep(PUMP_MS);
    const got = ours(b.rxBurst(64));
    expect(got.map((f) => f.length)).toEqual([9014, 4096, 8000]);
    got.forEach((f, i) => expect(Buffer.from(f).equals(Buffer.from(frames[i]!))).toBe(true));
  });

  t('a missing interface is a NicDriverError with code NoSuchInterface', () => {
    const p = pair();
    expect.assertions(3);
    try {
      AfPacketDriver.open({ ifname: 'rvnosuch0', netns: p.nsA });
    } catch (e) {
      expect(e).toBeInstanceOf(NicDriverError);
      expect((e as NicDriverError).code).toBe(NativeErrorCode.NoSuchInterface);
      expect((e as Error).message).toMatch(/no such interface: rvnosuch0/);
    }
  });

  t('bad options are NicDriverError BadArgument', () => {
    const p = pair();
    expect(() => AfPacketDriver.open({ ifname: p.ifA, netns: p.nsA, mtu: 9000, blockSize: 8192 })).toThrow(/blockSize 8192 cannot hold a 9018-byte frame/);
    expect(() => AfPacketDriver.open({ ifname: p.ifA, netns: p.nsA, blockSize: 5000 })).toThrow(NicDriverError);
    expect(() => AfPacketDriver.open({ ifname: p.ifA, netns: 'roce-no-such-ns' })).toThrow(/no network namespace/);
  });

  t('without privileges the native layer says so (child process as nobody)', () => {
    const addon = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
    const script = `
      const n = require(${JSON.stringify(addon)});
      try {
        new n.PacketSocket({ ifname: 'lo', ring: new ArrayBuffer(1 << 20), txSlab: new ArrayBuffer(4096),
          rxDesc: new Uint32Array(8), txDesc: new Uint32Array(8), blockSize: 65536, blockCount: 8 });
        console.log('OPENED');
      } catch (e) { console.log(e.code + ' ' + e.message); }`;
    const out = execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(out).toMatch(/^ROCE_ERR_NO_PRIVILEGES cannot open an AF_PACKET socket: Operation not permitted \(needs root/);
  });
});

/** VLAN interfaces need the kernel's 8021q support, which this kernel may lack. */
function vlanSupport(): string | null {
  if (reason !== null) return reason;
  const ns = `roce-vlanprobe-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', ns], { timeout: 5000 });
    execFileSync('ip', ['-n', ns, 'link', 'add', 'vp0', 'type', 'veth', 'peer', 'name', 'vp1'], { timeout: 5000, stdio: 'pipe' });
    execFileSync('ip', ['-n', ns, 'link', 'add', 'link', 'vp0', 'name', 'vp0.2', 'type', 'vlan', 'id', '2'], { timeout: 5000, stdio: 'pipe' });
    return null;
  } catch {
    return 'the kernel has no VLAN (8021q) support';
  } finally {
    try {
      execFileSync('ip', ['netns', 'del', ns], { timeout: 5000, stdio: 'ignore' });
    } catch {
      // not created
    }
  }
}
const vlanReason = vlanSupport();

describe('interface info and neighbour resolution', () => {
  t('interfaceInfo reads MAC, MTU, addresses and queues inside a namespace', async () => {
    const p = pair();
    const i = await interfaceInfo(p.ifB, { netns: p.nsB });
    expect(i).toMatchObject({ name: p.ifB, mac: p.macB, mtu: 1500, ipv4: [p.ipB], vlan: null, operState: 'UP' });
    expect(i.rxQueues).toBeGreaterThanOrEqual(1);
    expect(i.ipv6).toContain(p.ip6B);
    await expect(interfaceInfo('rvnosuch0', { netns: p.nsB })).rejects.toMatchObject({ code: NativeErrorCode.NoSuchInterface });
  });

  testUnless(vlanReason)('a VLAN interface reports its parent and id', async () => {
    const p = pair();
    const name = `${p.ifB.slice(0, 10)}.7`;
    execFileSync('ip', ['-n', p.nsB, 'link', 'add', 'link', p.ifB, 'name', name, 'type', 'vlan', 'id', '7'], { timeout: 5000 });
    try {
      const i = await interfaceInfo(name, { netns: p.nsB });
      expect(i.vlan).toEqual({ parent: p.ifB, id: 7, protocol: '802.1Q' });
    } finally {
      execFileSync('ip', ['-n', p.nsB, 'link', 'del', name], { timeout: 5000 });
    }
  });

  t('resolveNeighbor triggers ARP (and IPv6 ND) and returns the MAC; an absent host is NeighborUnresolved', async () => {
    const p = pair();
    execFileSync('ip', ['-n', p.nsA, 'neigh', 'flush', 'dev', p.ifA], { timeout: 5000 });
    expect(await resolveNeighbor(p.ifA, p.ipB, 3000, { netns: p.nsA })).toBe(p.macB);
    expect(await resolveNeighbor(p.ifA, p.ip6B, 3000, { netns: p.nsA })).toBe(p.macB);
    await expect(resolveNeighbor(p.ifA, '198.18.0.99', 1500, { netns: p.nsA })).rejects.toMatchObject({ code: NativeErrorCode.NeighborUnresolved });
  });
});
