/**
 * Reopening an AF_XDP queue right after its previous socket went away. The kernel
 * releases a closed socket's buffer pool asynchronously (after an RCU grace period, on a
 * workqueue), so a bind right after the close can find the queue still taken (EBUSY); the
 * native layer retries for a bounded time (busyWaitMs). The loops below close and reopen as
 * fast as they can, which is the stress that hits that window; each round also carries a frame
 * both ways, so the reopened socket is known to work, not just to exist.
 * Root, namespaces and the native addon needed; skipped with the reason otherwise.
 *
 * @group netns
 */
import * as path from 'node:path';
import { AfXdpDriver, type AfXdpOptions } from '../../nic-driver/af-xdp-driver';
import { NativeErrorCode, bpfObjectPath, nativeDir, netnsPath } from '../../nic-driver/native-binding';
import { type NetnsPair, nativeNetnsSkipReason, netnsDrivers } from '../support/netns';
import { testUnless } from '../support/skip';
import { exchange, killAndReap, openInRound, startHolder } from './reopen-support';

const t = testUnless(nativeNetnsSkipReason());
const ROUNDS = 200;
/** Kill-and-reopen rounds: without the retry, runs of this test failed at rounds 0, 0, 4 and 17 on the test VM. */
const KILLS = 15;
const net = netnsDrivers((ifname, netns, extra: Partial<AfXdpOptions> = {}) => AfXdpDriver.open({ ifname, netns, frames: 256, ...extra }));
const { close } = net;
const newPair = (queues = 1): NetnsPair => net.newPair({ queues });
const open = (p: NetnsPair, side: 'a' | 'b', extra: Partial<AfXdpOptions> = {}): AfXdpDriver => net.open(side, extra, p);
/** Opens, naming the round in the error. */
const openRound = (round: number, p: NetnsPair, side: 'a' | 'b', extra: Partial<AfXdpOptions> = {}): AfXdpDriver =>
  openInRound(round, () => open(p, side, extra));

describe('AF_XDP: reopening a queue at once', () => {
  t(
    `open, send and receive, close, reopen on queue 0: ${ROUNDS} rounds (each open attaches the XDP program anew)`,
    async () => {
      const p = newPair();
      const a = open(p, 'a');
      for (let i = 0; i < ROUNDS; i++) {
        const b = openRound(i, p, 'b');
        await exchange(p, a, b, i, `round ${i}`);
        close(b);
      }
    },
    120_000,
  );

  t(
    `the same with the program kept attached by a socket on queue 1, so each bind follows the close at once: ${ROUNDS} rounds`,
    async () => {
      const p = newPair(2);
      const a = open(p, 'a', { queue: 0 });
      open(p, 'b', { queue: 1 });
      for (let i = 0; i < ROUNDS; i++) {
        const b = openRound(i, p, 'b', { queue: 0 });
        await exchange(p, a, b, i, `round ${i}`);
        close(b);
      }
    },
    120_000,
  );

  t(
    `a child process holding queue 0 is SIGKILLed: the parent opens the queue at once (${KILLS} times)`,
    async () => {
      const p = newPair();
      const a = open(p, 'a');
      const addon = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
      const script = `
      const n = require(${JSON.stringify(addon)});
      new n.XskSocket({ ifname: ${JSON.stringify(p.ifB)}, netns: ${JSON.stringify(netnsPath(p.nsB))}, umem: new ArrayBuffer(64 * 4096 + 4096),
        frameCount: 64, objectPath: ${JSON.stringify(bpfObjectPath())}, rxDesc: new Uint32Array(8), txDesc: new Uint32Array(8), txState: new Uint32Array(2) });
      console.log('READY');`;
      for (let i = 0; i < KILLS; i++) {
        const child = await startHolder(script);
        try {
          // A live holder (its program, with its pid): refused.
          expect(() => open(p, 'b')).toThrow(expect.objectContaining({ code: NativeErrorCode.XdpBusy }));
        } finally {
          await killAndReap(child);
        }
        const b = openRound(i, p, 'b');
        await exchange(p, a, b, i, `after kill ${i}`);
        close(b);
      }
    },
    60_000,
  );

  t(
    'a queue held by a live socket is XdpBusy once the default wait (2 s) is over, naming the wait; the holder keeps working',
    async () => {
      const p = newPair();
      const a = open(p, 'a');
      const b = open(p, 'b');
      const t0 = Date.now();
      let err: unknown = null;
      try {
        open(p, 'b');
      } catch (e) {
        err = e;
      }
      const waited = Date.now() - t0;
      expect(err).toEqual(
        expect.objectContaining({
          code: NativeErrorCode.XdpBusy,
          message: expect.stringMatching(
            new RegExp(`^queue 0 of ${p.ifB} already has an AF_XDP socket or zero-copy user \\(still held after retrying for 2000 ms, \\d+ attempts`),
          ),
        }),
      );
      // Loose bounds: the wait is a deadline on the monotonic clock, never unbounded.
      expect(waited).toBeGreaterThanOrEqual(1500);
      expect(waited).toBeLessThan(10_000);
      await exchange(p, a, b, 1, 'the first socket');
    },
    30_000,
  );

  t('busyWaitMs 0 fails at once without retrying; a bad busyWaitMs is BadArgument', () => {
    const p = newPair();
    open(p, 'b');
    expect(() => open(p, 'b', { busyWaitMs: 0 })).toThrow(
      expect.objectContaining({ code: NativeErrorCode.XdpBusy, message: `queue 0 of ${p.ifB} already has an AF_XDP socket or zero-copy user` }),
    );
    expect(() => open(p, 'b', { busyWaitMs: -1 })).toThrow(
      expect.objectContaining({ code: NativeErrorCode.BadArgument, message: expect.stringMatching(/^busyWaitMs must be/) }),
    );
    expect(() => open(p, 'b', { busyWaitMs: 1.5 })).toThrow(expect.objectContaining({ code: NativeErrorCode.BadArgument }));
  });
});
