/**
 * Loss-recovery episodes counted by trigger (base/recovery-trigger.ts: NAK, RNR NAK, local ACK
 * timeout, implied NAK) from the three places a user reads them, which must say the same:
 *  - the engine's own count (`QueuePair.episodes`: a rewind, counted when its first resend goes
 *    out), summed over the run's QPs (`WorkloadResult.episodes`);
 *  - what `roce demo` reports: its summary's `episodes` and the table's episode columns;
 *  - `roce analyze`'s episodes (`episodesByTrigger`).
 * The engine's go-back-N rewinds by cause (trace `retransmit` events) are kept beside them: a
 * rewind that another overtakes before it sends anything is no episode, so they tell how a
 * mismatch came about.
 */
import { Trigger } from '../../analysis/types';
import type { WorkloadResult } from '../sim/workload';
import { newRecoveryCounts, type RecoveryCounts } from '../../base/recovery-trigger';
import type { TraceCounts } from './trace-tally';

export const EPISODE_TRIGGERS: readonly Trigger[] = Object.values(Trigger);
export type EpisodeCounts = RecoveryCounts;

export const EPISODE_SOURCES = ['counters', 'demo', 'analyze'] as const;
export type EpisodeSource = (typeof EPISODE_SOURCES)[number];

export interface EpisodeTally {
  counters: EpisodeCounts;
  demo: EpisodeCounts;
  analyze: EpisodeCounts;
  /** The engine's go-back-N rewinds by cause (not compared: the key to reading a mismatch). */
  rewinds: EpisodeCounts;
}

/** The engine's episodes: what its QPs counted. */
export function counterEpisodes(w: WorkloadResult): EpisodeCounts {
  const c = newRecoveryCounts();
  for (const q of w.perQp) for (const k of EPISODE_TRIGGERS) c[k] += q.episodes[k];
  return c;
}

/** What `roce demo` prints and writes as `episodes` (cli/demo-command.ts). */
export function demoEpisodes(w: WorkloadResult): EpisodeCounts {
  return { ...w.episodes };
}

export function rewindEpisodes(trace: TraceCounts): EpisodeCounts {
  return { ...trace.rewinds };
}

export function episodeTally(w: WorkloadResult, trace: TraceCounts, analyze: EpisodeCounts): EpisodeTally {
  return { counters: counterEpisodes(w), demo: demoEpisodes(w), analyze: { ...analyze }, rewinds: rewindEpisodes(trace) };
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
