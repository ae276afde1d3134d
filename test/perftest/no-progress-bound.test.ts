/**
 * The no-progress bound of the live commands (bounded failure): derived from the QP's
 * timers, not a fixed 300 s, and it names its parts.
 */
import { MARGIN_MS, NO_TIMER_FALLBACK_MS, noProgressBound } from '../../apps/host/no-progress-bound';

test("perftest's and rc_pingpong's timers (timeout 14, retry 7, RNR retry 7, min RNR timer 12): 67.1 ms x 8 + 0.64 ms x 8 + the margin", () => {
  const b = noProgressBound({ timeout: 14, retryCnt: 7, rnrRetry: 7, minRnrTimer: 12 });
  expect(b.ms).toBe(Math.ceil((4.096 * 2 ** 14 * 8) / 1000 + 0.64 * 8 + MARGIN_MS));
  expect(b.ms).toBeLessThan(3000);
  expect(b.why).toMatch(/local ACK timeout 67\.109 ms \(timeout 14\) × 8 tries \(retry_cnt 7\) \+ RNR timer 0\.64 ms × 8 \(rnr_retry 7\) \+ 2000 ms margin/);
});

test('a longer local ACK timeout and fewer retries move the bound with them', () => {
  const b = noProgressBound({ timeout: 18, retryCnt: 3, rnrRetry: 0, minRnrTimer: 1 });
  expect(b.ms).toBe(Math.ceil((4.096 * 2 ** 18 * 4) / 1000 + 0.01 + MARGIN_MS));
});

test('timeout 0 (no local ACK timer) gives the transport no bound: the fallback applies and is named', () => {
  const b = noProgressBound({ timeout: 0, retryCnt: 7, rnrRetry: 7, minRnrTimer: 12 });
  expect(b.ms).toBeGreaterThanOrEqual(NO_TIMER_FALLBACK_MS);
  expect(b.why).toMatch(/timeout 0/);
});

test('--timeout overrides the derived bound', () => {
  expect(noProgressBound({ timeout: 14, retryCnt: 7, rnrRetry: 7, minRnrTimer: 12 }, 15)).toEqual({ ms: 15000, why: '--timeout 15 s' });
});
