/**
 * Traffic class on the wire over the real drivers: IPv4 DSCP/ECN and IPv6 traffic class come from
 * the QP's traffic class, and on a VLAN the 802.1Q priority (PCP, what PFC pauses by) is the
 * traffic class's class selector (traffic class >> 5). Two devices in this process, one per
 * namespace, over AF_PACKET and AF_XDP on a plain veth: the devices tag the frames themselves, as
 * they do when stack/host-device.ts opens a VLAN interface through its parent, so no 8021q module is
 * needed here. Opening a real VLAN interface by name needs the kernel's 8021q: that test skips
 * with the reason when the kernel has none.
 *
 * @group netns
 */
import { execFileSync } from 'node:child_process';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import type { NicDriver } from '../../nic-driver/driver';
import { RealClock } from '../../base/clock';
import { connectQp, endpointOf } from '../../stack/connect';
import { Device } from '../../stack/device';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { type NetnsPair, createNetnsPair, destroyNetnsPair, nativeNetnsSkipReason } from '../support/netns';
import { testUnless } from '../support/skip';

const reason = nativeNetnsSkipReason();
const t = testUnless(reason);

/** Records the frames a driver transmits. */
function tap(d: NicDriver, sink: Uint8Array[]): NicDriver {
  const tx = d.txBurst.bind(d);
  d.txBurst = (frames) => {
    for (const f of frames) sink.push(f.slice());
    return tx(frames);
  };
  return d;
}

let net: NetnsPair | null = null;
beforeAll(() => {
  if (reason === null) net = createNetnsPair({ mtu: 1500 });
});
afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
});

const OPENERS = [
  ['AF_PACKET', (ifname: string, netns: string): NicDriver => AfPacketDriver.open({ ifname, netns })],
  ['AF_XDP', (ifname: string, netns: string): NicDriver => AfXdpDriver.open({ ifname, netns, frames: 512 })],
] as const;

for (const [label, open] of OPENERS) {
  for (const v6 of [false, true]) {
    t(
      `${label}, ${v6 ? 'IPv6' : 'IPv4'}: VLAN priority and ${v6 ? 'traffic class' : 'DSCP/ECN'} follow the QP's traffic class; data arrives`,
      async () => {
        const p = net as NetnsPair;
        const sent: Uint8Array[] = [];
        const da = tap(open(p.ifA, p.nsA), sent);
        const db = open(p.ifB, p.nsB);
        const clock = new RealClock();
        const vlan = { vid: 100 };
        const a = new Device({ driver: da, clock, ipv4: [p.ipA], ipv6: [p.ip6A], vlan, neighbors: { [p.ipB]: p.macB, [p.ip6B]: p.macB } });
        const b = new Device({ driver: db, clock, ipv4: [p.ipB], ipv6: [p.ip6B], vlan, neighbors: { [p.ipA]: p.macA, [p.ip6A]: p.macA } });
        try {
          const bufA = new Uint8Array(8192).map((_, i) => (i * 13 + 5) & 0xff);
          const bufB = new Uint8Array(8192);
          const pdA = a.allocPd();
          const pdB = b.allocPd();
          const mrA = a.regMr(pdA, bufA, Access.LOCAL_WRITE);
          const mrB = b.regMr(pdB, bufB, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
          const cqA = a.createCq(16);
          const cqB = b.createCq(16);
          const qa = a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
          const qb = b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
          const gid = v6 ? 2 : 1; // GID table: link-local, IPv4-mapped, IPv6
          const ea = endpointOf(a, qa, 100, gid);
          const eb = endpointOf(b, qb, 200, gid);
          const tc = 0xb9; // DSCP 46 (EF), ECN 01 (ECT(1)); class selector 5
          connectQp(qa, ea, eb, { trafficClass: tc });
          connectQp(qb, eb, ea, { trafficClass: tc });
          qa.postSend({
            wrId: 1,
            opcode: WrOpcode.RDMA_WRITE,
            sgList: [mrA.sge(0, 8192)],
            sendFlags: SendFlags.SIGNALED,
            rdma: { remoteAddr: mrB.addr(0), rkey: mrB.rkey },
          });
          const deadline = Date.now() + 5000;
          let wc = cqA.poll(1);
          while (wc.length === 0 && Date.now() < deadline) {
            await new Promise((r) => setImmediate(r));
            wc = cqA.poll(1);
          }
          expect(wc[0]?.status).toBe(WcStatus.SUCCESS);
          expect(Buffer.from(bufB).equals(Buffer.from(bufA))).toBe(true);
          expect(sent.length).toBeGreaterThan(0);
          for (const f of sent) {
            expect((f[12]! << 8) | f[13]!).toBe(0x8100);
            const tci = (f[14]! << 8) | f[15]!;
            expect(tci >> 13).toBe(tc >> 5); // PCP
            expect(tci & 0xfff).toBe(100); // VID
            if (v6) {
              expect((f[16]! << 8) | f[17]!).toBe(0x86dd);
              expect((((f[18]! & 0x0f) << 4) | (f[19]! >> 4)) & 0xff).toBe(tc); // IPv6 traffic class
            } else {
              expect((f[16]! << 8) | f[17]!).toBe(0x0800);
              expect(f[19]).toBe(tc); // TOS: DSCP << 2 | ECN
            }
          }
        } finally {
          da.close();
          db.close();
        }
      },
      20_000,
    );
  }
}

function has8021q(): string | null {
  if (reason !== null) return reason;
  const ns = `roce-vq-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', ns], { stdio: 'ignore', timeout: 5000 });
    execFileSync('ip', ['-n', ns, 'link', 'add', 'd0', 'type', 'dummy'], { stdio: 'ignore', timeout: 5000 });
    execFileSync('ip', ['-n', ns, 'link', 'add', 'link', 'd0', 'name', 'd0.5', 'type', 'vlan', 'id', '5'], { stdio: 'ignore', timeout: 5000 });
    return null;
  } catch {
    return 'the kernel has no VLAN (8021q) support';
  } finally {
    try {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore', timeout: 5000 });
    } catch {
      // not created
    }
  }
}

testUnless(has8021q())('a VLAN interface opened by name: the device tags through the parent, priority from the traffic class', async () => {
  const p = net as NetnsPair;
  execFileSync('ip', ['-n', p.nsA, 'link', 'add', 'link', p.ifA, 'name', 'vl7', 'type', 'vlan', 'id', '7'], { timeout: 5000 });
  execFileSync('ip', ['-n', p.nsA, 'addr', 'add', '198.19.7.1/24', 'dev', 'vl7'], { timeout: 5000 });
  execFileSync('ip', ['-n', p.nsA, 'link', 'set', 'vl7', 'up'], { timeout: 5000 });
  // openHostDevice works in this process's namespace: run the check inside nsA through a child.
  const script = `require(${JSON.stringify(require.resolve('../../dist/apps/host/host-device.js'))}).openHostDevice('vl7','packet').then(h=>{const p=h.device.resolvePath({dgid:'::ffff:198.19.7.2',dmac:2,trafficClass:0x60});console.log(JSON.stringify({name:h.device.driver.name,vlan:p.vlan}));h.close();})`;
  const out = execFileSync('ip', ['netns', 'exec', p.nsA, process.execPath, '-e', script], { encoding: 'utf8', timeout: 10_000 });
  const j = JSON.parse(out) as { name: string; vlan: { vid: number; pcp: number } };
  expect(j.name).toBe(`af-packet:${p.ifA}`);
  expect(j.vlan).toMatchObject({ vid: 7, pcp: 3 });
});
