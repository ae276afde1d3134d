/**
 * What a replay reports: each way the stack's answer differs from what the
 * real peer sent, classified as a violation (the two cannot both be right)
 * or a policy difference the IBTA allows, with the frames that show it.
 */
import type { DecodedFrame } from '../../packets/decode';
import type { RcConversation } from './conversation';

export const DiffClass = { VIOLATION: 'violation', POLICY: 'policy', UNVERIFIABLE: 'unverifiable' } as const;
export type DiffClass = (typeof DiffClass)[keyof typeof DiffClass];

export interface Difference {
  class: DiffClass;
  /** Short stable name, e.g. `missingAck`, `nakKind`, `readSegmentation`, `ackCoalescing`. */
  kind: string;
  psn: number | null;
  /** For a run of PSNs reported once: the last PSN, and how many. */
  lastPsn?: number;
  count?: number;
  /** Frame numbers in the capture that show the expected side. */
  frames: number[];
  expected: string;
  got: string;
  /** Why this class: the rule or the allowance. */
  rule: string;
}

export interface ReplaySummary {
  role: 'responder' | 'requester';
  requesterQpn: number;
  responderQpn: number;
  requesterIp: string;
  responderIp: string;
  pathMtu: number;
  framesIn: number;
  framesOut: number;
  /** Captured frames the stack reproduced exactly. */
  matched: number;
  /** Captured frames of the compared side. */
  expected: number;
  differences: Difference[];
  violations: number;
}

/** The difference a frame the stack sent makes when it is not a well-formed RoCE frame. */
export function malformedOutput(d: DecodedFrame): Difference {
  return { class: DiffClass.VIOLATION, kind: 'malformedOutput', psn: null, frames: [], expected: 'a well-formed frame', got: d.roce ? (d.error?.message ?? '') : 'not RoCE', rule: 'the stack must emit valid frames' };
}

/** The summary of a replay of `conv` as `role`: its counts and differences. */
export function replaySummary(
  role: ReplaySummary['role'],
  conv: RcConversation,
  counts: Pick<ReplaySummary, 'pathMtu' | 'framesIn' | 'framesOut' | 'matched' | 'expected'>,
  differences: Difference[],
): ReplaySummary {
  return {
    role,
    requesterQpn: conv.requesterQpn,
    responderQpn: conv.responderQpn,
    requesterIp: conv.requesterIp,
    responderIp: conv.responderIp,
    pathMtu: counts.pathMtu,
    framesIn: counts.framesIn,
    framesOut: counts.framesOut,
    matched: counts.matched,
    expected: counts.expected,
    differences,
    violations: differences.filter((d) => d.class === DiffClass.VIOLATION).length,
  };
}
