/**
 * The engine and `roce analyze` judge the same run alike: a capture of the main job's workload taken
 * where `roce demo` takes it (A's NIC: A's frames as sent, B's as A received them) shows no rule
 * violation, and its loss-recovery episodes, by trigger, are the ones the engine counted as it
 * rewound (base/recovery-trigger.ts defines both). Heavy loss makes the cases the rulings in
 * docs/conformance.md cover: NAKs and RNR NAKs past an unanswered READ or atomic (implied NAKs),
 * a responder's second sequence NAK after a resend of the PSN crossed the first, go-back-N bursts
 * through READs whose span the capture cannot know yet.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload, OpKind } from '../../apps/sim/workload';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { analyzeCapture, type AnalysisResult } from '../../analysis/analyzer';
import { newRecoveryCounts, type RecoveryCounts } from '../../base/recovery-trigger';

function episodesOf(r: AnalysisResult): RecoveryCounts {
  const c = newRecoveryCounts();
  for (const e of r.episodes) c[e.trigger]++;
  return c;
}

interface Case {
  seed: number;
  loss: number;
  ops?: readonly OpKind[];
  initialRecvs?: number;
}

const CASES: Case[] = [];
for (const seed of [1, 2, 3, 4, 5, 6]) for (const loss of [0, 0.01, 0.05, 0.1]) CASES.push({ seed, loss });
// READ- and atomic-heavy runs: most implied NAKs; SEND with one receive posted: most RNR NAKs.
for (const seed of [7, 8, 9]) {
  CASES.push({ seed, loss: 0.08, ops: [OpKind.READ, OpKind.CMP_AND_SWP, OpKind.FETCH_AND_ADD, OpKind.WRITE] });
  CASES.push({ seed, loss: 0.05, ops: [OpKind.SEND, OpKind.SEND_WITH_IMM], initialRecvs: 1 });
}

describe.each(CASES)('seed $seed, loss $loss, ops $ops, receives $initialRecvs', (c) => {
  const tap = new PcapTap({ where: 'host-a' });
  const f = { drop: c.loss };
  const sim = createSimPair({ seed: c.seed, faults: { aToB: f, bToA: f }, tap });
  const w = runWorkload(sim, {
    seed: c.seed,
    qps: 3,
    bytes: 192 * 1024,
    ...(c.ops ? { ops: c.ops } : {}),
    ...(c.initialRecvs ? { initialRecvs: c.initialRecvs } : {}),
  });
  const r = analyzeCapture(tap.bytes());

  test('the run completed and the analyzer finds no rule violation', () => {
    expect(w.ok).toBe(true);
    expect(r.violations.map((v) => `${v.rule} frames ${v.frames.join(',')}: ${v.message}`)).toEqual([]);
  });

  test('episodes by trigger equal the engine’s rewinds by cause', () => {
    expect(episodesOf(r)).toEqual(w.episodes);
    if (c.loss > 0) expect(r.episodes.length).toBeGreaterThan(0);
  });
});
