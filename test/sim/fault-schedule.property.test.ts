/**
 * fast-check over fault schedules: whatever the link does (loss, duplication,
 * reordering, corruption, jitter, in any mix and on either side), either all
 * data arrives correct with every completion delivered once and in order, or
 * the QP ends in a clean error completion. Never silent corruption, never a
 * duplicate completion, never a hang (the run is bounded in virtual time and
 * must finish well inside it).
 */
import fc from 'fast-check';
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import type { FaultConfig } from '../../nic-driver/faults';

const faultArb: fc.Arbitrary<FaultConfig> = fc.record({
  drop: fc.double({ min: 0, max: 0.3, noNaN: true }),
  duplicate: fc.double({ min: 0, max: 0.1, noNaN: true }),
  corrupt: fc.double({ min: 0, max: 0.05, noNaN: true }),
  reorder: fc.record({ probability: fc.double({ min: 0, max: 0.1, noNaN: true }), window: fc.integer({ min: 1, max: 8 }) }),
  jitterNs: fc.integer({ min: 0, max: 20_000 }),
});

test('any fault schedule: all data correct and in order, or a clean error', () => {
  fc.assert(
    fc.property(faultArb, faultArb, fc.integer({ min: 1, max: 1 << 30 }), fc.constantFrom(1, 3, 5), (ab, ba, seed, pathMtu) => {
      const sim = createSimPair({ seed, faults: { aToB: ab, bToA: ba } });
      const r = runWorkload(sim, { seed, qps: 2, bytes: 48 * 1024, pathMtu: pathMtu as 1 | 3 | 5, maxMessage: 16 * 1024, maxVirtualNs: 120e9 });
      expect(r.bytesMismatched).toBe(0);
      expect(r.duplicateCompletions).toBe(0);
      expect(r.completedInOrder).toBe(true);
      // Not a hang: every work request completed (successfully or flushed) before the virtual deadline.
      expect(r.problems.filter((p) => p.includes('before the run stopped'))).toEqual([]);
      if (!r.ok) {
        for (const k of Object.keys(r.errorStatuses)) expect(['RETRY_EXC_ERR', 'RNR_RETRY_EXC_ERR', 'WR_FLUSH_ERR']).toContain(k);
      } else {
        expect(r.bytesVerified).toBe(r.bytesPlanned);
      }
    }),
    { numRuns: 40 },
  );
});
