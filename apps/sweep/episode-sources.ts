/**
 * Loss-recovery episodes counted by trigger (NAK, RNR NAK, local ACK timeout, implied NAK) from
 * the three places a user reads them, which must say the same:
 *  - the engine's counters, named as rxe names them (stack/counters.ts), at the requesters:
 *    `rcvd_seq_err`, `rcvd_rnr_err`, `local_ack_timeout_err`, `implied_nak`;
 *  - what `roce demo` reports: its summary's `seqErrNaks`, `rnrNaks`, `timeouts`
 *    (apps/sim/demo-figures.ts) and, for implied NAKs, which the summary does not count, its
 *    trace lines "go-back-N from PSN n (implied-nak)";
 *  - `roce analyze`'s episodes (`episodesByTrigger`).
 * The engine's own go-back-N rewinds by cause (trace `retransmit` events) are kept beside them:
 * they tell which of the three counts what the engine did.
 */
import { Trigger } from '../../analysis/types';
import type { Counters } from '../../stack/counters';
import { demoRecoveryFigures } from '../sim/demo-figures';
import type { TraceCounts } from './trace-tally';

export const EPISODE_TRIGGERS: readonly Trigger[] = Object.values(Trigger);
export type EpisodeCounts = Record<Trigger, number>;

export const EPISODE_SOURCES = ['counters', 'demo', 'analyze'] as const;
export type EpisodeSource = (typeof EPISODE_SOURCES)[number];

export interface EpisodeTally {
  counters: EpisodeCounts;
  demo: EpisodeCounts;
  analyze: EpisodeCounts;
  /** The engine's go-back-N rewinds by cause (not compared: the key to reading a mismatch). */
  rewinds: EpisodeCounts;
}

export function counterEpisodes(totals: Counters): EpisodeCounts {
  return { nak: totals.rcvd_seq_err, rnr: totals.rcvd_rnr_err, timeout: totals.local_ack_timeout_err, impliedNak: totals.implied_nak };
}

export function demoEpisodes(totals: Counters, trace: TraceCounts): EpisodeCounts {
  const f = demoRecoveryFigures(totals);
  return { nak: f.seqErrNaks, rnr: f.rnrNaks, timeout: f.timeouts, impliedNak: trace.rewinds['implied-nak'] };
}

export function rewindEpisodes(trace: TraceCounts): EpisodeCounts {
  const r = trace.rewinds;
  return { nak: r.nak, rnr: r.rnr, timeout: r.timeout, impliedNak: r['implied-nak'] };
}

export function episodeTally(totals: Counters, trace: TraceCounts, analyze: EpisodeCounts): EpisodeTally {
  return { counters: counterEpisodes(totals), demo: demoEpisodes(totals, trace), analyze: { ...analyze }, rewinds: rewindEpisodes(trace) };
}

/** The triggers whose three counts are not all equal. */
export function episodeMismatches(t: EpisodeTally): Trigger[] {
  return EPISODE_TRIGGERS.filter((k) => !(t.counters[k] === t.demo[k] && t.demo[k] === t.analyze[k]));
}

/** `nak 3/5/4` (counters/demo/analyze) for each trigger that differs. */
export function describeMismatches(t: EpisodeTally): string {
  return episodeMismatches(t)
    .map((k) => `${k} ${t.counters[k]}/${t.demo[k]}/${t.analyze[k]} (rewinds ${t.rewinds[k]})`)
    .join(', ');
}
