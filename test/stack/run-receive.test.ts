/**
 * The device's descriptor receive path (driver.ts RunReceive; the memory link offers it on a
 * direction with no faults, no tap and no line rate): the mixed workload (SEND/RECV with RNR,
 * WRITE, WRITE with immediate, READ, both atomics, several QPs and path MTUs) moves every byte
 * correctly with its completions in order, and the frames really were taken as runs.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import type { MemoryDriver } from '../../nic-driver/memory-link';
import type { Mtu } from '../../stack/mtu';

test.each([1, 3, 5] as Mtu[])('mixed workload over runs at path MTU code %i: every byte checked, completions in order', (pathMtu) => {
  const sim = createSimPair({ seed: pathMtu, bandwidthBps: 0 });
  let runFrames = 0;
  for (const d of [sim.link.a, sim.link.b] as MemoryDriver[]) {
    const orig = d.rxRun.bind(d);
    // Counting on the instance keeps the extension (only a replaced rxBurst turns it off).
    d.rxRun = (max: number, desc: Uint32Array): number => {
      const n = orig(max, desc);
      runFrames += n;
      return n;
    };
  }
  const r = runWorkload(sim, { seed: 7 + pathMtu, bytes: 512 * 1024, qps: 3, pathMtu });
  expect(r.problems).toEqual([]);
  expect(r.ok).toBe(true);
  expect(r.bytesVerified).toBe(r.bytesPlanned);
  expect(r.completionErrors).toBe(0);
  expect(r.completedInOrder).toBe(true);
  expect(r.duplicateCompletions).toBe(0);
  const received = sim.link.a.stats.rxFrames + sim.link.b.stats.rxFrames;
  expect(runFrames).toBe(received); // every frame came through the descriptor path
  expect(received).toBeGreaterThan(100);
});
