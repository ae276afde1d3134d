/**
 * The star switch's host drivers have transmit backpressure (nic-driver/driver.ts TxBackpressure):
 * a ring of HOST_TX_RING_FRAMES frames waiting for the wire, no room while PFC has the uplink
 * paused, every frame taken reported as it starts on the wire, in order (a frame dropped for its
 * length in its turn), and room reported when it opens. The memory link has no such extension,
 * and a driver whose txBurst a tap replaced counts as not having it.
 *
 * @group unit
 */
import { VirtualClock } from '../../base/clock';
import { hasTxBackpressure, type TxBackpressure } from '../../nic-driver/driver';
import { createMemoryLink, type MemoryDriver } from '../../nic-driver/memory-link';
import { HOST_TX_RING_FRAMES, createStarSwitch, type StarSwitchOptions } from '../../nic-driver/star-switch';
import { wireBytes } from '../../packets/wire-size';
import { LinkConfigError } from '../../nic-driver/link-config-error';

const MACS = [0x02_00_00_00_01_00, 0x02_00_00_00_01_01, 0x02_00_00_00_01_02];
const NS_PER_BYTE = 0.8; // 10 Gb/s

/** A raw Ethernet frame of `len` bytes from host `from` to host `to` (the switch forwards by destination MAC). */
function frame(len: number, from: number, to: number): Uint8Array {
  const f = new Uint8Array(len);
  const v = new DataView(f.buffer);
  v.setUint16(0, Math.floor(MACS[to]! / 2 ** 32));
  v.setUint32(2, MACS[to]! >>> 0);
  v.setUint16(6, Math.floor(MACS[from]! / 2 ** 32));
  v.setUint32(8, MACS[from]! >>> 0);
  v.setUint16(12, 0x0800);
  return f;
}

function star(o: Partial<StarSwitchOptions> = {}): { clock: VirtualClock; hosts: (MemoryDriver & TxBackpressure)[]; sw: ReturnType<typeof createStarSwitch> } {
  const clock = new VirtualClock();
  const sw = createStarSwitch({ clock, macs: MACS, linkRateBps: 10e9, bufferBytes: 1 << 20, propagationNs: 1000, mtu: 1500, ...o });
  const hosts = sw.hosts.map((h) => {
    if (!hasTxBackpressure(h)) throw new Error('a star host without transmit backpressure');
    return h;
  });
  return { clock, hosts, sw };
}

describe('the star switch’s host drivers: transmit backpressure and the on-wire report', () => {
  test('the memory link has none; a tapped txBurst hides it; the star hosts have it', () => {
    const link = createMemoryLink({ clock: new VirtualClock() });
    expect(hasTxBackpressure(link.a)).toBe(false);
    const { sw } = star();
    expect(hasTxBackpressure(sw.hosts[0]!)).toBe(true);
    const tapped = sw.hosts[1]!;
    const burst = tapped.txBurst.bind(tapped);
    tapped.txBurst = (fs) => burst(fs);
    expect(hasTxBackpressure(tapped)).toBe(false);
    expect(() => star({ hostTxRingFrames: 0 })).toThrow(LinkConfigError);
  });

  test('a ring of HOST_TX_RING_FRAMES: room shrinks as frames wait, each frame reported as it starts, in order', () => {
    const { clock, hosts, sw } = star();
    const h = hosts[0]!;
    const started: number[] = [];
    let opened = 0;
    h.setTxEvents({ started: (n) => started.push(...Array<number>(n).fill(clock.now())), opened: () => opened++ });
    expect(h.txRoom()).toBe(HOST_TX_RING_FRAMES);
    // Six frames: the first goes on the wire at once, five wait (one more than the ring: the driver takes all it is given).
    h.txBurst(Array.from({ length: 6 }, () => frame(1000, 0, 2)));
    expect(started).toEqual([0]);
    expect(h.txRoom()).toBe(0);
    expect(sw.hostQueues[0]!.maxQueuedFrames).toBe(5);
    clock.runUntil(100_000);
    const w = wireBytes(1000) * NS_PER_BYTE;
    // Back to back on the wire (each start on the whole ns the frame before ends).
    const expected = [0];
    for (let i = 1; i < 6; i++) expected.push(Math.round(expected[i - 1]! + w));
    expect(started).toEqual(expected);
    expect(h.txRoom()).toBe(HOST_TX_RING_FRAMES);
    expect(opened).toBe(6);
    expect(sw.hostQueues[0]!.framesOut).toBe(6);
    expect(sw.hostQueues[0]!.bytesOut).toBe(6000);
  });

  test('a frame dropped for its length is reported in its turn, not ahead of the frames before it', () => {
    const { clock, hosts } = star();
    const h = hosts[0]!;
    const started: number[] = [];
    h.setTxEvents({ started: (n) => started.push(...Array<number>(n).fill(clock.now())), opened: () => undefined });
    const first = frame(1000, 0, 2);
    h.txBurst([first, frame(1600, 0, 2), frame(1000, 0, 2)]); // 1600 > 1500 + 14: dropped
    expect(h.stats.txDropped).toBe(1);
    expect(started).toEqual([0]);
    clock.runUntil(100_000);
    const w = Math.round(wireBytes(1000) * NS_PER_BYTE);
    expect(started).toEqual([0, w, w]);
    // The same through zero-copy transmit (txReserve/txCommit), as the engine sends.
    const started2: number[] = [];
    const h2 = hosts[1]!;
    h2.setTxEvents({ started: (n) => started2.push(...Array<number>(n).fill(clock.now())), opened: () => undefined });
    const t0 = clock.now();
    for (const len of [1000, 1600, 1000]) {
      const off = h2.txReserve(len);
      h2.txSpace.buf.set(frame(len, 1, 2), off);
    }
    expect(h2.txCommit()).toBe(2);
    clock.runUntil(t0 + 100_000);
    expect(started2.map((t) => t - t0)).toEqual([0, w, w]);
  });

  test('PFC: no room while the uplink is paused; room reported when it resumes', () => {
    // Two hosts blast one port: the switch holds more than XOFF of each and pauses both.
    const { clock, hosts, sw } = star({ pfc: { xoffBytes: 20_000, xonBytes: 10_000 } });
    const opened = [0, 0];
    hosts.slice(0, 2).forEach((h, i) => h.setTxEvents({ started: () => undefined, opened: () => opened[i]!++ }));
    for (const i of [0, 1]) hosts[i]!.txBurst(Array.from({ length: 60 }, () => frame(1500, i, 2)));
    let pausedSeen = false;
    let openedWhilePaused = 0;
    for (let t = 100; t <= 200_000; t += 100) {
      clock.runUntil(t);
      const q = sw.hostQueues[0]!;
      if (q.paused) {
        pausedSeen = true;
        expect(hosts[0]!.txRoom()).toBe(0);
        const before = opened[0]!;
        clock.runUntil(t + 1); // nothing starts on a paused link, so nothing opens
        openedWhilePaused += opened[0]! - before;
      }
    }
    expect(pausedSeen).toBe(true);
    expect(sw.stats.pfcPauses).toBeGreaterThan(0);
    expect(sw.stats.pfcResumes).toBe(sw.stats.pfcPauses);
    expect(openedWhilePaused).toBe(0);
    expect(sw.hostQueues[0]!.pausedNs).toBeGreaterThan(0);
    expect(sw.hostQueues[0]!.framesOut).toBe(60);
    expect(hosts[0]!.txRoom()).toBe(HOST_TX_RING_FRAMES);
  });
});
