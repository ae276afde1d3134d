/**
 * Loss recovery, defined once for the engine, `roce demo` and `roce analyze`.
 *
 * An **episode** is one go-back-N rewind of an RC requester: it goes back to a PSN it has sent
 * before and sends again from there (IBTA vol. 1 §9.7.5.2: a requester retries from the first
 * unacknowledged PSN, mid-message for SEND and WRITE, with a new RDMA READ request for the rest of a
 * READ). Its **trigger** is what the requester acted on:
 *
 * - `nak`: a PSN sequence error NAK; the resend starts at the NAK's PSN (IBTA §9.7.5.2.2).
 * - `rnr`: an RNR NAK; the resend starts at its PSN once its timer has run out (IBTA §9.7.5.2.8).
 * - `impliedNak`: a response whose PSN passes a READ or atomic still waiting for its response, or a
 *   READ response that skips PSNs: the READ or atomic response was lost, and the requester resends
 *   from it (rxe_comp.c check_psn() returns COMPST_ERROR_RETRY before the response's own syndrome is
 *   looked at; mlx5 counts these as implied_nak_seq_err). A NAK or RNR NAK that passes such a READ
 *   or atomic is an implied NAK, not a NAK or RNR episode.
 * - `timeout`: the local ACK timer ran out with requests unacknowledged (IBTA §9.7.6.1.3).
 *
 * A NAK the requester does not act on (a second one for the same PSN while it waits out an RNR
 * NAK, one that arrives while it already resends) starts no episode. The engine counts episodes
 * when it rewinds (stack/completer.ts `rewind`); the analyzer counts them from the capture when a
 * request goes back to a PSN already sent and is not the next PSN of the burst in progress
 * (analysis/episodes.ts); `roce demo` prints the engine's.
 */
export const RecoveryTrigger = { NAK: 'nak', RNR: 'rnr', TIMEOUT: 'timeout', IMPLIED_NAK: 'impliedNak' } as const;
export type RecoveryTrigger = (typeof RecoveryTrigger)[keyof typeof RecoveryTrigger];

/** How reports name each trigger. */
export const RECOVERY_TRIGGER_WORDS: Readonly<Record<RecoveryTrigger, string>> = { nak: 'NAK', rnr: 'RNR NAK', timeout: 'timeout', impliedNak: 'implied NAK' };

/** Episodes by trigger. */
export type RecoveryCounts = Record<RecoveryTrigger, number>;

export function newRecoveryCounts(): RecoveryCounts {
  return { nak: 0, rnr: 0, timeout: 0, impliedNak: 0 };
}

export function addRecoveryCounts(into: RecoveryCounts, from: RecoveryCounts): RecoveryCounts {
  into.nak += from.nak;
  into.rnr += from.rnr;
  into.timeout += from.timeout;
  into.impliedNak += from.impliedNak;
  return into;
}

/** "60 loss-recovery episode(s) (19 NAK, 33 RNR, 0 timeout, 8 implied NAK)": the words every report uses. */
export function recoveryText(c: RecoveryCounts): string {
  const total = c.nak + c.rnr + c.timeout + c.impliedNak;
  return `${total} loss-recovery episode(s) (${c.nak} NAK, ${c.rnr} RNR, ${c.timeout} timeout, ${c.impliedNak} implied NAK)`;
}
