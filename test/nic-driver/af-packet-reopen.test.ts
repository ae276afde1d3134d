/**
 * Reopening the AF_PACKET driver on an interface right after its previous socket went away
 * (the AF_PACKET side of the AF_XDP reopen tests): closed and reopened in a tight loop,
 * and after the process holding it was SIGKILLed. Each round carries a frame both ways, so the
 * reopened socket (and its UDP guard on port 4791) is known to work. (AF_PACKET owns nothing
 * exclusively: the guard sockets share the port with SO_REUSEPORT, so a live holder does not
 * keep a second driver out either.)
 * Root, namespaces and the native addon needed; skipped with the reason otherwise.
 *
 * @group netns
 */
import * as path from 'node:path';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { nativeDir, netnsPath } from '../../nic-driver/native-binding';
import { type NetnsPair, nativeNetnsSkipReason, netnsDrivers } from '../support/netns';
import { testUnless } from '../support/skip';
import { exchange, killAndReap, openInRound, startHolder } from './reopen-support';

const t = testUnless(nativeNetnsSkipReason());
const ROUNDS = 200;
const KILLS = 15;
const net = netnsDrivers((ifname, netns) => AfPacketDriver.open({ ifname, netns, blockCount: 4 }));
const { newPair, close } = net;
const open = (p: NetnsPair, side: 'a' | 'b', round: number): AfPacketDriver => openInRound(round, () => net.open(side, undefined, p));

describe('AF_PACKET: reopening at once', () => {
  t(
    `open, send and receive, close, reopen: ${ROUNDS} rounds`,
    async () => {
      const p = newPair();
      const a = open(p, 'a', -1);
      for (let i = 0; i < ROUNDS; i++) {
        const b = open(p, 'b', i);
        expect(b.udpGuard).toMatch(/^udp[46]$/);
        await exchange(p, a, b, i, `round ${i}`);
        close(b);
      }
    },
    120_000,
  );

  t(
    `a child process holding the interface is SIGKILLed: the parent opens it at once (${KILLS} times)`,
    async () => {
      const p = newPair();
      const a = open(p, 'a', -1);
      const addon = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
      const script = `
      const n = require(${JSON.stringify(addon)});
      const s = new n.PacketSocket({ ifname: ${JSON.stringify(p.ifB)}, netns: ${JSON.stringify(netnsPath(p.nsB))}, ring: new ArrayBuffer(4 * 262144 + 4096),
        blockCount: 4, txSlab: new ArrayBuffer(65536), rxDesc: new Uint32Array(8), txDesc: new Uint32Array(8) });
      if (s.describe().udpGuard === 'off') throw new Error('no UDP guard in the child');
      console.log('READY');`;
      for (let i = 0; i < KILLS; i++) {
        const child = await startHolder(script);
        await killAndReap(child);
        const b = open(p, 'b', i);
        expect(b.udpGuard).toMatch(/^udp[46]$/);
        await exchange(p, a, b, i, `after kill ${i}`);
        close(b);
      }
    },
    60_000,
  );
});
