/**
 * Whether the stack can play a side of a captured RC conversation at all. QP0 and QP1 are the
 * special QPs (SMI, GSI: IBTA vol. 1 §3.5.4, §14.2.5) and both are UD: RC traffic addressed to
 * them is a corrupted capture (a bit flip in the BTH's DestQP) or not RC, and the stack cannot
 * create an RC QP with such a number. Such a conversation is reported as not replayable, with
 * the reason, never as the stack's failure. So is one whose replay would cost more than the
 * limits of replay-budget.ts (a capture that lost too much, or READs of gigabytes).
 */
import type { RcConversation } from './conversation';
import { replayCostProblem } from './replay-budget';

export interface NotReplayable {
  requesterQpn: number;
  responderQpn: number;
  requesterIp: string;
  responderIp: string;
  frames: number;
  reason: string;
}

const special = (qpn: number): string => (qpn === 0 ? 'QP0, the SMI' : 'QP1, the GSI');

/** Why `conv` cannot be replayed, or null. A requester QPN of 0 means "not seen" (no response captured). */
export function notReplayableReason(conv: RcConversation): string | null {
  if (conv.responderQpn < 2) return `RC requests addressed to ${special(conv.responderQpn)} (a special UD QP): a corrupted capture, or not RC`;
  if (conv.requesterQpn === 1) return `RC responses addressed to ${special(1)} (a special UD QP): a corrupted capture, or not RC`;
  return replayCostProblem(conv);
}

/** Splits conversations into those the stack can replay and those it cannot (with the reason). */
export function splitReplayable(convs: readonly RcConversation[]): { replayable: RcConversation[]; notReplayable: NotReplayable[] } {
  const replayable: RcConversation[] = [];
  const notReplayable: NotReplayable[] = [];
  for (const c of convs) {
    const reason = notReplayableReason(c);
    if (reason === null) replayable.push(c);
    else
      notReplayable.push({
        requesterQpn: c.requesterQpn,
        responderQpn: c.responderQpn,
        requesterIp: c.requesterIp,
        responderIp: c.responderIp,
        frames: c.requests.length + c.responses.length,
        reason,
      });
  }
  return { replayable, notReplayable };
}
