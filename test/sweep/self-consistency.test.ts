/**
 * The self-consistency sweep (apps/sweep/): 500 seeded cases of the engine on the in-memory link
 * (loss 0-10 % each way, Gilbert-Elliott bursts, reordering, duplication, path MTU 256-4096, 1-16
 * QPs, four workload mixes, three capture points), each capture judged by `roce analyze` and by
 * `roce replay` in both roles, and the loss-recovery episodes counted by the engine's counters,
 * by `roce demo` and by `roce analyze`. They must agree: no violation from either judge, no capture
 * gap the analyzer infers (no capture point loses a frame), equal episode counts. A failure prints
 * each finding with its count and the repro lines of its first cases (`npm run sweep -- --case
 * '...'`, and the `roce demo` command where the demo can say it).
 *
 * @group long
 */
import { casesAt } from '../../apps/sweep/case-generator';
import { judgeCase } from '../../apps/sweep/case-verdict';
import { CASE_CAPTURE_POINTS, CASE_MTUS, WORKLOAD_MIXES } from '../../apps/sweep/sweep-case';
import { findingsTable } from '../../apps/sweep/sweep-report';
import {
  addVerdict,
  analyzeViolationsTotal,
  emptyTotals,
  episodeMismatchCases,
  impossibleCaptureGapCases,
  replayViolationsTotal,
} from '../../apps/sweep/sweep-totals';

const CASES = 500;
const SWEEP_SEED = 1;

const totals = emptyTotals();
beforeAll(() => {
  casesAt(SWEEP_SEED, 0, CASES).forEach((c, i) => addVerdict(totals, i, judgeCase(c)));
}, 600_000);

test(`the ${CASES} cases cover every dimension`, () => {
  expect(totals.cases).toBe(CASES);
  const cov = totals.coverage;
  expect(Object.keys(cov['mix'] ?? {}).sort()).toEqual([...WORKLOAD_MIXES].sort());
  expect(Object.keys(cov['mtu'] ?? {}).sort()).toEqual(CASE_MTUS.map(String).sort());
  expect(Object.keys(cov['at'] ?? {}).sort()).toEqual([...CASE_CAPTURE_POINTS].sort());
  expect(Object.keys(cov['qps'] ?? {}).sort()).toEqual(['1-2', '3-4', '5-8', '9-16']);
  expect(cov['loss']?.['0%']).toBeGreaterThan(0);
  expect(cov['loss']?.['10%']).toBeGreaterThan(0);
  for (const dim of ['bursts', 'reorder', 'duplicate']) expect(cov[dim]?.['on']).toBeGreaterThan(0);
});

test('roce analyze finds no go-back-N rule violation in any capture the engine wrote', () => {
  expect({ violations: analyzeViolationsTotal(totals), findings: findingsTable(totals, ['analyze']) }).toEqual({ violations: 0, findings: '' });
});

test('roce analyze infers no capture gap: every capture point holds each frame its hosts sent and received', () => {
  expect({ cases: impossibleCaptureGapCases(totals), findings: findingsTable(totals, ['captureGaps']) }).toEqual({ cases: 0, findings: '' });
});

test('roce replay finds no violation in either role', () => {
  const violations = { responder: replayViolationsTotal(totals, 'responder'), requester: replayViolationsTotal(totals, 'requester') };
  expect({ violations, findings: findingsTable(totals, ['replay']) }).toEqual({ violations: { responder: 0, requester: 0 }, findings: '' });
});

test('the engine’s counters, roce demo and roce analyze count the same loss-recovery episodes', () => {
  expect({ mismatches: episodeMismatchCases(totals), findings: findingsTable(totals, ['episodes']) }).toEqual({ mismatches: 0, findings: '' });
});
