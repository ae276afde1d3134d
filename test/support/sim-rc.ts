/**
 * Two stacks' RC queue pairs over the in-memory link (apps/sim/sim-pair.ts), as the dialogue tests
 * set them up: one side per device (a PD, a CQ, a registered buffer, a QP), QPs connected to each
 * other, and a loop that runs the simulated clock until a CQ holds the completions a test awaits.
 */
import type { SimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf, type ConnectOptions } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import type { WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { Device } from '../../stack/device';

/** One device's end: its PD, a CQ for both queues, a buffer registered with `access`, an RC QP. */
export interface RcSide {
  dev: Device;
  pd: ProtectionDomain;
  qp: QueuePair;
  cq: CompletionQueue;
  mr: MemoryRegion;
  buf: Uint8Array;
}

export function rcSide(dev: Device, access: number, bufBytes: number): RcSide {
  const pd = dev.allocPd();
  const cq = dev.createCq(1024);
  const buf = new Uint8Array(bufBytes);
  const mr = dev.regMr(pd, buf, access);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  return { dev, pd, qp, cq, mr, buf };
}

/**
 * Connects `qa` on `sim.a` and `qb` on `sim.b` to each other, starting at PSNs `psnA` and `psnB`.
 * `a` and `b`: options for each side's connect (an ACK timeout of 10 unless given).
 */
export function connectRc(sim: SimPair, qa: QueuePair, qb: QueuePair, psnA: number, psnB: number, a: ConnectOptions = {}, b: ConnectOptions = a): void {
  const ea = endpointOf(sim.a, qa, psnA);
  const eb = endpointOf(sim.b, qb, psnB);
  connectQp(qa, ea, eb, { timeout: 10, ...a });
  connectQp(qb, eb, ea, { timeout: 10, ...b });
}

/** Runs the clock until `cq` has given `n` completions (or `maxEvents` events ran); returns them all. */
export function drainCompletions(sim: SimPair, cq: CompletionQueue, n: number, maxEvents = 2_000_000): WorkCompletion[] {
  const out: WorkCompletion[] = [];
  sim.clock.runWhile(() => {
    out.push(...cq.poll(64));
    return out.length < n;
  }, maxEvents);
  out.push(...cq.poll(64));
  return out;
}
