/**
 * Runs one sweep case on the engine: the simulated pair of `roce demo` (apps/sim/sim-pair.ts)
 * with the case's faults on both directions, the case's workload, the frames captured in memory
 * at the case's capture point, and the engine's trace counted. Deterministic: the same case gives
 * the same capture, byte for byte.
 */
import { createSimPair } from '../sim/sim-pair';
import type { AllocationOrder } from '../../stack/allocation-order';
import { runWorkload, type WorkloadResult } from '../sim/workload';
import type { FaultConfig, FaultCounters } from '../../nic-driver/faults';
import { PcapTap, type FrameTap, type TapPoint } from '../../nic-driver/pcap-tap';
import type { SweepCase } from './sweep-case';
import { workloadOptions } from './workload-mix';
import { emptyTraceCounts, tallyInto, type TraceCounts } from './trace-tally';

/** A capture point that hands over what it recorded (a PcapTap, or a frame-rewriting wrapper of one). */
export interface CaseTap extends FrameTap {
  bytes(): Uint8Array;
}

export interface CaseRun {
  /** The capture, a classic nanosecond pcap. */
  capture: Uint8Array;
  workload: WorkloadResult;
  trace: TraceCounts;
  /** What the link's faults did, both directions together. */
  faults: Pick<FaultCounters, 'frames' | 'dropped' | 'duplicated' | 'reordered'>;
}

/** The faults of one direction (both get the same; each draws from its own fork of the seed). */
export function caseFaults(c: SweepCase): FaultConfig {
  return {
    drop: c.loss,
    ...(c.burst !== null ? { dropBurst: { ...c.burst } } : {}),
    ...(c.reorder !== null ? { reorder: { ...c.reorder } } : {}),
    ...(c.duplicate > 0 ? { duplicate: c.duplicate } : {}),
  };
}

/**
 * Runs `c`; `makeTap` builds the capture point (a plain in-memory PcapTap at `where` by default).
 * `allocation`: the devices' order of keys and QP numbers (random from the seed, as roce demo, by
 * default; rxe's sequential order for a test that names them).
 */
export function runCase(c: SweepCase, makeTap: (where: TapPoint) => CaseTap = (where) => new PcapTap({ where }), allocation?: AllocationOrder): CaseRun {
  const tap = makeTap(c.at);
  const f = caseFaults(c);
  // As roce demo builds its pair: the same seed, the same faults each way.
  const sim = createSimPair({ seed: c.seed, faults: { aToB: f, bToA: f }, tap, ...(allocation !== undefined ? { allocation } : {}) });
  const trace = emptyTraceCounts();
  sim.a.tracer = tallyInto(trace);
  sim.b.tracer = tallyInto(trace);
  const workload = runWorkload(sim, workloadOptions(c));
  const ab = sim.link.faults.aToB.counters;
  const ba = sim.link.faults.bToA.counters;
  return {
    capture: tap.bytes(),
    workload,
    trace,
    faults: {
      frames: ab.frames + ba.frames,
      dropped: ab.dropped + ba.dropped,
      duplicated: ab.duplicated + ba.duplicated,
      reordered: ab.reordered + ba.reordered,
    },
  };
}
