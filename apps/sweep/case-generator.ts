/**
 * The sweep's cases, drawn from a seeded generator: case `i` of sweep seed `s` is always the same
 * case, so a run of N cases is a prefix of a run of more, and any worker can draw its share alone.
 * Every dimension is drawn on its own: loss from 0 to 10 % each way, Gilbert-Elliott bursts,
 * reordering, duplication, path MTU 256..4096, 1..16 QP pairs, the four workload mixes, 16..128 KiB,
 * and the three capture points. About half the cases are the demo's own setting (`mix`, plain loss,
 * captured as sent), so that a finding there has a `roce demo` command line.
 */
import { Rng } from '../../base/rng';
import { CASE_MTUS, type CaseCapturePoint, type SweepCase, WORKLOAD_MIXES, type WorkloadMix } from './sweep-case';

export const LOSS_RATES: readonly number[] = [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1];
const BURST_ENTRY: readonly number[] = [0.002, 0.005, 0.01];
const BURST_LENGTH: readonly number[] = [2, 4, 8];
const REORDER_SHARE: readonly number[] = [0.01, 0.05];
const DUPLICATE_SHARE: readonly number[] = [0.01, 0.05];
/** QP pairs, small counts more often (each case stays cheap), up to 16. */
const QP_COUNTS: readonly number[] = [1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 16];
const BYTES: readonly number[] = [16 * 1024, 16 * 1024, 32 * 1024, 32 * 1024, 64 * 1024, 128 * 1024];
const CAPTURE_POINTS: readonly CaseCapturePoint[] = ['sent', 'sent', 'host-a', 'host-b'];

function pick<T>(rng: Rng, from: readonly T[]): T {
  return from[rng.int(from.length)] as T;
}

/** Case `index` of the sweep seeded `sweepSeed`. */
export function caseAt(sweepSeed: number, index: number): SweepCase {
  const rng = new Rng((Math.imul(sweepSeed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
  const demoLike = rng.chance(0.4);
  const mix: WorkloadMix = demoLike ? 'mix' : pick(rng, WORKLOAD_MIXES);
  const loss = pick(rng, LOSS_RATES);
  const burst = !demoLike && rng.chance(0.3) ? { enter: pick(rng, BURST_ENTRY), meanLength: pick(rng, BURST_LENGTH) } : null;
  const reorder = !demoLike && rng.chance(0.25) ? { probability: pick(rng, REORDER_SHARE), window: 1 + rng.int(4) } : null;
  const duplicate = !demoLike && rng.chance(0.25) ? pick(rng, DUPLICATE_SHARE) : 0;
  return {
    seed: 1 + rng.int(999_999),
    loss,
    burst,
    reorder,
    duplicate,
    mtu: pick(rng, CASE_MTUS),
    qps: pick(rng, QP_COUNTS),
    mix,
    // Atomics count 8 bytes each: an atomic-heavy case of 128 KiB is thousands of round trips.
    bytes: mix === 'atomic' ? Math.min(32 * 1024, pick(rng, BYTES)) : pick(rng, BYTES),
    at: demoLike ? 'sent' : pick(rng, CAPTURE_POINTS),
  };
}

/** Cases `from` .. `from + count - 1`. */
export function casesAt(sweepSeed: number, from: number, count: number): SweepCase[] {
  const out: SweepCase[] = [];
  for (let i = from; i < from + count; i++) out.push(caseAt(sweepSeed, i));
  return out;
}
