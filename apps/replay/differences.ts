/**
 * What a replay reports: each way the stack's answer differs from what the
 * real peer sent, classified as a violation (the two cannot both be right)
 * or a policy difference the IBTA allows, with the frames that show it.
 */
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
