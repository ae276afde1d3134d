/**
 * One sweep case end to end: the engine runs it (case-run.ts), both judges read its capture
 * (capture-judgement.ts), and the episode counts of the three sources are set side by side
 * (episode-sources.ts). A case passes when neither judge reports a violation, the analyzer infers
 * no capture gap where none is possible, and the three sources agree.
 */
import type { RuleId, Trigger } from '../../analysis/types';
import { analyzeVerdict, judgeCapture, type CaptureJudgement } from './capture-judgement';
import { runCase, type CaseRun, type CaseTap } from './case-run';
import { episodeMismatches, episodeTally, type EpisodeTally } from './episode-sources';
import { formatCase, type SweepCase } from './sweep-case';
import type { TapPoint } from '../../nic-driver/pcap-tap';
import type { CapturePoint } from '../../analysis/analyzer';
import { SIM_IP_A, SIM_IP_B } from '../sim/sim-pair';

export interface CaseVerdict {
  case: SweepCase;
  /** The case's one-line form. */
  line: string;
  /** The workload completed and verified every byte (a run under heavy loss may exhaust its retries: not a disagreement, but counted). */
  workloadOk: boolean;
  workloadProblem: string | null;
  judgement: CaptureJudgement;
  episodes: EpisodeTally;
  episodeMismatches: Trigger[];
  /**
   * For a capture of every frame as sent (`at=sent`) whose analysis found violations: the rules
   * still violated when the analyzer is told where the capture was taken (`--capture-point sent`).
   * Null otherwise.
   */
  violationsAtSentPoint: Partial<Record<RuleId, number>> | null;
}

export function analyzeViolationCount(j: CaptureJudgement): number {
  return Object.values(j.analyze.violations).reduce((s, n) => s + (n ?? 0), 0);
}

/**
 * Why the analyzer cannot rightly infer a capture gap at a case's capture point, or null where it
 * can. A response shows its request reached the responder (IBTA §9.7.5.1.2: it acknowledges only
 * what it got), so the request was sent and passed both hosts' NICs: a capture of every frame as
 * sent, or of every frame one host's NIC sent and received, holds it. The case's taps lose nothing
 * (nic-driver/pcap-tap.ts records each frame at its point, before the link's faults or after them).
 */
export function captureGapImpossible(at: SweepCase['at']): string | null {
  switch (at) {
    case 'sent':
      return 'the capture holds every frame as sent, and a response implies a request that was sent';
    case 'host-a':
    case 'host-b':
      return "the capture holds every frame the host's NIC sent and received, and a response implies a request that passed both hosts' NICs";
  }
}

/** Capture gaps the case's capture point does not allow (0 where gaps are possible). */
export function impossibleCaptureGaps(v: CaseVerdict): number {
  return captureGapImpossible(v.case.at) === null ? 0 : v.judgement.analyze.captureGaps;
}

/**
 * Why replay in `role` cannot rightly find a capture gap at a case's capture point, or null where
 * it can. As responder, replay bridges PSNs the real responder's answers show it got (it did not
 * NAK them): as captureGapImpossible says, every capture point of a case holds those requests. As
 * requester, a gap is a request the requester sent that the capture lacks: a capture at the
 * responder's host (B) misses those lost on the way.
 */
export function replayCaptureGapImpossible(at: SweepCase['at'], role: 'responder' | 'requester'): string | null {
  if (role === 'requester' && at === 'host-b') return null;
  return captureGapImpossible(at);
}

/** Replay's capture gaps (differences of kind `captureGap`, both roles) the case's capture point does not allow. */
export function impossibleReplayCaptureGaps(v: CaseVerdict): number {
  let n = 0;
  for (const role of ['responder', 'requester'] as const)
    if (replayCaptureGapImpossible(v.case.at, role) !== null) n += v.judgement.replay[role].unverifiable.captureGap ?? 0;
  return n;
}

export function caseFailed(v: CaseVerdict): boolean {
  return (
    analyzeViolationCount(v.judgement) > 0 ||
    impossibleCaptureGaps(v) > 0 ||
    impossibleReplayCaptureGaps(v) > 0 ||
    v.judgement.replay.responder.violations > 0 ||
    v.judgement.replay.requester.violations > 0 ||
    v.episodeMismatches.length > 0
  );
}

/** What `roce analyze --capture-point` says of a case's capture point. */
export function analyzerCapturePoint(at: SweepCase['at']): CapturePoint {
  return at === 'sent' ? 'sent' : at === 'host-a' ? `host:${SIM_IP_A}` : `host:${SIM_IP_B}`;
}

/** The verdict on a case the engine has run. */
export function verdictOf(c: SweepCase, run: CaseRun): CaseVerdict {
  // The analyzer is told where the capture was taken, as a user who knows it says with --capture-point.
  const judgement = judgeCapture(run.capture, { capturePoint: analyzerCapturePoint(c.at) });
  const episodes = episodeTally(run.workload, run.trace, judgement.analyze.episodes);
  // Told nothing, the analyzer takes a capture as complete and in order; at the sent point, what it
  // then reports is kept beside the verdict (it shows what --capture-point sent spares a user).
  const violationsAtSentPoint = c.at === 'sent' ? analyzeVerdict(run.capture, 'unknown').violations : null;
  return {
    case: c,
    line: formatCase(c),
    workloadOk: run.workload.ok,
    workloadProblem: run.workload.ok ? null : (run.workload.problems[0] ?? 'not every byte was verified'),
    judgement,
    episodes,
    // Only a capture at the requester's host (A: the workload's requester) shows every episode as
    // the requester lived it; as sent, a NAK that was lost still names the episode its timeout
    // started, and at the responder's host a resend lost on the way is no episode at all.
    episodeMismatches: c.at === 'host-a' ? episodeMismatches(episodes) : [],
    violationsAtSentPoint,
  };
}

/** Runs case `c` and judges it; `makeTap` as runCase's. */
export function judgeCase(c: SweepCase, makeTap?: (where: TapPoint) => CaseTap): CaseVerdict {
  return verdictOf(c, runCase(c, makeTap));
}
