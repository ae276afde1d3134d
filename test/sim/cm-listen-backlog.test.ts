/**
 * A listener flooded with REQs: at most `backlog` requests wait for an answer; the rest
 * are dropped without a REJ (cm.c cm_destroy_id(): REQ_RCVD with -ENOMEM, "Do not reject to allow
 * future retries", what ucma does once rdma_listen's backlog is used up), so the IDs a flood can
 * make stay bounded. The flooders' own REQ retries find room once the consumer answers, and a
 * legitimate client that arrives later is still served. On the virtual clock with fixed seeds.
 */
import { createSimPair, SIM_IP_B } from '../../apps/sim/sim-pair';
import { RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';

const PORT = 7174;

function rcQp(dev: Device): QueuePair {
  const pd = dev.allocPd();
  const cq = dev.createCq(16);
  dev.regMr(pd, new Uint8Array(64), Access.LOCAL_WRITE);
  return dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
}

test('a flood of 200 REQs at a backlog of 4: four handed over, the rest dropped silently; room again once answered; never more than four held', () => {
  const sim = createSimPair({ seed: 11 });
  const runFor = (ns: number): void => void sim.clock.runUntil(sim.clock.now() + ns);
  const runWhileFor = (cond: () => boolean, ns: number): void => {
    const end = sim.clock.now() + ns;
    sim.clock.runWhile(() => cond() && sim.clock.now() < end);
  };
  const flooder = new RdmaCm(sim.a, { seed: 5 });
  const server = new RdmaCm(sim.b, { seed: 6 });
  const requests: RdmaCmId[] = [];
  const listener = server.listen(
    PORT,
    (e) => {
      if (e.type === 'CONNECT_REQUEST') requests.push(e.id); // a slow consumer: it answers nothing yet
    },
    undefined,
    4,
  );
  expect(listener.backlog).toBe(4);
  const clientEvents: RdmaCmEvent[] = [];
  // 200 connection attempts, each its own QP and communication ID; 2 retries of a short response timeout.
  for (let i = 0; i < 200; i++)
    flooder.connect({ dst: SIM_IP_B, port: PORT, qp: rcQp(sim.a), responseTimeout: 10, maxCmRetries: 2 }, (e) => clientEvents.push(e));
  runFor(1_000_000); // 1 ms: the first REQs have arrived (as many as the flooder's QP 1 could send at once)
  const received = (): number => server.cm.counters.cm_rx_msgs.req;
  expect(received()).toBeGreaterThan(100);
  expect(requests).toHaveLength(4);
  // Every other REQ received was dropped (duplicates of the four pending would be counted by the CM, not here).
  expect(listener.requestsDropped).toBe(received() - 4);
  // Dropped, not refused: nobody was told REJ.
  expect(clientEvents.filter((e) => e.type === 'REJECTED')).toHaveLength(0);
  // The consumer refuses the four it holds: their REJs go out, and the next REQ retries find room.
  for (const id of requests.splice(0)) id.reject();
  runWhileFor(() => requests.length < 4, 30_000_000_000);
  expect(requests).toHaveLength(4);
  // Whatever the flood does, the listener never holds more than its backlog unanswered.
  for (const id of requests.splice(0)) id.reject();
  runFor(30_000_000_000);
  expect(requests.length).toBeLessThanOrEqual(4);
  for (const id of requests.splice(0)) id.reject();
  // Every flooder ends: refused, or unreachable after its retries.
  runFor(60_000_000_000);
  for (const id of requests.splice(0)) id.reject();
  runFor(60_000_000_000);
  const ended = clientEvents.filter((e) => e.type === 'REJECTED' || e.type === 'UNREACHABLE').length;
  expect(ended).toBe(200);
  // A legitimate client after the flood: accepted and connected.
  const good: RdmaCmEvent[] = [];
  const sqp = rcQp(sim.b);
  listener.close();
  server.listen(
    PORT + 1,
    (e) => {
      if (e.type === 'CONNECT_REQUEST') e.id.accept(sqp);
    },
    undefined,
    4,
  );
  flooder.connect({ dst: SIM_IP_B, port: PORT + 1, qp: rcQp(sim.a) }, (e) => good.push(e));
  runWhileFor(() => good.length === 0, 10_000_000_000);
  expect(good.map((e) => e.type)).toEqual(['ESTABLISHED']);
});

test('the backlog is 1024 when none, 0 or more than 1024 is asked for (ucma.c max_backlog)', () => {
  const sim = createSimPair({ seed: 12 });
  const rcm = new RdmaCm(sim.b, { seed: 1 });
  expect(rcm.listen(1, () => undefined).backlog).toBe(1024);
  expect(rcm.listen(2, () => undefined, undefined, 0).backlog).toBe(1024);
  expect(rcm.listen(3, () => undefined, undefined, 5000).backlog).toBe(1024);
  expect(rcm.listen(4, () => undefined, undefined, 3).backlog).toBe(3);
});
