/**
 * Loss-recovery episodes the engine and `roce analyze` once named differently on the engine's own
 * captures at the requester's NIC (docs/conformance.md, "Rulings"): a sequence NAK for the PSN an
 * implied NAK already sent the requester back to, before anything is resent, while the atomic's
 * response arrives after all (one episode, the implied NAK's: the requester starts no second retry
 * for that NAK); and an RNR NAK past an atomic still waiting,
 * which the requester takes as an implied NAK and does not wait on, so its resend long after the
 * RNR timer is its timeout's; and a NAK for a PSN already acknowledged, which names nothing. Both the
 * episode named and the counts must agree.
 *
 * @group unit
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { Trigger, type Episode } from '../../analysis/types';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { counterEpisodes } from '../../apps/sweep/episode-sources';
import { SIM_IP_A } from '../../apps/sim/sim-pair';

function judged(line: string): { engine: Record<Trigger, number>; analyzed: Record<Trigger, number>; episodes: Episode[] } {
  const run = runCase(parseCase(line));
  const r = analyzeCapture(run.capture, { capturePoint: `host:${SIM_IP_A}`, keep: { episodes: true } });
  return { engine: counterEpisodes(run.workload), analyzed: { ...r.episodesByTrigger }, episodes: r.episodes };
}

test('a sequence NAK for the PSN an implied NAK went back to, before the resend: one implied-NAK episode, though the atomic response came after all', () => {
  // At A: NAK 1712684 (passes the compare-swap at 1712683: implied NAK), NAK 1712683 (the retry
  // point already: no second retry), then the compare-swap's ACK; the resend starts at 1712684.
  const { engine, analyzed, episodes } = judged('seed=246683 loss=0.5% burst=off reorder=5%/1 dup=0% mtu=512 qps=3 mix=mix bytes=64K at=host-a');
  expect(analyzed).toEqual(engine);
  const ep = episodes.find((e) => e.gapPsn === 1712684);
  expect(ep?.trigger).toBe(Trigger.IMPLIED_NAK);
});

test('a NAK for a PSN already acknowledged is stale: it names no episode, even after an implied NAK', () => {
  // At A, a duplicated NAK for 135832 arrives after READ responses 135832..135833; the resend from
  // 135839 answers the gap in the READ responses (an implied NAK).
  const { engine, analyzed, episodes } = judged('seed=634431 loss=2% burst=off reorder=5%/4 dup=5% mtu=256 qps=1 mix=read bytes=16K at=host-a');
  expect(analyzed).toEqual(engine);
  expect(episodes.find((e) => e.gapPsn === 135839)?.trigger).toBe(Trigger.IMPLIED_NAK);
});

test.each([
  ['seed=659570 loss=10% burst=off reorder=off dup=0% mtu=4096 qps=8 mix=mix bytes=64K at=host-a'],
  ['seed=342083 loss=10% burst=off reorder=off dup=0% mtu=1024 qps=6 mix=mix bytes=32K at=host-a'],
])('an RNR NAK past a waiting atomic is no RNR wait: the late resend is a timeout (%s)', (line) => {
  const { engine, analyzed, episodes } = judged(line);
  expect(analyzed).toEqual(engine);
  // Every RNR episode the analyzer names resends when the RNR timer runs out, not a timeout later.
  for (const e of episodes.filter((x) => x.trigger === Trigger.RNR)) expect(e.retransmitDelayNs ?? 0).toBeLessThan(1_000_000);
});
