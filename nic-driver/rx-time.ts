/**
 * The AF_PACKET ring's receive timestamps as the addon hands them over, and their conversion to
 * the host's monotonic clock (nic-driver/af-packet-driver.ts; driver.ts `RxTimestamps`).
 *
 * Representation: the kernel stamps a frame with CLOCK_REALTIME as (seconds, nanoseconds), the
 * ring header's `tp_sec` and `tp_nsec` (32 bits each). Nanoseconds since the epoch (about 1.8e18)
 * need 61 bits, past a double's 53, and a BigInt per frame would allocate on every read; so the
 * addon writes the two 32-bit words as they are into a Uint32Array (exact, and read without
 * allocation), with a third word saying which clock stamped the frame. The stack times itself on
 * CLOCK_MONOTONIC (base/clock.ts `RealClock`, `process.hrtime`), whose values (the host's uptime)
 * fit in a double; the addon also writes CLOCK_REALTIME - CLOCK_MONOTONIC, as seconds and
 * nanoseconds, and the conversion subtracts seconds from seconds and nanoseconds from nanoseconds
 * before the two meet in one double, so nothing rounds on the way.
 */
import type { RxTimeSource } from './driver';

/** Words per frame in the addon's `rxTime` array: tp_sec, tp_nsec, the TP_STATUS_TS_* bits >> 29. */
export const RX_TIME_WORDS = 3;

/** Words of the addon's `rxClock` array: the offset's seconds (low word, high word) and nanoseconds. */
export const RX_CLOCK_WORDS = 3;

/** The source word (TP_STATUS_TS_SOFTWARE, _SYS_HARDWARE, _RAW_HARDWARE are bits 29, 30, 31) as a name; null for a value no kernel writes. */
export function rxTimeSourceOf(word: number): RxTimeSource | null {
  switch (word) {
    case 0:
      return 'packet-socket';
    case 1:
      return 'software';
    case 2:
      return 'sys-hardware';
    case 4:
      return 'raw-hardware';
    default:
      return null;
  }
}

/**
 * Whole seconds of CLOCK_REALTIME - CLOCK_MONOTONIC from the addon's two words: `lo` the low 32
 * bits, `hi` the high 32 bits of the 64-bit two's complement (negative only for a realtime clock
 * set before the host booted).
 */
export function offsetSeconds(lo: number, hi: number): number {
  return (hi | 0) * 0x1_0000_0000 + (lo >>> 0);
}

/**
 * A CLOCK_REALTIME time (`sec`, `nsec`) on CLOCK_MONOTONIC, ns, given CLOCK_REALTIME -
 * CLOCK_MONOTONIC as (`offSec`, `offNsec`). Exact while the result is below 2^53 ns (104 days of
 * uptime): seconds and nanoseconds are subtracted apart, each exactly, before they are joined.
 */
export function realtimeToMonotonicNs(sec: number, nsec: number, offSec: number, offNsec: number): number {
  return (sec - offSec) * 1e9 + (nsec - offNsec);
}
