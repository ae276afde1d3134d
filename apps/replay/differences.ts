/**
 * What a replay reports: each way the stack's answer differs from what the
 * real peer sent, classified as a violation (the two cannot both be right),
 * a policy difference the IBTA allows, something the capture does not show
 * (unverifiable), or a feature this stack lacks (unsupported), with the
 * frames that show it; and, when the stack's QP went to the error state,
 * where and why.
 */
import type { DecodedFrame } from '../../packets/decode';
import type { RcConversation } from './conversation';

export const DiffClass = { VIOLATION: 'violation', POLICY: 'policy', UNVERIFIABLE: 'unverifiable', UNSUPPORTED: 'unsupported' } as const;
export type DiffClass = (typeof DiffClass)[keyof typeof DiffClass];

export interface Difference {
  class: DiffClass;
  /** Short stable name, e.g. `missingAck`, `nakKind`, `readSegmentation`, `ackCoalescing`. */
  kind: string;
  psn: number | null;
  /** For a run of PSNs reported once: the last PSN, and how many. */
  lastPsn?: number;
  count?: number;
  /** For answers of the stack's to a request the capture holds several copies of (the requester's resends): how many copies it answered. */
  copies?: number;
  /** Frame numbers in the capture that show the expected side. */
  frames: number[];
  expected: string;
  got: string;
  /** Why this class: the rule or the allowance. */
  rule: string;
  /** Class `unsupported`: the feature this stack lacks, as the report names it (`FLUSH`, `ATOMIC WRITE`...). */
  feature?: string;
}

/** Where and why the stack's QP went to the error state during a replay. */
export interface QpErrorReport {
  qpn: number;
  /** The captured frame the stack had last been given when it happened (a request fed, or an answer handed back), or null before the first. */
  frame: number | null;
  /** That frame's PSN. */
  psn: number | null;
  /** The first error completion's status (`REM_INV_REQ_ERR`...), or null when the QP had no work request to complete in error. */
  status: string | null;
  /** The work completion opcode that status came with (`RECV`, `SEND`, `RDMA_READ`...), or null. */
  opcode: string | null;
  /** What the engine gave as the reason. */
  reason: string;
  /** Whether the captured peer ended the same way: it sent the same NAK at that PSN (responder), or the capture holds the NAK the stack took (requester). */
  captured: boolean;
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
  /** Captured frames of either side that use a feature this stack lacks, or that replay could not judge because of one (the frames the `unsupported` differences count). */
  unsupported: number;
  /** The features those frames need, each once, in the order met. */
  unsupportedFeatures: string[];
  /** Set when the stack's QP went to the error state. */
  qpError: QpErrorReport | null;
}

/** The difference a frame the stack sent makes when it is not a well-formed RoCE frame. */
export function malformedOutput(d: DecodedFrame): Difference {
  return {
    class: DiffClass.VIOLATION,
    kind: 'malformedOutput',
    psn: null,
    frames: [],
    expected: 'a well-formed frame',
    got: d.roce ? (d.error?.message ?? '') : 'not RoCE',
    rule: 'the stack must emit valid frames',
  };
}

/** The summary of a replay of `conv` as `role`: its counts and differences. */
export function replaySummary(
  role: ReplaySummary['role'],
  conv: RcConversation,
  counts: Pick<ReplaySummary, 'pathMtu' | 'framesIn' | 'framesOut' | 'matched' | 'expected'>,
  differences: Difference[],
  qpError: QpErrorReport | null = null,
): ReplaySummary {
  const unsupported = differences.filter((d) => d.class === DiffClass.UNSUPPORTED);
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
    unsupported: unsupported.reduce((n, d) => n + (d.count ?? d.frames.length), 0),
    unsupportedFeatures: [...new Set(unsupported.map((d) => d.feature ?? d.kind))],
    qpError,
  };
}
