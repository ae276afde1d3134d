/**
 * An episode is handed on (AnalyzerOptions.onEpisode, and so `roce analyze --follow`) once it is
 * final: recovered and its resend burst over. A go-back-N burst can go on after the ACK that
 * recovers it; those resends belong to the episode.
 */
import { Analyzer } from '../../analysis/analyzer';
import { iterateCapture } from '../../packets/pcap';
import type { Episode } from '../../analysis/types';
import { burstPastRecovery, capture } from './frames';

test('a burst that goes on after the recovery: the episode is handed on when the burst ends, with every packet resent', () => {
  const handed: { atFrame: number; text: string }[] = [];
  let pushed = 0;
  const a = new Analyzer({ onEpisode: (e: Episode) => handed.push({ atFrame: pushed, text: JSON.stringify(e) }) });
  const it = iterateCapture(capture(burstPastRecovery()));
  for (let step = it.next(); step.done !== true; step = it.next()) {
    pushed++;
    a.push(step.value);
  }
  const r = a.finish();
  expect(r.episodes).toHaveLength(1);
  const ep = r.episodes[0]!;
  expect(ep).toMatchObject({ trigger: 'timeout', firstRetransmitFrame: 6, recoveredFrame: 7, resentPackets: 5, resentFirstPsn: 100, resentLastPsn: 104 });
  // Handed on once, at frame 12 (the new request that ends the burst), as the report has it.
  expect(handed).toEqual([{ atFrame: 12, text: JSON.stringify(ep) }]);
});

test('a burst still going at the end of the capture: handed on at the end', () => {
  const steps = burstPastRecovery().slice(0, 10);
  const handed: string[] = [];
  const a = new Analyzer({ onEpisode: (e: Episode) => handed.push(JSON.stringify(e)) });
  const it = iterateCapture(capture(steps));
  for (let step = it.next(); step.done !== true; step = it.next()) a.push(step.value);
  expect(handed).toEqual([]);
  const r = a.finish();
  expect(r.episodes[0]).toMatchObject({ recoveredFrame: 7, resentPackets: 4 });
  expect(handed).toEqual([JSON.stringify(r.episodes[0])]);
});
