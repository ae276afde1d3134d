/**
 * The CM step bound of the RDMA CM tools (apps/host/cm-step-bound.ts): librdmacm's defaults give
 * 16 REQs 6.44 s apart (2 × 4.096 µs × 2^18 + 4.096 µs × 2^20), one MRA's 68.7 s and the margin;
 * a SIDR_REQ waits the response time alone; the message names every part.
 */
import { cmStepBound } from '../../apps/host/cm-step-bound';

test('librdmacm defaults: 16 × 6.44 s + 68.7 s + 2 s', () => {
  const b = cmStepBound();
  const wait = 2 * 4.096e-6 * 2 ** 18 + 4.096e-6 * 2 ** 20;
  expect(b.ms).toBe(Math.ceil((16 * wait + 4.096e-6 * 2 ** 24) * 1000 + 2000));
  expect(b.ms).toBeGreaterThan(170_000);
  expect(b.why).toBe(
    "CM response wait 6.44 s (packet life time 18, response timeout 20) × 16 tries (max CM retries 15) + one MRA's service time 68.72 s + 2000 ms margin",
  );
});

test('small timers for tests and impatient users; SIDR has no packet life time and no MRA', () => {
  const b = cmStepBound({ responseTimeout: 8, maxCmRetries: 1 });
  expect(b.why).toMatch(/× 2 tries \(max CM retries 1\)/);
  const s = cmStepBound({ responseTimeout: 8, maxCmRetries: 1 }, true);
  expect(s.ms).toBe(Math.ceil(2 * 4.096e-6 * 2 ** 8 * 1000 + 2000));
  expect(s.why).toBe('SIDR response wait 1.0 ms (response timeout 8) × 2 tries (max CM retries 1) + 2000 ms margin');
});
