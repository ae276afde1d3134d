/**
 * A sweep's findings added up over its cases: violations per rule (analyze) and per kind and role
 * (replay), the analyzer's capture gaps per capture point, episode-count mismatches per trigger,
 * what the judges allowed, and which values of each dimension the cases covered. Each finding keeps the repro lines of the first cases (by case
 * number, whatever order the cases finish in) and one example to read.
 */
import type { CaptureGap, RuleId, Trigger, Violation } from '../../analysis/types';
import type { Difference } from '../replay/differences';
import { REPLAY_ROLES, type ReplayRole } from './capture-judgement';
import { captureGapImpossible, caseFailed, replayCaptureGapImpossible, type CaseVerdict } from './case-verdict';
import { EPISODE_TRIGGERS, type EpisodeCounts } from './episode-sources';
import { CASE_CAPTURE_POINTS, type CaseCapturePoint, reproLine } from './sweep-case';

/** Repro lines kept per finding. */
export const REPRO_KEPT = 3;

export interface FirstCases {
  /** Case numbers and repro lines of the first cases that show it, lowest number first. */
  first: { index: number; repro: string }[];
}

export interface RuleFinding extends FirstCases {
  violations: number;
  cases: number;
  /** Cases captured as sent whose violation of this rule stays when the analyzer is told so (`--capture-point sent`). */
  casesAtSentPoint: number;
  /** Cases captured as sent that showed it. */
  casesCapturedAsSent: number;
  /** The first case's first violation of this rule. */
  example: { index: number; line: string; violation: Violation } | null;
}

export interface ReplayFinding extends FirstCases {
  violations: number;
  cases: number;
  example: { index: number; line: string; difference: Difference } | null;
}

/** The analyzer's capture gaps at one capture point: a finding where the point allows none (`impossible`). */
export interface CaptureGapFinding extends FirstCases {
  gaps: number;
  cases: number;
  /** Why no capture gap is possible at this point (case-verdict.ts captureGapImpossible), or null: gaps allowed. */
  impossible: string | null;
  /** The first case's first gap. */
  example: { index: number; line: string; gap: CaptureGap } | null;
}

export interface EpisodeFinding extends FirstCases {
  /** Cases whose three counts of this trigger differ. */
  cases: number;
}

export interface SweepTotals {
  cases: number;
  failedCases: number;
  /** Cases whose workload did not complete (retries exhausted under heavy loss): judged all the same. */
  workloadFailures: number;
  workloadFailureFirst: FirstCases;
  analyze: Partial<Record<RuleId, RuleFinding>>;
  replay: Record<ReplayRole, Record<string, ReplayFinding>>;
  captureGaps: Record<CaseCapturePoint, CaptureGapFinding>;
  episodes: Record<Trigger, EpisodeFinding>;
  /** Episode sums over every case, per source and trigger. */
  episodeSums: Record<'counters' | 'demo' | 'analyze' | 'rewinds', EpisodeCounts>;
  /** What the judges allowed, summed: replay's policy and unverifiable differences by kind. */
  allowed: {
    policy: Record<string, number>;
    unverifiable: Record<string, number>;
    notReplayable: number;
  };
  /** How many cases had each value of each dimension. */
  coverage: Record<string, Record<string, number>>;
}

const zeroEpisodes = (): EpisodeCounts => ({ nak: 0, rnr: 0, timeout: 0, impliedNak: 0 });

export function emptyTotals(): SweepTotals {
  const episodes = {} as Record<Trigger, EpisodeFinding>;
  for (const t of EPISODE_TRIGGERS) episodes[t] = { cases: 0, first: [] };
  const captureGaps = {} as Record<CaseCapturePoint, CaptureGapFinding>;
  for (const at of CASE_CAPTURE_POINTS) captureGaps[at] = { gaps: 0, cases: 0, impossible: captureGapImpossible(at), first: [], example: null };
  return {
    cases: 0,
    failedCases: 0,
    workloadFailures: 0,
    workloadFailureFirst: { first: [] },
    analyze: {},
    replay: { responder: {}, requester: {} },
    captureGaps,
    episodes,
    episodeSums: { counters: zeroEpisodes(), demo: zeroEpisodes(), analyze: zeroEpisodes(), rewinds: zeroEpisodes() },
    allowed: { policy: {}, unverifiable: {}, notReplayable: 0 },
    coverage: {},
  };
}

/** Keeps the REPRO_KEPT lowest case numbers. */
function note(f: FirstCases, index: number, repro: string): void {
  if (f.first.length >= REPRO_KEPT && (f.first[f.first.length - 1] as { index: number }).index < index) return;
  f.first.push({ index, repro });
  f.first.sort((a, b) => a.index - b.index);
  if (f.first.length > REPRO_KEPT) f.first.length = REPRO_KEPT;
}

function bump(into: Record<string, number>, key: string, n = 1): void {
  into[key] = (into[key] ?? 0) + n;
}

function cover(t: SweepTotals, dim: string, value: string): void {
  bump((t.coverage[dim] ??= {}), value);
}

/** Adds case number `index`'s verdict. */
export function addVerdict(t: SweepTotals, index: number, v: CaseVerdict): void {
  const c = v.case;
  const repro = reproLine(c);
  t.cases++;
  if (caseFailed(v)) t.failedCases++;
  if (!v.workloadOk) {
    t.workloadFailures++;
    note(t.workloadFailureFirst, index, `${repro}   # ${v.workloadProblem ?? ''}`);
  }
  cover(t, 'mix', c.mix);
  cover(t, 'loss', `${Number((c.loss * 100).toFixed(4))}%`);
  cover(t, 'bursts', c.burst === null ? 'off' : 'on');
  cover(t, 'reorder', c.reorder === null ? 'off' : 'on');
  cover(t, 'duplicate', c.duplicate === 0 ? 'off' : 'on');
  cover(t, 'mtu', String(c.mtu));
  cover(t, 'qps', c.qps <= 2 ? '1-2' : c.qps <= 4 ? '3-4' : c.qps <= 8 ? '5-8' : '9-16');
  cover(t, 'bytes', `${c.bytes / 1024}K`);
  cover(t, 'at', c.at);

  const a = v.judgement.analyze;
  for (const [rule, n] of Object.entries(a.violations) as [RuleId, number][]) {
    const f = (t.analyze[rule] ??= { violations: 0, cases: 0, casesAtSentPoint: 0, casesCapturedAsSent: 0, first: [], example: null });
    f.violations += n;
    f.cases++;
    if (c.at === 'sent') {
      f.casesCapturedAsSent++;
      if ((v.violationsAtSentPoint?.[rule] ?? 0) > 0) f.casesAtSentPoint++;
    }
    note(f, index, repro);
    const ex = a.examples.find((x) => x.rule === rule);
    if (ex !== undefined && (f.example === null || index < f.example.index)) f.example = { index, line: v.line, violation: ex };
  }
  for (const role of REPLAY_ROLES) {
    const r = v.judgement.replay[role];
    for (const [kind, n] of Object.entries(r.violationKinds)) {
      const f = (t.replay[role][kind] ??= { violations: 0, cases: 0, first: [], example: null });
      f.violations += n;
      f.cases++;
      note(f, index, repro);
      const ex = r.examples.find((x) => x.kind === kind);
      if (ex !== undefined && (f.example === null || index < f.example.index)) f.example = { index, line: v.line, difference: ex };
    }
    for (const [kind, n] of Object.entries(r.policy)) bump(t.allowed.policy, `${role} ${kind}`, n);
    for (const [kind, n] of Object.entries(r.unverifiable)) {
      if (kind === 'captureGap' && replayCaptureGapImpossible(c.at, role) !== null) {
        // A capture gap where the capture point holds every request: replay misread the flow, a finding.
        const f = (t.replay[role][kind] ??= { violations: 0, cases: 0, first: [], example: null });
        f.violations += n;
        f.cases++;
        note(f, index, `${repro}   # ${n} capture gap(s) at=${c.at}: none is possible (${replayCaptureGapImpossible(c.at, role)})`);
      } else bump(t.allowed.unverifiable, `${role} ${kind}`, n);
    }
  }
  t.allowed.notReplayable += v.judgement.notReplayable.length;
  if (a.captureGaps > 0) {
    const f = t.captureGaps[c.at];
    f.gaps += a.captureGaps;
    f.cases++;
    note(f, index, `${repro}   # ${a.captureGaps} capture gap(s), ${a.framesImplied} request(s) implied`);
    const ex = a.gapExamples[0];
    if (ex !== undefined && (f.example === null || index < f.example.index)) f.example = { index, line: v.line, gap: ex };
  }

  for (const k of EPISODE_TRIGGERS) {
    for (const src of ['counters', 'demo', 'analyze', 'rewinds'] as const) t.episodeSums[src][k] += v.episodes[src][k];
  }
  for (const k of v.episodeMismatches) {
    const f = t.episodes[k];
    f.cases++;
    const e = v.episodes;
    note(f, index, `${repro}   # ${k}: counters ${e.counters[k]}, demo ${e.demo[k]}, analyze ${e.analyze[k]}, engine rewinds ${e.rewinds[k]}`);
  }
}

export function analyzeViolationsTotal(t: SweepTotals): number {
  return Object.values(t.analyze).reduce((s, f) => s + (f?.violations ?? 0), 0);
}

export function replayViolationsTotal(t: SweepTotals, role: ReplayRole): number {
  return Object.values(t.replay[role]).reduce((s, f) => s + f.violations, 0);
}

/** Cases with capture gaps at capture points that allow none: each is a finding. */
export function impossibleCaptureGapCases(t: SweepTotals): number {
  return CASE_CAPTURE_POINTS.reduce((s, at) => s + (t.captureGaps[at].impossible === null ? 0 : t.captureGaps[at].cases), 0);
}

export function episodeMismatchCases(t: SweepTotals): number {
  return EPISODE_TRIGGERS.reduce((s, k) => s + t.episodes[k].cases, 0);
}
