/**
 * Capture times exact to the nanosecond, and how many decimals to print them with.
 *
 * A double of seconds since the epoch cannot hold a capture's timestamp: near 1.7e9 s its steps
 * are 238 ns, while a nanosecond capture's timestamps, and the 1-3 µs between a request and its
 * hardware ACK, need every nanosecond. So a time is kept as whole seconds and the nanoseconds past
 * them, two integers a double holds exactly (seconds below 2^53, far beyond any 64-bit timestamp in
 * nanoseconds), and printed from those integers.
 */
import { textOf } from './text-bytes';

/** A time as whole seconds (rounded down: `sec` is negative before the epoch, or for a negative span) and the nanoseconds past them. */
export interface ExactTime {
  sec: number;
  /** 0 ≤ nsec < 10^9. */
  nsec: number;
  /**
   * Decimals the time is printed with: the capture's resolution, 6 for microseconds and 9 for
   * nanoseconds (0-9). A time with nonzero digits beyond them is printed with 9.
   */
  digits: number;
}

/** A frame's capture time, and its time since the capture's first frame. */
export interface FrameTime extends ExactTime {
  /** Since the first frame, as `sec` and `nsec` are since the epoch. */
  relSec: number;
  relNsec: number;
}

/** The time of a frame at the epoch that is itself the first frame (tests and examples). */
export const ZERO_FRAME_TIME: Readonly<FrameTime> = Object.freeze({ sec: 0, nsec: 0, digits: 9, relSec: 0, relNsec: 0 });

const NS_PER_SEC = 1_000_000_000n;

/** Whole seconds since the epoch of a time of `ns` nanoseconds, rounded down (negative before the epoch). */
export function secondsOfNs(ns: bigint): number {
  const sec = ns / NS_PER_SEC;
  return Number(ns < 0n && sec * NS_PER_SEC !== ns ? sec - 1n : sec);
}

/** `ns` nanoseconds since the epoch (any sign) as an ExactTime printed with `digits` decimals. */
export function exactTime(ns: bigint, digits: number): ExactTime {
  const sec = secondsOfNs(ns);
  return { sec, nsec: Number(ns - BigInt(sec) * NS_PER_SEC), digits };
}

/**
 * Writes `a − b` into `out` (exactly: both are whole seconds and nanoseconds), with the larger of
 * the two's decimals. Returns `out`.
 */
export function timeDifference(a: ExactTime, b: ExactTime, out: ExactTime): ExactTime {
  let sec = a.sec - b.sec;
  let nsec = a.nsec - b.nsec;
  if (nsec < 0) {
    nsec += 1e9;
    sec -= 1;
  }
  out.sec = sec;
  out.nsec = nsec;
  out.digits = a.digits > b.digits ? a.digits : b.digits;
  return out;
}

/** The FrameTime of a frame at `t`, in a capture whose first frame is at `first`. */
export function frameTimeOf(t: ExactTime, first: ExactTime): FrameTime {
  const rel = timeDifference(t, first, { sec: 0, nsec: 0, digits: 0 });
  return { sec: t.sec, nsec: t.nsec, digits: t.digits, relSec: rel.sec, relNsec: rel.nsec };
}

/** `ns` whole nanoseconds (a double holds them exactly below 2^53) as an ExactTime with `digits` decimals. */
export function spanTime(ns: number, digits: number): ExactTime {
  const sec = Math.floor(ns / 1e9);
  return { sec, nsec: ns - sec * 1e9, digits };
}

/** Decimal seconds with `t.digits` decimals (more when the time has them): `1705320000.000001184`, `-0.000002`. */
export function secondsText(t: ExactTime): string {
  return textOf((w) => w.seconds(t.sec, t.nsec, t.digits));
}

/**
 * The decimals a capture's timestamp has for a resolution of 1/base^exp seconds (pcapng
 * if_tsresol; classic pcap is 10^-6 or 10^-9): `exp` up to 9. A binary fraction 2^-n is n decimal
 * digits long, so the rule is the same for base 2. Finer resolutions are read to the nanosecond.
 */
export function timeDigitsOf(exp: number): number {
  return exp < 9 ? exp : 9;
}

/**
 * How many decimals a printed time carries (`1705320000.000001184` has 9; none without a point):
 * the resolution a document whose times are decimal strings was made at.
 */
export function decimalsOf(text: string): number {
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}
