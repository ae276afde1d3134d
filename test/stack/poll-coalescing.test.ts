/**
 * Device.pollCoalescing (the busy-poll wait's receive): the responses a burst produces are held
 * until the next flush, so the application's answer and the ACK of what it answered leave in one
 * transmit kick, the ACK after the answer (stack/ack-deferral.ts); held responses still leave on
 * their own when nothing is posted. The ACKs are the frames sending at once gives: one per AckReq
 * packet, with the MSN and credits of the moment, and before any other response of their QP.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { decodeFrame } from '../../packets/decode';
import { Opcode } from '../../packets/opcodes';
import type { Direction } from '../../nic-driver/faults';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';
import type { MemoryDriver } from '../../nic-driver/memory-link';

/** What b sent a, in wire order: opcode, PSN and the AETH's MSN and syndrome when there is one. */
type Wire = [opcode: number, psn: number, msn?: number, syndrome?: number];

function setup(bandwidthBps?: number) {
  const fromB: Wire[] = [];
  const tap = {
    record(frame: Uint8Array, _t: number, direction: Direction): void {
      const d = decodeFrame(frame);
      if (direction !== 'b->a' || !d.roce || d.bth === null) return;
      fromB.push(d.aeth === null ? [d.bth.opcode, d.bth.psn] : [d.bth.opcode, d.bth.psn, d.aeth.msn, d.aeth.syndrome]);
    },
    close(): void {},
  };
  const sim = createSimPair({ seed: 3, tap, ...(bandwidthBps !== undefined ? { bandwidthBps } : {}) });
  const side = (dev: typeof sim.a) => {
    const pd = dev.allocPd();
    const mr = dev.regMr(pd, new Uint8Array(256), Access.LOCAL_WRITE | Access.REMOTE_READ);
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 4, maxRecvWr: 4 } });
    return { dev, mr, cq, qp };
  };
  const a = side(sim.a);
  const b = side(sim.b);
  connectQp(a.qp, endpointOf(sim.a, a.qp, 100), endpointOf(sim.b, b.qp, 200), { pathMtu: Mtu.MTU_1024 });
  connectQp(b.qp, endpointOf(sim.b, b.qp, 200), endpointOf(sim.a, a.qp, 100), { pathMtu: Mtu.MTU_1024 });
  return { sim, a, b, fromB };
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

test('the ACK of a received SEND waits for the answer, and leaves after it in one kick', () => {
  const { sim, a, b, fromB } = setup();
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
  expect(b.qp.counters.sent_pkts).toBe(0); // the ACK is owed, not built yet
  expect(kicks.kicks).toBe(0);
  // B answers; the answer and then the held ACK leave together.
  b.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [b.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  sim.clock.runUntil(sim.clock.now() + 50_000);
  expect(b.qp.counters.sent_pkts).toBe(2);
  expect(kicks.kicks).toBe(1);
  expect(fromB.map((w) => w[0])).toEqual([Opcode.RC_SEND_ONLY, Opcode.RC_ACKNOWLEDGE]);
  expect(fromB[1]?.slice(1, 3)).toEqual([100, 1]); // the ACK of A's PSN 100, MSN 1
  // A got its ACK (send completion) and B's message; B gets the ACK of its own.
  const wa = a.cq.poll(8).map((w) => [w.wrId, w.status]);
  expect(wa).toEqual(
    expect.arrayContaining([
      [2n, WcStatus.SUCCESS],
      [1n, WcStatus.SUCCESS],
    ]),
  );
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

test('held in a busy-poll receive, ACKs are the frames sending at once gives: one per AckReq packet, before a READ response of their QP', () => {
  // The same traffic twice: B receiving in pollCoalescing, and the usual way.
  const run = (polled: boolean): Wire[] => {
    const { sim, a, b, fromB } = setup(0); // bandwidth 0: what A sends arrives at one instant, one receive run
    for (let i = 0; i < 3; i++) b.qp.postRecv({ wrId: BigInt(i), sgList: [b.mr.sge(0, 64)] });
    a.qp.postSend({ wrId: 1n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 8)], sendFlags: SendFlags.SIGNALED });
    a.qp.postSend({ wrId: 2n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 8)], sendFlags: SendFlags.SIGNALED });
    a.qp.postSend({
      wrId: 3n,
      opcode: WrOpcode.RDMA_READ,
      sgList: [a.mr.sge(0, 8)],
      rdma: { remoteAddr: b.mr.addr(), rkey: b.mr.rkey },
      sendFlags: SendFlags.SIGNALED,
    });
    a.qp.postSend({ wrId: 4n, opcode: WrOpcode.SEND, sgList: [a.mr.sge(0, 8)], sendFlags: SendFlags.SIGNALED });
    if (polled) {
      sim.b.pollCoalescing(() => {
        while (b.qp.counters.rcvd_pkts < 4 && sim.clock.step()) {
          /* until the four requests are in */
        }
        return true;
      });
      // The READ's response was built, the two ACKs before it first; the last SEND's ACK is held.
      expect([b.qp.counters.sent_pkts, b.qp.resp.ackHeld]).toEqual([3, true]);
    }
    sim.clock.runUntil(sim.clock.now() + 100_000);
    expect(a.cq.poll(8).map((w) => [w.wrId, w.status])).toEqual([1n, 2n, 3n, 4n].map((id) => [id, WcStatus.SUCCESS]));
    return fromB;
  };
  const polled = run(true);
  expect(polled.map((w) => w[0])).toEqual([Opcode.RC_ACKNOWLEDGE, Opcode.RC_ACKNOWLEDGE, Opcode.RC_RDMA_READ_RESPONSE_ONLY, Opcode.RC_ACKNOWLEDGE]);
  expect(polled).toEqual(run(false));
});
