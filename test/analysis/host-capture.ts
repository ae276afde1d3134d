/**
 * Test support: captures of a simulated run as each host would take them
 * (tcpdump on the host): the frames the host sends, as sent (before the
 * link's faults), and the frames it receives, as delivered (after them).
 * Also the two wire views: every frame as sent, every frame as delivered.
 *
 * The link has one tap; this records the host's own transmissions through it
 * ('sent') and its receptions by wrapping each end's `receive`, so one run
 * gives all four captures with exact simulated times.
 */
import { PcapWriter, LinkType } from '../../packets/pcap';
import { DEFAULT_EPOCH_NS, type FrameTap } from '../../nic-driver/pcap-tap';
import type { Direction } from '../../nic-driver/faults';
import { createSimPair, type SimPair, type SimPairOptions } from '../../apps/sim/sim-pair';

export interface HostCaptures {
  sim: SimPair;
  /** Host A (198.18.0.1): what it sent and what it received. */
  hostA(): Uint8Array;
  hostB(): Uint8Array;
  /** Every frame as sent / as delivered. */
  wireSent(): Uint8Array;
  wireDelivered(): Uint8Array;
}

export function simWithHostCaptures(o: Omit<SimPairOptions, 'tap'>): HostCaptures {
  const mk = (): PcapWriter => new PcapWriter({ linkType: LinkType.Ethernet, nanosecond: true });
  const a = mk();
  const b = mk();
  const sent = mk();
  const delivered = mk();
  let now = (): number => 0;
  const ts = (t: number): bigint => DEFAULT_EPOCH_NS + BigInt(Math.round(t));
  const tap: FrameTap = {
    where: 'sent',
    record(frame: Uint8Array, timeNs: number, direction: Direction) {
      (direction === 'a->b' ? a : b).add(frame, ts(timeNs));
      sent.add(frame, ts(timeNs));
    },
    close() {},
  };
  const sim = createSimPair({ ...o, tap });
  now = () => sim.clock.now();
  for (const [end, w] of [
    [sim.link.a, a],
    [sim.link.b, b],
  ] as const) {
    const orig = end.receive.bind(end);
    end.receive = (frames: readonly Uint8Array[]) => {
      for (const f of frames) {
        w.add(f, ts(now()));
        delivered.add(f, ts(now()));
      }
      orig(frames);
    };
  }
  return { sim, hostA: () => a.toBytes(), hostB: () => b.toBytes(), wireSent: () => sent.toBytes(), wireDelivered: () => delivered.toBytes() };
}
