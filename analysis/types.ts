/**
 * The records `roce analyze` produces: messages, loss-recovery episodes, rule
 * violations and per-frame results. Field names are the JSON keys documented
 * in docs/analysis.md; times are nanoseconds since the first frame.
 */
import type { FlagName } from './flags';

/** Which endpoint of a conversation plays the requester in a flow. */
export type Side = 'a' | 'b';

/** The kind of a rebuilt message. */
export const MessageOp = { SEND: 'SEND', WRITE: 'WRITE', READ: 'READ', ATOMIC: 'ATOMIC', FLUSH: 'FLUSH', ATOMIC_WRITE: 'ATOMIC_WRITE' } as const;
export type MessageOp = (typeof MessageOp)[keyof typeof MessageOp];

/** A message rebuilt from its packets: operation, size, PSN range and when it was sent and acknowledged. */
export interface Message {
  conversation: number;
  /** The requester's side of the conversation. */
  requester: Side;
  op: MessageOp;
  /** Opcode name of the first packet, e.g. RC_SEND_FIRST. */
  opcode: string;
  /** Payload bytes (SEND, WRITE) or the RETH DMA length (READ); 8 for atomics. */
  size: number;
  firstPsn: number;
  /** Last PSN of the message; for a READ the last response PSN (null until known). */
  lastPsn: number | null;
  /** Request packets of the first transmission. */
  packets: number;
  immediate: boolean;
  firstFrame: number;
  lastFrame: number;
  startNs: number;
  /** Time of the acknowledgement or last response that completed it (UC/UD: the last packet). */
  completeNs: number | null;
  /** completeNs - startNs. */
  completionNs: number | null;
  /** READ and atomic: from the request to the first response (null otherwise or when unseen). */
  responseLatencyNs: number | null;
  /** 'ok', 'error' (answered by a NAK other than a sequence error) or 'incomplete' (no completion in the capture). */
  status: 'ok' | 'error' | 'incomplete';
  /** The NAK that ended it in error, e.g. "nakRemAccess". */
  error: string | null;
}

/** What started a loss-recovery episode: one definition for the engine, the demo and the analyzer (base/recovery-trigger.ts). */
export { RecoveryTrigger as Trigger } from '../base/recovery-trigger';
import type { RecoveryTrigger } from '../base/recovery-trigger';
type Trigger = RecoveryTrigger;

/** A loss-recovery episode: what triggered it (NAK, RNR NAK or timeout), what go-back-N resent, and how long recovery took. */
export interface Episode {
  id: number;
  conversation: number;
  requester: Side;
  /** The responder's QPN (BTH DestQP of the requests). */
  qpn: number;
  trigger: Trigger;
  /** First PSN resent: the NAK'd PSN, the RNR'd PSN, or the first unacknowledged PSN after a timeout. */
  gapPsn: number;
  /** Last transmission of gapPsn before the episode (null when the capture never showed it: lost before the capture point). */
  lostFrame: number | null;
  /** The request that first showed the gap to the responder (the first one after lostFrame with a later PSN), or null. */
  gapFrame: number | null;
  /** The NAK or RNR NAK (null for a timeout). The implied-NAK response for impliedNak. */
  triggerFrame: number | null;
  /** NAK time - gapFrame time: how long the responder took to report the gap (nak only). */
  nakGenerationNs: number | null;
  firstRetransmitFrame: number;
  /** First retransmission - trigger frame (nak, rnr, impliedNak) or - lostFrame (timeout). */
  retransmitDelayNs: number | null;
  /** RNR only: the wait the RNR NAK asked for (IBTA table 45). */
  rnrTimerNs: number | null;
  /** Highest PSN the requester had sent when recovery began: go-back-N resends gapPsn..highestSentPsn. */
  highestSentPsn: number;
  /** Requests resent in this episode and the PSN range they covered. */
  resentPackets: number;
  resentFirstPsn: number;
  resentLastPsn: number;
  /** The response that acknowledged highestSentPsn, ending recovery (null when not in the capture). */
  recoveredFrame: number | null;
  /** recovered time - (gapFrame ?? lostFrame ?? trigger) time. */
  recoveryNs: number | null;
  /** Set when a later episode began before this one recovered. */
  supersededBy: number | null;
}

/** The go-back-N rules the analysis checks each conversation against (docs/analysis.md, "Go-back-N rule checks"). */
export const RuleId = {
  ONE_NAK_PER_GAP: 'oneNakPerGap',
  RETRANSMIT_FROM_NAK_PSN: 'retransmitFromNakPsn',
  RETRANSMIT_FROM_FIRST_UNACKED: 'retransmitFromFirstUnacked',
  NO_SKIP_ON_RETRANSMIT: 'noSkipOnRetransmit',
  NAK_PSN_NOT_ACKED: 'nakPsnNotAcked',
  RESPONSE_FOR_SENT_PSN: 'responseForSentPsn',
  RNR_WAIT_RESPECTED: 'rnrWaitRespected',
} as const;
export type RuleId = (typeof RuleId)[keyof typeof RuleId];

/** A broken rule: which, where (conversation, side, PSN) and the frames that show it. */
export interface Violation {
  rule: RuleId;
  conversation: number;
  requester: Side;
  /** The frames that show it, in capture order. */
  frames: number[];
  psn: number;
  message: string;
}

/**
 * Request PSNs that the capture does not hold although the responses show the responder got them
 * (capture loss, not wire loss): like Wireshark's "previous segment not captured" and "ACKed unseen
 * segment" for TCP. Frames around a gap are excluded from the rule checks.
 */
export interface CaptureGap {
  conversation: number;
  requester: Side;
  firstPsn: number;
  lastPsn: number;
  /** The captured frame that shows the gap: the request after it (notCaptured) or the response covering it (ackedUnseen). */
  frame: number;
  how: 'notCaptured' | 'ackedUnseen';
}

/** What the analyzer says about one RoCE frame. */
export interface FrameResult {
  frame: number;
  timeNs: number;
  /** Conversation id, or null (CNP to an unknown QP, malformed frame). */
  conversation: number | null;
  /** Side of the conversation that sent the frame. */
  from: Side | null;
  opcode: string;
  psn: number;
  flags: FlagName[];
}
