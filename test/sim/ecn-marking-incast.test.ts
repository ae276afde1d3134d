/**
 * Where the switch marks ECN, at the scale of an incast: 8 flows into one host at 10 Gb/s with
 * HPCC's DCQCN marking scaled to 10 Gb/s and PFC, marked on departure (the default) and on arrival
 * (`at: 'enqueue'`), both against the DCQCN fluid model (apps/sim/fluid-comparison.ts). The
 * switch alone, frame by frame: ecn-marking-point.test.ts.
 *
 * @group long
 */
import type { EcnMarkingPoint } from '../../nic-driver/star-switch';
import { type StarScenario, runStarScenario } from '../../apps/sim/star-scenario';
import { compareWithFluid } from '../../apps/sim/fluid-comparison';
import { Mtu } from '../../stack/mtu';
import { HPCC_DCQCN_10G, HPCC_RED_10G } from '../support/hpcc-dcqcn';

const MS = 1e6;
/** 8 flows into one host at 10 Gb/s, 1 MB buffer, PFC; HPCC's ns-3 DCQCN at 10 Gb/s (marking and reaction point), a 1024-byte MTU. */
const incast = (at: EcnMarkingPoint): StarScenario => ({
  hosts: 9,
  flows: Array.from({ length: 8 }, (_, i) => ({ src: i, dst: 8 })),
  linkRateBps: 10e9,
  bufferBytes: 1e6,
  ecn: { kind: 'red', ...HPCC_RED_10G, at },
  pfc: { xoffBytes: 100_000, xonBytes: 80_000 },
  cc: 'dcqcn',
  ccParams: HPCC_DCQCN_10G,
  pathMtu: Mtu.MTU_1024,
  durationNs: 40 * MS,
  steadyFromNs: 20 * MS,
  seed: 1,
});

test('8-to-1 incast, HPCC marking at 10 Gb/s with PFC: marking on departure holds a lower queue with fewer marks than on arrival, near the fluid model and below Kmax', () => {
  const deq = runStarScenario(incast('dequeue'));
  const enq = runStarScenario(incast('enqueue'));
  for (const r of [deq, enq]) {
    expect(r.drops).toBe(0);
    // Frames of 1082 bytes (a 1024-byte payload) take 1106 on the wire.
    expect(r.steady.flowsGbps.reduce((a, g) => a + g, 0)).toBeGreaterThan(0.95 * 10 * (1082 / 1106));
  }
  // A mark made on arrival reaches its sender after the frame has waited out the queue it
  // measured; one made on departure, a base round trip after the queue it measured. Over 20-40 ms
  // (the figures of `roce sim --hosts 9 --mtu 1024 --ecn kmin=40K,kmax=160K,pmax=0.2,at=...
  // --pfc xoff=100K,xon=80K --cc dcqcn --cc-param HPCC_DCQCN_10G_ARG --duration 40ms`): on
  // departure 55 KB and 2.7 % of frames marked, on arrival 73 KB and 9.5 %.
  expect(deq.steady.queueMeanBytes).toBeLessThan(0.9 * enq.steady.queueMeanBytes);
  expect(deq.steady.markProbability).toBeLessThan(0.5 * enq.steady.markProbability);
  // The fluid model's fixed point (no queueing delay in its loop, as marking on departure): 48 KB.
  const c = compareWithFluid(incast('dequeue'), deq);
  expect(Math.abs(c.queueBytes!.difference)).toBeLessThan(0.5);
  expect(deq.steady.queueMeanBytes).toBeLessThan(HPCC_RED_10G.kmaxBytes);
  // The same every time.
  expect(runStarScenario(incast('dequeue')).steady).toEqual(deq.steady);
}, 300_000);
