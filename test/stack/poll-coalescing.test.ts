/**
 * Device.pollCoalescing (the busy-poll wait's receive): the responses a burst produces are held
 * until the next flush, so the application's answer and the ACK of what it answered leave in one
 * transmit kick; held responses still leave on their own when nothing is posted.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { Access, Mtu, QpType, SendFlags, WcStatus, WrOpcode } from '../../stack/types';
import type { MemoryDriver } from '../../nic-driver/memory-link';

function setup() {
  const sim = createSimPair({ seed: 3 });
  const side = (dev: typeof sim.a) => {
    const pd = dev.allocPd();
    const mr = dev.regMr(pd, new Uint8Array(256), Access.LOCAL_WRITE);
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 4, maxRecvWr: 4 } });
    return { dev, mr, cq, qp };
  };
  const a = side(sim.a);
  const b = side(sim.b);
  connectQp(a.qp, endpointOf(sim.a, a.qp, 100), endpointOf(sim.b, b.qp, 200), { pathMtu: Mtu.MTU_1024 });
  connectQp(b.qp, endpointOf(sim.b, b.qp, 200), endpointOf(sim.a, a.qp, 100), { pathMtu: Mtu.MTU_1024 });
  return { sim, a, b };
}

/** Counts the transmit kicks of a driver: burst or commit, whichever the port uses. */
function countKicks(d: MemoryDriver): { kicks: number } {
  const n = { kicks: 0 };
  for (const m of ['txBurst', 'txCommit'] as const) {
    const f = (d as unknown as Record<string, ((...x: unknown[]) => unknown) | undefined>)[m];
    if (f === undefined) continue;
    (d as unknown as Record<string, unknown>)[m] = (...x: unknown[]) => {
      n.kicks++;
      return f.apply(d, x);
    };
  }
  return n;
}

test('the ACK of a received SEND waits for the answer, and both leave in one kick', () => {
  const { sim, a, b } = setup();
  b.qp.postRecv({ wrId: 1n, sgList: [b.mr.sge(0, 64)] });
  a.qp.postRecv({ wrId: 1n, sgList: [a.mr.sge(0, 64)] });
  a.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  const kicks = countKicks(sim.link.b);
  // B receives inside pollCoalescing: the clock runs, one event at a time, until the SEND is in.
  let got: ReturnType<typeof b.cq.poll> = [];
  sim.b.pollCoalescing(() => {
    while (got.length === 0 && sim.clock.step()) got = b.cq.poll(4);
    return true;
  });
  expect(got.map((w) => [w.wrId, w.status])).toEqual([[1n, WcStatus.SUCCESS]]);
  expect(b.qp.counters.sent_pkts).toBe(1); // the ACK is built and queued ...
  expect(kicks.kicks).toBe(0); // ... but held
  // B answers; the held ACK and the answer leave together.
  b.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [b.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  sim.clock.runUntil(sim.clock.now() + 50_000);
  expect(b.qp.counters.sent_pkts).toBe(2);
  expect(kicks.kicks).toBe(1);
  // A got its ACK (send completion) and B's message; B gets the ACK of its own.
  const wa = a.cq.poll(8).map((w) => [w.wrId, w.status]);
  expect(wa).toEqual(expect.arrayContaining([[2n, WcStatus.SUCCESS], [1n, WcStatus.SUCCESS]]));
  expect(b.cq.poll(8).map((w) => [w.wrId, w.status])).toEqual([[2n, WcStatus.SUCCESS]]);
});

test('held responses leave on their own when nothing is posted', () => {
  const { sim, a, b } = setup();
  const kicks = countKicks(sim.link.b);
  b.qp.postRecv({ wrId: 1n, sgList: [b.mr.sge(0, 64)] });
  a.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  sim.b.pollCoalescing(() => {
    while (b.cq.poll(4).length === 0 && sim.clock.step()) {
      /* until the SEND is in */
    }
    return true;
  });
  expect(kicks.kicks).toBe(0);
  expect(a.cq.poll(4)).toEqual([]);
  sim.clock.runUntil(sim.clock.now() + 50_000);
  expect(kicks.kicks).toBe(1);
  expect(a.cq.poll(4).map((w) => [w.wrId, w.status])).toEqual([[2n, WcStatus.SUCCESS]]);
});

test('outside pollCoalescing the ACK leaves with the receive burst, as before', () => {
  const { sim, a, b } = setup();
  const kicks = countKicks(sim.link.b);
  b.qp.postRecv({ wrId: 1n, sgList: [b.mr.sge(0, 64)] });
  a.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  while (b.cq.poll(4).length === 0 && sim.clock.step()) {
    /* until the SEND is in */
  }
  expect(kicks.kicks).toBe(1);
});
