/**
 * What the project's two judges say about one capture, in-process: `roce analyze`'s go-back-N rule
 * violations and loss-recovery episodes (analysis/analyzer.ts), and `roce replay` in both roles
 * over every RC conversation (apps/replay/, built as cli/replay-command.ts builds it: the captured
 * timing, conversations set up from a captured CM exchange, those that cannot be replayed left out
 * with their reason). Violations are kept apart from what replay allows (its policy and
 * unverifiable differences) and from the analyzer's capture gaps, which the case's capture point
 * judges (case-verdict.ts).
 */
import { analyzeCapture, type CapturePoint } from '../../analysis/analyzer';
import type { CaptureGap, RuleId, Trigger, Violation } from '../../analysis/types';
import type { RxeBehaviourId } from '../../analysis/rxe-behaviours';
import { describeCaptureError, readCapture } from '../../packets/pcap';
import { packetAddresses } from '../../packets/decode';
import { capturedPackets } from '../replay/captured-packets';
import { findRcConversations } from '../replay/conversation';
import { applyCmSetup, cmConnections } from '../replay/cm-setup';
import { splitReplayable } from '../replay/replayable';
import { replayResponder } from '../replay/responder-replay';
import { replayRequester } from '../replay/requester-replay';
import { DiffClass, type Difference } from '../replay/differences';

/** How many examples of each finding a judgement keeps (the counts are always whole). */
export const EXAMPLES_KEPT = 3;

export type ReplayRole = 'responder' | 'requester';
export const REPLAY_ROLES: readonly ReplayRole[] = ['responder', 'requester'];

export interface RoleReplay {
  conversations: number;
  violations: number;
  /** Violations by difference kind (`missingAck`, `nakKind`...). */
  violationKinds: Record<string, number>;
  /** The first few violations. */
  examples: Difference[];
  /** Differences replay allows, by kind: policy (IBTA leaves it open) and unverifiable (the capture cannot tell). */
  policy: Record<string, number>;
  unverifiable: Record<string, number>;
}

export interface AnalyzeVerdict {
  /** Go-back-N rule violations by rule. */
  violations: Partial<Record<RuleId, number>>;
  /** What rxe chooses where IBTA is silent (the analyzer's `rxe` class), by kind: never a violation. */
  rxeBehaviours: Partial<Record<RxeBehaviourId, number>>;
  /** The first few violations of each rule. */
  examples: Violation[];
  /** Loss-recovery episodes by trigger. */
  episodes: Record<Trigger, number>;
  /** Rules not checked because of the capture point. */
  rulesNotChecked: RuleId[];
  /** Capture gaps: runs of requests the responses imply the capture missed (none possible where it holds every frame sent). */
  captureGaps: number;
  framesImplied: number;
  /** The first few capture gaps. */
  gapExamples: CaptureGap[];
}

export interface CaptureJudgement {
  frames: number;
  /** How reading the capture ended early, or null. */
  captureError: string | null;
  analyze: AnalyzeVerdict;
  replay: Record<ReplayRole, RoleReplay>;
  /** Conversations replay could not play, with the reason. */
  notReplayable: string[];
}

export interface JudgeOptions {
  /** The analyzer's capture point (`roce analyze --capture-point`; default 'unknown', as the command). */
  capturePoint?: CapturePoint;
  /** Run replay too (default true). */
  replay?: boolean;
}

function bump(into: Record<string, number>, key: string, n = 1): void {
  into[key] = (into[key] ?? 0) + n;
}

/** `roce analyze`'s verdict on a capture held in memory. */
export function analyzeVerdict(bytes: Uint8Array, capturePoint: CapturePoint = 'unknown'): AnalyzeVerdict & { frames: number; captureError: string | null } {
  const r = analyzeCapture(bytes, { capturePoint, keep: { violations: true, captureGaps: true } });
  const violations: Partial<Record<RuleId, number>> = {};
  for (const [rule, n] of r.violationsByRule) if (n > 0) violations[rule] = n;
  const shown = new Map<RuleId, number>();
  const examples: Violation[] = [];
  for (const v of r.violations) {
    const k = shown.get(v.rule) ?? 0;
    if (k >= EXAMPLES_KEPT) continue;
    shown.set(v.rule, k + 1);
    examples.push(v);
  }
  const rxeBehaviours: Partial<Record<RxeBehaviourId, number>> = {};
  for (const [b, n] of Object.entries(r.rxeBehavioursById) as [RxeBehaviourId, number][]) if (n > 0) rxeBehaviours[b] = n;
  return {
    frames: r.frames.total,
    captureError: r.captureError === null ? null : r.captureError.message,
    violations,
    rxeBehaviours,
    examples,
    episodes: { ...r.episodesByTrigger },
    rulesNotChecked: [...r.rulesNotChecked],
    captureGaps: r.captureQuality.captureGaps,
    framesImplied: r.captureQuality.framesImplied,
    gapExamples: r.captureGaps.slice(0, EXAMPLES_KEPT),
  };
}

function emptyRole(): RoleReplay {
  return { conversations: 0, violations: 0, violationKinds: {}, examples: [], policy: {}, unverifiable: {} };
}

/** `roce replay`'s verdicts, both roles, on every replayable RC conversation of a capture. */
export function replayVerdicts(bytes: Uint8Array): { replay: Record<ReplayRole, RoleReplay>; notReplayable: string[]; captureError: string | null } {
  const cap = readCapture(bytes);
  const { packets } = capturedPackets(cap);
  const convs = findRcConversations(packets, packetAddresses);
  applyCmSetup(convs, cmConnections(packets));
  const { replayable, notReplayable } = splitReplayable(convs);
  const replay: Record<ReplayRole, RoleReplay> = { responder: emptyRole(), requester: emptyRole() };
  for (const role of REPLAY_ROLES) {
    const out = replay[role];
    for (const conv of replayable) {
      const s = role === 'responder' ? replayResponder(conv, { timing: 'captured' }) : replayRequester(conv, { timing: 'captured' });
      out.conversations++;
      for (const d of s.differences) {
        if (d.class === DiffClass.VIOLATION) {
          out.violations++;
          bump(out.violationKinds, d.kind);
          if (out.examples.length < EXAMPLES_KEPT) out.examples.push(d);
        } else if (d.class === DiffClass.POLICY) {
          bump(out.policy, d.kind);
        } else {
          bump(out.unverifiable, d.kind);
        }
      }
    }
  }
  return {
    replay,
    notReplayable: notReplayable.map((n) => `QP 0x${n.requesterQpn.toString(16)} -> 0x${n.responderQpn.toString(16)}: ${n.reason}`),
    captureError: cap.error === null ? null : describeCaptureError(cap),
  };
}

/** Both judges on one capture. */
export function judgeCapture(bytes: Uint8Array, o: JudgeOptions = {}): CaptureJudgement {
  const { frames, captureError, ...analyze } = analyzeVerdict(bytes, o.capturePoint ?? 'unknown');
  const rv = o.replay === false ? { replay: { responder: emptyRole(), requester: emptyRole() }, notReplayable: [], captureError } : replayVerdicts(bytes);
  return { frames, captureError: rv.captureError ?? captureError, analyze, replay: rv.replay, notReplayable: rv.notReplayable };
}
