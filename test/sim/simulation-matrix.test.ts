/**
 * The seeded simulation matrix: loss 0, 1%, 10%, 30%, plus duplication,
 * reordering and corruption, at path MTU 256, 1024 and 4096, with every
 * RC operation in the workload. Each cell checks data integrity byte for
 * byte, one completion per work request in order, and that the counters
 * agree with what the link injected.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload, type WorkloadResult } from '../../apps/sim/workload';
import type { FaultConfig } from '../../nic-driver/faults';

const FAULTS: [string, FaultConfig][] = [
  ['no faults', {}],
  ['1% loss', { drop: 0.01 }],
  ['10% loss', { drop: 0.1 }],
  ['30% loss', { drop: 0.3 }],
  ['5% duplicates', { duplicate: 0.05 }],
  ['5% reordered (window 4)', { reorder: { probability: 0.05, window: 4 } }],
  ['2% corrupted', { corrupt: 0.02 }],
  ['everything at once', { drop: 0.02, duplicate: 0.02, reorder: { probability: 0.02, window: 3 }, corrupt: 0.01, jitterNs: 2000 }],
];
const MTUS: [number, 1 | 3 | 5][] = [
  [256, 1],
  [1024, 3],
  [4096, 5],
];

const cells: [string, number, FaultConfig, 1 | 3 | 5][] = [];
for (const [name, f] of FAULTS) for (const [bytes, mtu] of MTUS) cells.push([name, bytes, f, mtu]);

/** A run either succeeds entirely or ends cleanly: the first error is a retry-exceeded, the rest are flushes, and nothing verified wrong. */
function cleanOutcome(r: WorkloadResult): void {
  expect(r.bytesMismatched).toBe(0);
  expect(r.duplicateCompletions).toBe(0);
  expect(r.completedInOrder).toBe(true);
  if (!r.ok) {
    const kinds = Object.keys(r.errorStatuses);
    expect(kinds.every((k) => k === 'RETRY_EXC_ERR' || k === 'WR_FLUSH_ERR' || k === 'RNR_RETRY_EXC_ERR')).toBe(true);
    expect((r.errorStatuses['RETRY_EXC_ERR'] ?? 0) + (r.errorStatuses['RNR_RETRY_EXC_ERR'] ?? 0)).toBeGreaterThan(0);
  }
}

describe.each(cells)('%s, path MTU %d', (name, _mtuBytes, faults, pathMtu) => {
  test('every byte verified, completions once and in order, counters match the injected faults', () => {
    const seed = 11 + pathMtu;
    const sim = createSimPair({ seed, faults: { aToB: faults, bToA: faults } });
    const r = runWorkload(sim, { seed, qps: 3, bytes: 384 * 1024, pathMtu, maxMessage: 32 * 1024 });
    if (name === '30% loss') {
      cleanOutcome(r);
    } else {
      expect(r.problems).toEqual([]);
      expect(r.ok).toBe(true);
      expect(r.bytesVerified).toBe(r.bytesPlanned);
    }
    // Let the frames still in flight land before comparing counters.
    sim.clock.runUntilIdle(1_000_000);
    // What A sent is what entered the a->b side of the link, and likewise for B.
    const ab = sim.link.faults.aToB.counters;
    const ba = sim.link.faults.bToA.counters;
    const cA = sim.a.totalCounters();
    const cB = sim.b.totalCounters();
    expect(cA.sent_pkts).toBe(ab.frames);
    expect(cB.sent_pkts).toBe(ba.frames);
    // Every frame that arrived was either handled by a QP or dropped for its bad ICRC, and every corruption was caught.
    const arrivedAtB = ab.frames - ab.dropped + ab.duplicated;
    const arrivedAtA = ba.frames - ba.dropped + ba.duplicated;
    expect(cB.rcvd_pkts + cB.rcvd_icrc_err).toBe(arrivedAtB);
    expect(cA.rcvd_pkts + cA.rcvd_icrc_err).toBe(arrivedAtA);
    // A corrupted frame that the link also duplicated arrives corrupted twice.
    expect(cB.rcvd_icrc_err).toBeGreaterThanOrEqual(ab.corrupted);
    expect(cB.rcvd_icrc_err).toBeLessThanOrEqual(ab.corrupted + ab.duplicated);
    expect(cA.rcvd_icrc_err).toBeGreaterThanOrEqual(ba.corrupted);
    expect(cA.rcvd_icrc_err).toBeLessThanOrEqual(ba.corrupted + ba.duplicated);
    if (ab.duplicated === 0) expect(cB.rcvd_icrc_err).toBe(ab.corrupted);
    if (ba.duplicated === 0) expect(cA.rcvd_icrc_err).toBe(ba.corrupted);
    expect(cA.rcvd_malformed + cB.rcvd_malformed + cA.rcvd_unknown_qp + cB.rcvd_unknown_qp).toBe(0);
    if (ab.dropped + ba.dropped + ab.corrupted + ba.corrupted + ab.reordered + ba.reordered === 0) {
      // Nothing lost or reordered: no timeout, and without RNR NAKs no retransmission or sequence NAK at all.
      // (After an RNR NAK the packets already in flight draw a sequence NAK, as with rxe.)
      expect(r.totals.local_ack_timeout_err).toBe(0);
      if (r.totals.rcvd_rnr_err === 0) {
        expect(r.totals.send_seq_err_nak).toBe(0);
        expect(r.totals.retransmitted_pkts).toBe(0);
      }
    } else {
      expect(r.totals.retransmitted_pkts).toBeGreaterThan(0);
    }
    if (ab.duplicated + ba.duplicated > 0) expect(r.totals.duplicate_request).toBeGreaterThan(0);
  });
});

test('the same seed gives the same frames; another seed does not', () => {
  const run = (seed: number): string => {
    const frames: string[] = [];
    const tap = { where: 'sent' as const, record: (f: Uint8Array) => frames.push(Buffer.from(f).toString('hex')), close: () => undefined };
    const sim = createSimPair({ seed, faults: { aToB: { drop: 0.05 }, bToA: { drop: 0.05 } }, tap });
    const r = runWorkload(sim, { seed, qps: 2, bytes: 64 * 1024 });
    expect(r.ok).toBe(true);
    return frames.join('\n');
  };
  const x = run(5);
  expect(run(5)).toBe(x);
  expect(run(6)).not.toBe(x);
});
