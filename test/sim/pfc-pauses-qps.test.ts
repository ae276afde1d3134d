/**
 * PFC pauses the sender's QPs, not only its wire: an 8-to-1 incast at 10 Gb/s around the star
 * switch, DCQCN with mlx5's defaults (paced at the line rate while unlimited, as `roce sim` runs
 * it), RED marking with the HPCC parameter set scaled to 10 Gb/s (Kmin 40 KB, Kmax 160 KB, Pmax
 * 0.2) and PFC at XOFF 64 KB, XON 32 KB. Watched every microsecond of virtual time:
 *   - a paused host's transmit queue stays within its ring (4 frames), not the hundreds of KB its
 *     QPs would have built meanwhile;
 *   - while a host is paused its QPs build no request packet and their byte counters do not
 *     advance (the pacer and the byte counter are charged as frames start on the wire);
 *   - after XON a QP sends at its rate: what leaves the host in the next 50 µs is the ring plus
 *     the QP's rate, not a backlog at line rate;
 *   - the same seed gives the same run.
 *
 * @group unit
 */
import { starHosts, type StarHosts } from '../support/star-hosts';
import { HOST_TX_RING_FRAMES } from '../../nic-driver/star-switch';
import type { CongestionConfig } from '../../stack/congestion/parameters';

const US = 1000;
const LINE_BPS = 10e9;
const SENDERS = 8;
/** The largest frame of a 4096-byte path MTU WRITE (Ethernet, IPv4, UDP, BTH, RETH, payload, ICRC). */
const MAX_FRAME = 14 + 20 + 8 + 12 + 16 + 4096 + 4;
const DCQCN: CongestionConfig = { np: true, rp: true, lineRateMbps: LINE_BPS / 1e6, paceUnlimited: true };

function incast(seed: number): StarHosts {
  return starHosts({
    hosts: SENDERS + 1,
    flows: Array.from({ length: SENDERS }, (_, i) => [i, SENDERS] as [number, number]),
    linkRateBps: LINE_BPS,
    ecn: { kind: 'red', kminBytes: 40_000, kmaxBytes: 160_000, pmax: 0.2 },
    pfc: { xoffBytes: 64_000, xonBytes: 32_000 },
    congestion: DCQCN,
    seed,
  });
}

/** One sender at one microsecond. */
interface Sample {
  paused: boolean;
  pausedNs: number;
  sentPkts: number;
  byteCount: number;
  bytesOut: number;
  rateMbps: number;
}

function watch(s: StarHosts, untilNs: number): Sample[][] {
  const samples: Sample[][] = Array.from({ length: SENDERS }, () => []);
  for (let t = US; t <= untilNs; t += US) {
    s.runUntil(t);
    for (let i = 0; i < SENDERS; i++) {
      const q = s.sw.hostQueues[i]!;
      const qp = s.qps[i]!;
      const rp = qp.cc?.rp ?? null;
      if (rp === null) throw new Error('the QP has no reaction point');
      samples[i]!.push({
        paused: q.paused,
        pausedNs: q.pausedNs,
        sentPkts: qp.counters.sent_pkts,
        byteCount: rp.byteCount,
        bytesOut: q.bytesOut,
        rateMbps: rp.currentRate,
      });
    }
  }
  return samples;
}

describe('PFC pauses the sender’s QPs (8-to-1 incast, 10 Gb/s, DCQCN, PFC 64K/32K)', () => {
  const s = incast(1);
  const samples = watch(s, 5000 * US);

  test('hosts are paused, and a paused host’s transmit queue stays within its ring', () => {
    expect(s.sw.stats.pfcPauses).toBeGreaterThan(10);
    expect(s.sw.stats.drops).toBe(0);
    for (let i = 0; i < SENDERS; i++) {
      const q = s.sw.hostQueues[i]!;
      expect(q.pausedNs).toBeGreaterThan(0);
      expect(q.maxQueuedFrames).toBeLessThanOrEqual(HOST_TX_RING_FRAMES);
      expect(q.maxQueuedBytes).toBeLessThanOrEqual(HOST_TX_RING_FRAMES * MAX_FRAME);
    }
  });

  test('while a host is paused its QP builds no request packet and its byte counter does not advance', () => {
    let pausedSteps = 0;
    const moved: string[] = [];
    samples.forEach((xs, i) => {
      for (let k = 1; k < xs.length; k++) {
        const a = xs[k - 1]!;
        const b = xs[k]!;
        // Paused at both ends with no resume between (pausedNs grows only at a resume).
        if (!(a.paused && b.paused && a.pausedNs === b.pausedNs)) continue;
        pausedSteps++;
        // A CNP's decrease may reset the byte counter; nothing may add to it.
        if (b.sentPkts !== a.sentPkts || b.bytesOut !== a.bytesOut || b.byteCount > a.byteCount)
          moved.push(`host ${i} at ${k + 1} µs: ${JSON.stringify([a, b])}`);
      }
    });
    expect(moved).toEqual([]);
    expect(pausedSteps).toBeGreaterThan(100); // over 100 µs of pauses were watched
  });

  test('after XON the QP sends at its rate: the ring and its rate, not a backlog at line rate', () => {
    const windowUs = 50;
    let slowResumes = 0;
    const over: string[] = [];
    for (const xs of samples) {
      for (let k = 1; k + windowUs < xs.length; k++) {
        if (!(xs[k - 1]!.paused && !xs[k]!.paused)) continue;
        const from = xs[k - 1]!;
        let maxRate = 0;
        for (let j = k - 1; j <= k + windowUs; j++) maxRate = Math.max(maxRate, xs[j]!.rateMbps);
        const out = xs[k + windowUs]!.bytesOut - from.bytesOut;
        // What may leave in the window: the ring, then the QP's rate (bytes/ns = Mb/s / 8000), and one frame in progress.
        const bound = HOST_TX_RING_FRAMES * MAX_FRAME + ((windowUs + 1) * US * maxRate) / 8000 + MAX_FRAME;
        if (out > bound) over.push(`resume at ${k} µs: ${out} bytes out in ${windowUs} µs, more than ${Math.round(bound)}`);
        if (maxRate < LINE_BPS / 1e6 / 3) slowResumes++;
      }
    }
    expect(over).toEqual([]);
    // Resumes of QPs well below line rate, where a backlog at line rate (62.5 KB in 50 µs) would show.
    expect(slowResumes).toBeGreaterThan(5);
  });

  test('deterministic: the same seed gives the same run', () => {
    const figures = (h: StarHosts): string => {
      h.runUntil(1000 * US);
      return JSON.stringify({
        sw: h.sw.stats.pfcPauses,
        marked: h.sw.stats.ecnMarked,
        queues: h.sw.hostQueues,
        sent: h.qps.map((q) => q.counters.sent_pkts),
        rates: h.qps.map((q) => q.cc?.rp?.currentRate),
      });
    };
    expect(figures(incast(3))).toBe(figures(incast(3)));
  });
});
