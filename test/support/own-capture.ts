/**
 * A capture the stack makes of itself, for tests of imperfect captures: a seeded simulated pair
 * running the demo's mix (SEND, WRITE, READ, atomics, with RNR NAKs and go-back-N), by default over
 * two QP pairs, captured on host B (the responder of every pair) or host A (the requester), or
 * as sent (before the link loses frames, with `loss`: what a mirror before the lossy segment sees).
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { PcapTap, type TapPoint } from '../../nic-driver/pcap-tap';
import { Mtu } from '../../stack/mtu';
import { AllocationOrder } from '../../stack/allocation-order';

export function ownCapture(
  seed: number,
  where: TapPoint = 'host-b',
  size: { qps: number; bytes: number; maxMessage: number } = { qps: 2, bytes: 48 * 1024, maxMessage: 5000 },
  loss = 0,
): Uint8Array {
  const tap = new PcapTap({ where });
  const f = { drop: loss };
  // rxe's sequential order: both hosts number their QPs alike, which the tests of these captures use.
  const sim = createSimPair({ seed, tap, allocation: AllocationOrder.SEQUENTIAL, ...(loss > 0 ? { faults: { aToB: f, bToA: f } } : {}) });
  const r = runWorkload(sim, { seed, ...size, pathMtu: Mtu.MTU_1024 });
  if (!r.ok) throw new Error(`the simulated run for seed ${seed} failed`);
  sim.clock.runUntilIdle(1_000_000);
  return tap.bytes();
}

/** The record numbers (1-based) of every k-th record from `first` on, in a capture of `n` records. */
export function everyKth(n: number, k: number, first: number): Set<number> {
  const drop = new Set<number>();
  for (let i = first; i <= n; i += k) drop.add(i);
  return drop;
}
