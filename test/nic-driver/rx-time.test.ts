/**
 * The pure half of the AF_PACKET driver's receive timestamps (nic-driver/rx-time.ts): the ring's
 * (seconds, nanoseconds) on CLOCK_REALTIME to CLOCK_MONOTONIC ns, exact where BigInt arithmetic
 * says so; the offset's two words; the TP_STATUS_TS_* source word; which drivers have the
 * extension; and RealClock's conversion of a monotonic time onto its own clock. The stamps
 * themselves, taken by the kernel: test/nic-driver/af-packet-timestamps.test.ts (netns).
 */
import fc from 'fast-check';
import { RealClock, VirtualClock } from '../../base/clock';
import { hasRxTimestamps } from '../../nic-driver/driver';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import { CaptureDriver } from '../../nic-driver/capture-driver';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { offsetSeconds, realtimeToMonotonicNs, rxTimeSourceOf } from '../../nic-driver/rx-time';

const NS = 1_000_000_000n;

/** The offset as the addon writes it: whole seconds (floor) in two words, nanoseconds in [0, 1e9). */
function offsetWords(offNs: bigint): [number, number, number] {
  let sec = offNs / NS;
  let nsec = offNs % NS;
  if (nsec < 0n) {
    nsec += NS;
    sec -= 1n;
  }
  const u = BigInt.asUintN(64, sec);
  return [Number(u & 0xffff_ffffn), Number(u >> 32n), Number(nsec)];
}

describe('realtimeToMonotonicNs', () => {
  test('is exact: the BigInt difference of epoch ns and the offset, for every uptime below 2^53 ns', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 53n) - 1n }), // the monotonic time (uptime, ns)
        fc.bigInt({ min: 946_684_800n * NS, max: 4_000_000_000n * NS }), // the realtime clock's offset (2000..2096)
        (mono, off) => {
          const real = mono + off;
          if (real >= (1n << 32n) * NS) return; // tp_sec is 32 bits: past 2106
          const [lo, hi, offNsec] = offsetWords(off);
          const got = realtimeToMonotonicNs(Number(real / NS), Number(real % NS), offsetSeconds(lo, hi), offNsec);
          expect(got).toBe(Number(mono));
          expect(BigInt(got)).toBe(mono);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('a stamp a nanosecond apart stays a nanosecond apart (no double holds epoch ns that finely)', () => {
    const off = 1_760_000_000n * NS + 123_456_789n;
    const [lo, hi, offNsec] = offsetWords(off);
    const at = (real: bigint): number => realtimeToMonotonicNs(Number(real / NS), Number(real % NS), offsetSeconds(lo, hi), offNsec);
    const real = off + 86_400n * NS + 999_999_999n; // a day of uptime, across a second's edge
    expect(at(real + 1n) - at(real)).toBe(1);
    expect(Number(real + 1n) - Number(real)).not.toBe(1); // what a double of epoch ns would say
  });

  test('a realtime clock set before the host booted: a negative offset', () => {
    const [lo, hi, offNsec] = offsetWords(-5n * NS - 250n);
    expect(offsetSeconds(lo, hi)).toBe(-6);
    expect(offNsec).toBe(999_999_750);
    // Realtime 10 s: monotonic 15 s + 250 ns.
    expect(realtimeToMonotonicNs(10, 0, offsetSeconds(lo, hi), offNsec)).toBe(15_000_000_250);
  });

  test('offsetSeconds reads the high word as signed and the low word as unsigned', () => {
    expect(offsetSeconds(0xffff_ffff, 0)).toBe(0xffff_ffff);
    expect(offsetSeconds(0, 1)).toBe(0x1_0000_0000);
    expect(offsetSeconds(0xffff_ffff, 0xffff_ffff)).toBe(-1);
  });
});

describe('rxTimeSourceOf', () => {
  test('names the TP_STATUS_TS_* bits (29, 30, 31) shifted down', () => {
    expect(rxTimeSourceOf(0)).toBe('packet-socket');
    expect(rxTimeSourceOf(1)).toBe('software');
    expect(rxTimeSourceOf(2)).toBe('sys-hardware');
    expect(rxTimeSourceOf(4)).toBe('raw-hardware');
    expect(rxTimeSourceOf(3)).toBeNull();
    expect(rxTimeSourceOf(7)).toBeNull();
  });
});

describe('hasRxTimestamps', () => {
  test('the AF_PACKET driver has it; the memory link and AF_XDP do not', () => {
    expect(typeof AfPacketDriver.prototype.rxTimeNs).toBe('function');
    expect(typeof AfPacketDriver.prototype.rxTimeSource).toBe('function');
    expect('rxTimeNs' in AfXdpDriver.prototype).toBe(false);
    const link = createMemoryLink({ clock: new VirtualClock() });
    expect(hasRxTimestamps(link.a)).toBe(false);
    link.close();
  });

  test('a driver whose rxBurst was replaced on the instance (a tap) counts as not having it', () => {
    const link = createMemoryLink({ clock: new VirtualClock() });
    const d = Object.assign(link.a, { rxTimeNs: () => 0, rxTimeSource: () => 'software' as const });
    expect(hasRxTimestamps(d)).toBe(true);
    d.rxBurst = (max: number) => link.a.rxBurst(max);
    expect(hasRxTimestamps(d)).toBe(false);
    link.close();
  });
});

describe('CaptureDriver (the live capture, under the probe driver)', () => {
  test("passes the inner driver's receive timestamps through, and has none when it has none", () => {
    const link = createMemoryLink({ clock: new VirtualClock() });
    const recorder = { record: (): void => {} };
    expect(hasRxTimestamps(new CaptureDriver(link.a, recorder))).toBe(false);
    const stamped = Object.assign(link.b, { rxTimeNs: (i: number) => 1000 + i, rxTimeSource: () => 'packet-socket' as const });
    const d = new CaptureDriver(stamped, recorder);
    expect(hasRxTimestamps(d)).toBe(true);
    expect(d.rxTimeNs?.(2)).toBe(1002);
    expect(d.rxTimeSource?.(0)).toBe('packet-socket');
    link.close();
  });
});

describe('RealClock.fromMonotonicNs', () => {
  test("puts a CLOCK_MONOTONIC time (process.hrtime's) on the clock, beside now()", () => {
    const clock = new RealClock();
    const before = clock.now();
    const mono = Number(process.hrtime.bigint());
    const after = clock.now();
    const t = clock.fromMonotonicNs(mono);
    expect(t).toBeGreaterThanOrEqual(before - 1000); // origin as a number: within a µs at any uptime below 104 days
    expect(t).toBeLessThanOrEqual(after + 1000);
    expect(clock.fromMonotonicNs(mono + 5_000) - t).toBe(5_000);
    expect(clock.fromMonotonicNs(Number.NaN)).toBeNaN();
  });
});
