/**
 * `roce analyze`'s congestion report on a capture of the simulated switch with DCQCN:
 * per requester, the CE marks, the CNPs, the CE-to-CNP delay, the CNP interval and the rate
 * around each CNP, checked against what the simulation counted; nothing for a capture without
 * marks.
 */
import { PcapWriter } from '../../packets/pcap';
import { analyzeCapture } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { RATE_WINDOW_NS } from '../../analysis/congestion-track';
import { runStarScenario } from '../../apps/sim/star-scenario';
import { DCQCN_PAPER_PARAMS } from '../../stack/congestion/parameters';

function simCapture(cc: 'dcqcn' | 'none'): { file: Uint8Array; ecnMarked: number; cnpsSent: number } {
  const w = new PcapWriter();
  const r = runStarScenario({
    hosts: 3,
    flows: [
      { src: 0, dst: 2 },
      { src: 1, dst: 2 },
    ],
    linkRateBps: 10e9,
    bufferBytes: 1 << 20,
    ecn: { kind: 'red', kminBytes: 5_000, kmaxBytes: 200_000, pmax: 0.01 },
    pfc: null,
    cc,
    ccParams: DCQCN_PAPER_PARAMS,
    durationNs: 6e6,
    seed: 3,
    capture: (f, t) => w.add(f, BigInt(Math.round(t)) + 1_700_000_000_000_000_000n),
  });
  return { file: w.toBytes(), ecnMarked: r.ecnMarked, cnpsSent: r.cnpsSent };
}

test('DCQCN on the simulated switch: marks, CNPs, delays and rates per requester, as the simulation counted them', () => {
  const { file, ecnMarked, cnpsSent } = simCapture('dcqcn');
  const doc = analysisDocument(analyzeCapture(file), 'sim.pcap');
  const reports = doc.conversations.flatMap((c) => c.congestion.map((g) => ({ c, g })));
  expect(reports).toHaveLength(2); // each sender, none for the receiver
  for (const { c, g } of reports) expect(c[g.requester].ip).not.toBe('198.18.0.3');
  // The capture is the switch's egress: every mark, and every CNP that left the switch.
  expect(reports.reduce((a, { g }) => a + g.ceMarked, 0)).toBe(ecnMarked);
  const cnps = reports.reduce((a, { g }) => a + g.cnps, 0);
  expect(cnps).toBeLessThanOrEqual(cnpsSent);
  expect(cnps).toBeGreaterThanOrEqual(cnpsSent - 2);
  for (const { g } of reports) {
    expect(g.ceToCnp?.count).toBeGreaterThan(0);
    expect(g.ceToCnp?.minUs).toBeGreaterThan(0);
    // The paper's NP sends at most one CNP per 50 µs per flow.
    expect(g.cnpInterval?.minUs).toBeGreaterThanOrEqual(50);
    expect(g.samples.length).toBe(Math.min(g.cnps, 256));
    for (let i = 1; i < g.samples.length; i++) expect(g.samples[i]!.timeUs).toBeGreaterThan(g.samples[i - 1]!.timeUs);
    const lastUs = doc.durationNs / 1000;
    for (const s of g.samples) {
      if (s.timeUs * 1000 + RATE_WINDOW_NS <= lastUs * 1000) expect(s.gbpsAfter).not.toBeNull();
      for (const x of [s.gbpsBefore, s.gbpsAfter]) if (x !== null) expect(x).toBeLessThanOrEqual(10);
    }
  }
});

test('no congestion control: no mark (the frames are Not-ECT), no CNP, no report', () => {
  const { file, ecnMarked } = simCapture('none');
  expect(ecnMarked).toBe(0);
  const doc = analysisDocument(analyzeCapture(file), 'sim.pcap');
  expect(doc.conversations.every((c) => c.congestion.length === 0)).toBe(true);
});
