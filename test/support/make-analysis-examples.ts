/**
 * The example pictures of docs/images/, made from the project's own
 * captures: captures/rc-conversation.pcap, and a simulated run with 2 % loss
 * each way captured at the requester's host. Deterministic: the same code
 * gives the same bytes. test/render/examples-current.test.ts checks the
 * committed files; regenerate them with
 *
 *   UPDATE_EXAMPLES=1 npx jest test/render/examples-current
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { LinkType, PcapWriter } from '../../packets/pcap';
import { DEFAULT_EPOCH_NS } from '../../nic-driver/pcap-tap';
import { analyzeCapture } from '../../analysis/analyzer';
import { buildTimeline } from '../../analysis/timeline';
import { buildPsnSeries } from '../../analysis/psn-series';
import { ladderSvg } from '../../analysis/render/ladder-svg';
import { plotSvg } from '../../analysis/render/plot-svg';
import { chartSvg } from '../../analysis/render/chart-svg';
import { runStarScenario } from '../../apps/sim/star-scenario';
import { Mtu } from '../../stack/mtu';
import { starPanels } from '../../apps/sim/star-chart';
import { DCQCN_PAPER_PARAMS } from '../../stack/congestion/parameters';
import { ulpFrameNotes } from '../../capture-engine/ulp-frame-notes';
import { defaultRuleSet } from '../../ulp/protocols';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');

/** A seeded run with 2 % loss each way, as captured on the requester's host (its sends as sent, its receptions as delivered). */
export function lossyRunCapture(): Uint8Array {
  const w = new PcapWriter({ linkType: LinkType.Ethernet, nanosecond: true });
  const ts = (t: number): bigint => DEFAULT_EPOCH_NS + BigInt(Math.round(t));
  const sim = createSimPair({
    seed: 1,
    faults: { aToB: { drop: 0.02 }, bToA: { drop: 0.02 } },
    tap: { where: 'sent', record: (f, t, dir) => (dir === 'a->b' ? w.add(f, ts(t)) : undefined), close: () => undefined },
  });
  const end = sim.link.a;
  const orig = end.receive.bind(end);
  end.receive = (frames: readonly Uint8Array[]) => {
    for (const f of frames) w.add(f, ts(sim.clock.now()));
    orig(frames);
  };
  runWorkload(sim, { seed: 1, bytes: 256 * 1024, qps: 2 });
  return w.toBytes();
}

/** File name (in docs/images) → contents. */
export function makeAnalysisExamples(): Map<string, string> {
  const out = new Map<string, string>();
  const rc = path.join(CAPTURES, 'rc-conversation.pcap');
  out.set(
    'ladder-rc-conversation.svg',
    ladderSvg(
      buildTimeline(rc, { firstFrame: 26, lastFrame: 44 }),
      'captures/rc-conversation.pcap: atomics, FLUSH, RNR wait, a loss and its NAK, an access error',
    ),
  );
  out.set('plot-rc-conversation.svg', plotSvg(buildPsnSeries(rc).series, 'PSN over time: captures/rc-conversation.pcap'));
  // docs/decode.md: one NVMe-oF Read and one NFS READ on the wire, labelled as roce ladder labels them.
  const nvme = path.join(CAPTURES, 'nvme-rdma.pcap');
  out.set(
    'ladder-nvme-read.svg',
    ladderSvg(
      buildTimeline(nvme, { firstFrame: 51, lastFrame: 59, frameNotes: ulpFrameNotes(nvme, defaultRuleSet(), 4791).notes }),
      'captures/nvme-rdma.pcap: an NVMe Read of 4 KiB (roce ladder --frames 51-59)',
    ),
  );
  const rpc = path.join(CAPTURES, 'rpc-rdma.pcap');
  out.set(
    'ladder-nfs-read.svg',
    ladderSvg(
      buildTimeline(rpc, { firstFrame: 8, lastFrame: 14, frameNotes: ulpFrameNotes(rpc, defaultRuleSet(), 4791).notes }),
      'captures/rpc-rdma.pcap: an NFSv4.1 READ of 2 KiB into a write chunk (roce ladder --frames 8-14)',
    ),
  );
  const lossy = lossyRunCapture();
  const r = analyzeCapture(lossy);
  // The shortest NAK recovery whose lost packet was a first transmission: small enough to read.
  const eps = r.episodes.filter((e) => e.trigger === 'nak' && e.lostFrame !== null && e.gapFrame !== null && e.recoveredFrame !== null);
  const ep = eps.sort((x, y) => x.resentPackets - y.resentPackets || x.id - y.id)[0];
  if (ep === undefined) throw new Error('the lossy example run has no NAK episode to draw');
  // roce ladder --episode N --max 30: drawn from just before the episode.
  out.set(
    'ladder-loss-nak.svg',
    ladderSvg(
      buildTimeline(lossy, { focus: { episode: ep.id }, maxFrames: 30 }),
      `simulated run, 2% loss, requester's host: go-back-N after a NAK (roce ladder --episode ${ep.id} --max 30)`,
    ),
  );
  out.set('plot-loss.svg', plotSvg(buildPsnSeries(lossy).series, "PSN over time: simulated run, 2% loss each way, requester's host"));
  // docs/congestion.md: roce sim --flows a>c,b>c --cc dcqcn-paper --duration 20ms (10 Gb/s, 1 MB buffer, RED 5K/200K/1 %, seed 1).
  const sim = runStarScenario({
    hosts: 3,
    flows: [
      { src: 0, dst: 2 },
      { src: 1, dst: 2 },
    ],
    linkRateBps: 10e9,
    bufferBytes: 1e6,
    propagationNs: 1000,
    ecn: { kind: 'red', kminBytes: 5000, kmaxBytes: 200_000, pmax: 0.01 },
    pfc: null,
    cc: 'dcqcn',
    ccParams: DCQCN_PAPER_PARAMS,
    durationNs: 20e6,
    seed: 1,
  });
  out.set('sim-dcqcn-paper.svg', chartSvg(starPanels(sim), 'roce sim --flows a>c,b>c --cc dcqcn-paper --duration 20ms'));
  // docs/congestion.md, incast 8 -> 1 side by side: roce sim --hosts 9 --link-rate 40G --buffer 1M --mtu 1024 --duration 20ms, --cc none and --cc dcqcn-paper.
  for (const [name, cc] of [
    ['none', 'none'],
    ['dcqcn', 'dcqcn-paper'],
  ] as const) {
    const incast = runStarScenario({
      hosts: 9,
      flows: Array.from({ length: 8 }, (_, i) => ({ src: i, dst: 8 })),
      linkRateBps: 40e9,
      bufferBytes: 1e6,
      ecn: { kind: 'red', kminBytes: 5000, kmaxBytes: 200_000, pmax: 0.01 },
      pfc: null,
      cc: cc === 'none' ? 'none' : 'dcqcn',
      ...(cc === 'none' ? {} : { ccParams: DCQCN_PAPER_PARAMS }),
      durationNs: 20e6,
      pathMtu: Mtu.MTU_1024,
      seed: 1,
    });
    out.set(`sim-incast-${name}.svg`, chartSvg(starPanels(incast), `roce sim --hosts 9 --link-rate 40G --buffer 1M --mtu 1024 --cc ${cc} --duration 20ms`));
  }
  return out;
}

export function writeAnalysisExamples(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, text] of makeAnalysisExamples()) fs.writeFileSync(path.join(dir, name), text);
}
