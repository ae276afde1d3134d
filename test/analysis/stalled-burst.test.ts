/**
 * A go-back-N burst that stalls (a full send ring, a starved process) and then goes on at its next
 * PSN while earlier PSNs are still unacknowledged is the same burst, not a timeout: a requester whose
 * timer ran out resends from its first unacknowledged PSN (rxe_req.c req_retry()). Seen in the rxe
 * lab's 2 % loss run at the stack's own NIC: 32 resent packets, 1.4 ms of nothing, the rest of the
 * burst; the analyzer had called the rest a timeout episode that skipped PSNs
 * (retransmitFromFirstUnacked) and counted the skipped PSNs as capture gaps.
 *
 * The engine's own capture at its NIC, with every frame from the middle of a burst on delayed by
 * far more than a round trip, must be judged as the capture undelayed: the same episodes, no
 * violation, no capture gap.
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { Trigger } from '../../analysis/types';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { SIM_IP_A } from '../../apps/sim/sim-pair';
import { readCapture, writePcap } from '../../packets/pcap';

const AT_A = { capturePoint: `host:${SIM_IP_A}`, keep: { episodes: true, violations: true } } as const;

/** The capture with every frame from record `from` on `delayNs` later. */
function stalledAt(capture: Uint8Array, from: number, delayNs: bigint): Uint8Array {
  const { records } = readCapture(capture);
  return writePcap(
    records.map((r, i) => ({ data: r.data, timestampNs: i >= from ? r.timestampNs + delayNs : r.timestampNs })),
    { nanosecond: true },
  );
}

test('a NAK episode whose burst stalls for 20 ms in its middle stays one episode, with no violation or capture gap', () => {
  const run = runCase(parseCase('seed=4 loss=1% burst=off reorder=off dup=0% mtu=256 qps=1 mix=mix bytes=64K at=host-a'));
  const base = analyzeCapture(run.capture, AT_A);
  expect(base.violations).toEqual([]);
  // A burst of at least 8 resent packets, cut after its fourth.
  const ep = base.episodes.find((e) => e.trigger === Trigger.NAK && e.resentPackets >= 8);
  expect(ep).toBeDefined();
  const first = ep!.firstRetransmitFrame;
  const stalled = stalledAt(run.capture, first - 1 + 4, 20_000_000n);
  const r = analyzeCapture(stalled, AT_A);
  expect({ violations: r.violations, captureGaps: r.captureGaps }).toEqual({ violations: [], captureGaps: base.captureGaps });
  expect(r.episodesByTrigger).toEqual(base.episodesByTrigger);
  const same = r.episodes.find((e) => e.firstRetransmitFrame === first);
  expect({ trigger: same?.trigger, resent: same?.resentPackets }).toEqual({ trigger: Trigger.NAK, resent: ep!.resentPackets });
});
