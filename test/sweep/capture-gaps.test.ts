/**
 * A capture gap is a sweep finding: every capture point of a case holds each frame its host(s)
 * sent and received, so requests the responses imply the capture missed can only be the
 * analyzer's misreading. A capture point that really loses a request (every copy of one PSN, the
 * frames still sent and answered) makes the analyzer report the gap, fails the case, and the
 * sweep's report names the case, its repro line and why no gap is possible there. Replay's capture
 * gaps are held the same way: as responder at every case capture point, as requester where the
 * capture holds every request sent.
 *
 * @group unit
 */
import { decodeFrame } from '../../packets/decode';
import { OpFlag } from '../../packets/opcodes';
import type { Direction } from '../../nic-driver/faults';
import { PcapTap, type TapPoint } from '../../nic-driver/pcap-tap';
import type { CaseTap } from '../../apps/sweep/case-run';
import { captureGapImpossible, caseFailed, impossibleReplayCaptureGaps, judgeCase, replayCaptureGapImpossible } from '../../apps/sweep/case-verdict';
import { CASE_CAPTURE_POINTS, parseCase, reproLine } from '../../apps/sweep/sweep-case';
import { caseDetail } from '../../apps/sweep/case-detail';
import { findingsTable, sweepMarkdown } from '../../apps/sweep/sweep-report';
import { addVerdict, emptyTotals, impossibleCaptureGapCases } from '../../apps/sweep/sweep-totals';

/** Records everything but the requests at the PSN of the `nth` request it sees (1-based). */
class LosingTap implements CaseTap {
  private readonly inner: PcapTap;
  private seen = 0;
  lostPsn: number | null = null;
  lost = 0;

  constructor(
    readonly where: TapPoint,
    private readonly nth: number,
  ) {
    this.inner = new PcapTap({ where });
  }

  record(frame: Uint8Array, timeNs: number, direction: Direction): void {
    const p = decodeFrame(frame, undefined, { verifyIcrc: false });
    if (p.roce && p.bth !== null && ((p.info?.flags ?? 0) & OpFlag.REQ) !== 0 && ++this.seen === this.nth) this.lostPsn = p.bth.psn;
    if (p.roce && p.bth !== null && p.bth.psn === this.lostPsn && ((p.info?.flags ?? 0) & OpFlag.REQ) !== 0) {
      this.lost++;
      return;
    }
    this.inner.record(frame, timeNs, direction);
  }

  bytes(): Uint8Array {
    return this.inner.bytes();
  }

  close(): void {
    this.inner.close();
  }
}

test('every capture point of a case says why no capture gap is possible there', () => {
  for (const at of CASE_CAPTURE_POINTS) expect(captureGapImpossible(at)).toMatch(/holds every frame/);
});

test.each(CASE_CAPTURE_POINTS)('at=%s: a request the capture lost is a capture gap, and the gap a finding', (at) => {
  const c = parseCase(`seed=5 loss=0% mtu=1024 qps=1 mix=mix bytes=16K at=${at}`);
  const plain = judgeCase(c);
  expect(plain.judgement.analyze.captureGaps).toBe(0);
  expect(caseFailed(plain)).toBe(false);

  let tap: LosingTap | null = null;
  const lossy = judgeCase(c, (where) => {
    tap = new LosingTap(where, 6);
    return tap;
  });
  const t = tap as LosingTap | null;
  expect(t?.lost).toBeGreaterThan(0);
  const a = lossy.judgement.analyze;
  expect(a.captureGaps).toBeGreaterThan(0);
  expect(a.gapExamples.some((g) => g.firstPsn <= (t?.lostPsn ?? -1) && (t?.lostPsn ?? -1) <= g.lastPsn)).toBe(true);
  expect(caseFailed(lossy)).toBe(true);

  const totals = emptyTotals();
  addVerdict(totals, 0, plain);
  addVerdict(totals, 7, lossy);
  expect(totals.failedCases).toBe(1);
  expect(impossibleCaptureGapCases(totals)).toBe(1);
  const table = findingsTable(totals, ['captureGaps']);
  expect(table).toContain(`analyze capture gaps at=${at}: ${a.captureGaps} gaps in 1 cases, where none is possible (${captureGapImpossible(at)})`);
  expect(table).toContain(`case 7: ${reproLine(c)}`);
  const md = sweepMarkdown(totals, { command: 'npm run sweep', sweepSeed: 1, from: 0, jobs: 1, wallMs: 0, cpuMs: 0, cpus: 1, node: 'v0' });
  expect(md).toContain('## `roce analyze`: capture gaps');
  expect(md).toContain('1 cases with a capture gap where none is possible.');
  expect(md).toMatch(new RegExp(`^\\| ${at} \\| ${a.captureGaps} \\| 1 \\| .*holds every frame.* \\| case 7: `, 'm'));
});

test.each(CASE_CAPTURE_POINTS)("at=%s: replay's capture gap as responder is a finding, not an allowed difference", (at) => {
  expect(replayCaptureGapImpossible(at, 'responder')).toBe(captureGapImpossible(at));
  const c = parseCase(`seed=5 loss=0% mtu=1024 qps=1 mix=mix bytes=16K at=${at}`);
  const plain = judgeCase(c);
  expect(plain.judgement.replay.responder.unverifiable.captureGap).toBeUndefined();
  const lossy = judgeCase(c, (where) => new LosingTap(where, 6));
  const n = lossy.judgement.replay.responder.unverifiable.captureGap ?? 0;
  expect(n).toBeGreaterThan(0);
  expect(impossibleReplayCaptureGaps(lossy)).toBeGreaterThanOrEqual(n);
  expect(caseFailed(lossy)).toBe(true);

  const totals = emptyTotals();
  addVerdict(totals, 0, plain);
  addVerdict(totals, 7, lossy);
  expect(totals.replay.responder.captureGap).toMatchObject({ violations: n, cases: 1 });
  expect(totals.allowed.unverifiable['responder captureGap']).toBeUndefined();
  expect(sweepMarkdown(totals, { command: 'npm run sweep', sweepSeed: 1, from: 0, jobs: 1, wallMs: 0, cpuMs: 0, cpus: 1, node: 'v0' })).toContain(
    `capture gap(s) at=${at}: none is possible`,
  );
  // `npm run sweep -- --case` says the same of the one case.
  expect(caseDetail(lossy, null)).toContain(`replay --role responder: `);
  expect(caseDetail(lossy, null)).toContain(`  capture gaps: ${n}: a finding, none is possible at=${at} (${captureGapImpossible(at)})`);
  expect(caseDetail(plain, null)).not.toContain('capture gaps');
});

test("replay's capture gap as requester is allowed only where requests lost on the way are not captured (the responder's host)", () => {
  expect(replayCaptureGapImpossible('host-b', 'requester')).toBeNull();
  expect(replayCaptureGapImpossible('sent', 'requester')).toBe(captureGapImpossible('sent'));
  expect(replayCaptureGapImpossible('host-a', 'requester')).toBe(captureGapImpossible('host-a'));
});
