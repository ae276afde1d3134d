/**
 * AF_XDP on several queues of one interface: one driver per queue, sharing the one XDP program
 * that redirects by receive queue (`xsks_map[rx_queue_index]`). On a veth with two queues per
 * end, a copy-mode AF_XDP socket transmits on the queue it is bound to and the peer receives
 * on the queue of the same index, so frames sent from queue q of one end arrive at queue q of
 * the other, and only there. Closing one queue's driver leaves the other working (the program
 * stays attached until the last driver goes). Root, namespaces and the native addon needed.
 *
 * @group netns
 */
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import { createNetnsPair, destroyNetnsPair, nativeNetnsSkipReason } from '../support/netns';
import { testUnless } from '../support/skip';
import { testFrame, ours } from './driver-suite';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The sequence numbers of the suite frames `d` received within `ms`. */
async function collect(d: AfXdpDriver, ms: number): Promise<number[]> {
  const got: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    for (;;) {
      const r = ours(d.rxBurst(64));
      if (r.length === 0) break;
      for (const f of r) got.push(new DataView(f.buffer, f.byteOffset).getUint32(46));
    }
    await sleep(5);
  }
  return got;
}

testUnless(nativeNetnsSkipReason())('two queues: each queue pair carries its own frames, and closing one leaves the other working', async () => {
  const p = createNetnsPair({ queues: 2 });
  const kind = { kind: 'udp' as const, ipOf: (d: { name: string }) => (d.name.includes(p.ifA) ? p.ipA : p.ipB) };
  const a0 = AfXdpDriver.open({ ifname: p.ifA, netns: p.nsA, queue: 0 });
  const a1 = AfXdpDriver.open({ ifname: p.ifA, netns: p.nsA, queue: 1 });
  const b0 = AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, queue: 0 });
  const b1 = AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, queue: 1 });
  try {
    expect([a0.queue, a1.queue, b0.queue, b1.queue]).toEqual([0, 1, 0, 1]);
    // Queue 0 sends 0..19, queue 1 sends 100..119.
    a0.txBurst(Array.from({ length: 20 }, (_, i) => testFrame(a0, b0, i, 200, kind)));
    a1.txBurst(Array.from({ length: 20 }, (_, i) => testFrame(a1, b1, 100 + i, 300, kind)));
    const [on0, on1] = await Promise.all([collect(b0, 400), collect(b1, 400)]);
    expect(on0).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(on1).toEqual(Array.from({ length: 20 }, (_, i) => 100 + i));
    // The program stays for the queue still open.
    b0.close();
    a1.txBurst(Array.from({ length: 10 }, (_, i) => testFrame(a1, b1, 200 + i, 120, kind)));
    expect(await collect(b1, 300)).toEqual(Array.from({ length: 10 }, (_, i) => 200 + i));
  } finally {
    for (const d of [a0, a1, b0, b1]) d.close();
    destroyNetnsPair(p);
  }
});
