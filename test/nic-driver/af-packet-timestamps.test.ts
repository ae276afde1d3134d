/**
 * The AF_PACKET driver's kernel receive timestamps (driver.ts `RxTimestamps`) over a veth pair
 * between two network namespaces made for this file: both ends are drivers of this process, side
 * a sends, side b receives. Each frame's `rxTimeNs` is the time the kernel stamped it on arrival,
 * on the clock `process.hrtime` reads, so the test brackets each send with hrtime and checks the
 * stamp inside (a veth delivers in the sender's own transmit call, in softirq on the way out), not
 * at the later moment the test polls the ring. The pure conversion: test/nic-driver/rx-time.test.ts.
 *
 * @group netns
 */
import { hasRxTimestamps } from '../../nic-driver/driver';
import { AfPacketDriver, type AfPacketOptions } from '../../nic-driver/af-packet-driver';
import { nativeNetnsSkipReason, netnsDrivers } from '../support/netns';
import { testUnless } from '../support/skip';
import { ours, testFrame, udpBetween } from './driver-suite';

const reason = nativeNetnsSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mono = (): number => Number(process.hrtime.bigint());

const net = netnsDrivers((ifname, netns, extra: Partial<AfPacketOptions> = {}) => AfPacketDriver.open({ ifname, netns, ...extra }));
const { pair, open } = net;

/**
 * How far after its send call a stamp may lie. The veth hands the frame to the receive path inside
 * the send call; on a loaded host the softirq that stamps it may be put off to ksoftirqd, and that
 * wait is the only slack here. The stamps' own error (the realtime-to-monotonic offset, read
 * between two monotonic reads) is well under a microsecond: EARLY_NS allows for it.
 */
const LATE_NS = 20e6;
const EARLY_NS = 10e3;

/** The frames of a burst of b's, with their stamps, sources and what was taken when. */
function take(b: AfPacketDriver, max = 256): { frames: Uint8Array[]; ns: number[]; sources: (string | null)[] } {
  const got = b.rxBurst(max);
  const ns: number[] = [];
  const sources: (string | null)[] = [];
  for (let i = 0; i < got.length; i++) {
    ns.push(b.rxTimeNs(i));
    sources.push(b.rxTimeSource(i));
  }
  return { frames: got, ns, sources };
}

describe('AF_PACKET receive timestamps', () => {
  for (const ring of ['v2', 'v3'] as const) {
    t(`${ring}: a burst's frames carry kernel stamps, in order, between their send and the poll`, async () => {
      const a = open('a');
      const b = open('b', { ring });
      expect(b.rxTimestamps).toBe(true);
      expect(hasRxTimestamps(b)).toBe(true);
      const kind = udpBetween(pair);
      const frames = Array.from({ length: 64 }, (_, i) => testFrame(a, b, i, 200 + i, kind));
      const sentFrom = mono();
      expect(a.txBurst(frames)).toBe(64);
      const sentTo = mono();
      await sleep(60);
      const polled = mono();
      const r = take(b);
      expect(ours(r.frames)).toHaveLength(64);
      for (let i = 0; i < r.ns.length; i++) {
        expect(['packet-socket', 'software']).toContain(r.sources[i]);
        expect(r.ns[i]).toBeGreaterThanOrEqual(sentFrom - EARLY_NS);
        expect(r.ns[i]).toBeLessThanOrEqual(sentTo + LATE_NS);
        if (i > 0) expect(r.ns[i]).toBeGreaterThanOrEqual(r.ns[i - 1]!);
      }
      // The poll came 60 ms after the send; the stamps did not wait for it.
      expect(polled - r.ns[r.ns.length - 1]!).toBeGreaterThan(40e6);
      // Past the burst there is no stamp.
      expect(b.rxTimeNs(r.ns.length)).toBeNaN();
      expect(b.rxTimeSource(r.ns.length)).toBeNull();
      expect(b.rxTimeRawNs(0)).toBeGreaterThan(1_600_000_000n * 1_000_000_000n); // CLOCK_REALTIME, after 2020
    });
  }

  t('frames sent while the receiving event loop is blocked keep their arrival times, not the poll time', () => {
    const a = open('a');
    const b = open('b');
    const kind = udpBetween(pair);
    // One synchronous stretch of about 50 ms: the event loop (the receiver's too: it is this
    // process's) runs nothing, as when a busy host delays the poll; a frame every 10 ms.
    const sends: { from: number; to: number }[] = [];
    for (let k = 0; k < 6; k++) {
      const from = mono();
      expect(a.txBurst([testFrame(a, b, k, 300, kind)])).toBe(1);
      sends.push({ from, to: mono() });
      if (k < 5) {
        const until = mono() + 10e6;
        while (mono() < until) {
          // blocked on purpose
        }
      }
    }
    const polled = mono();
    const r = take(b);
    expect(ours(r.frames)).toHaveLength(6);
    for (let k = 0; k < 6; k++) {
      expect(r.ns[k]).toBeGreaterThanOrEqual(sends[k]!.from - EARLY_NS);
      expect(r.ns[k]).toBeLessThanOrEqual(sends[k]!.to + LATE_NS);
      if (k > 0) expect(r.ns[k]! - r.ns[k - 1]!).toBeGreaterThan(5e6); // sent 10 ms apart, stamped apart
    }
    // Spread over the 50 ms of sending; the poll time would put all six at one instant.
    expect(r.ns[5]! - r.ns[0]!).toBeGreaterThan(40e6);
    expect(polled - r.ns[0]!).toBeGreaterThan(45e6);
  });

  t('hardwareTimestamps on a veth (no NIC clock): opens, and the frames keep the software stamp', async () => {
    const a = open('a');
    const b = open('b', { hardwareTimestamps: true });
    const from = mono();
    a.txBurst([testFrame(a, b, 1, 100, udpBetween(pair))]);
    await sleep(30);
    const r = take(b);
    expect(ours(r.frames)).toHaveLength(1);
    expect(['packet-socket', 'software']).toContain(r.sources[0]);
    expect(r.ns[0]).toBeGreaterThanOrEqual(from - EARLY_NS);
  });

  t('rxTimestamps: false: no stamps (NaN, null), frames as before', async () => {
    const a = open('a');
    const b = open('b', { rxTimestamps: false });
    expect(b.rxTimestamps).toBe(false);
    a.txBurst([testFrame(a, b, 1, 100, udpBetween(pair))]);
    await sleep(30);
    const r = take(b);
    expect(ours(r.frames)).toHaveLength(1);
    expect(r.ns[0]).toBeNaN();
    expect(r.sources[0]).toBeNull();
    expect(b.rxTimeRawNs(0)).toBeNull();
  });
});
