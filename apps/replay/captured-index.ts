/**
 * One side of a captured conversation (its requests, or its responses) looked up by PSN and by
 * frame number: "the next packet for this PSN after frame F" and "the packets between frames F and
 * G" without scanning the whole side. Replay asks these once per request fed, so a scan made it
 * quadratic in the capture's length. Packets are kept in frame order (a conversation lists them so).
 */
import type { CapturedPacket } from './conversation';

export class CapturedIndex {
  /** The packets in frame order. */
  readonly packets: readonly CapturedPacket[];
  private readonly byPsn = new Map<number, CapturedPacket[]>();

  constructor(packets: readonly CapturedPacket[]) {
    let ordered = true;
    for (let i = 1; i < packets.length && ordered; i++) ordered = (packets[i] as CapturedPacket).frame >= (packets[i - 1] as CapturedPacket).frame;
    this.packets = ordered ? packets : [...packets].sort((a, b) => a.frame - b.frame);
    for (const c of this.packets) {
      const psn = c.p.bth?.psn;
      if (psn === undefined) continue;
      const list = this.byPsn.get(psn);
      if (list === undefined) this.byPsn.set(psn, [c]);
      else list.push(c);
    }
  }

  /** The first packet for `psn` after frame `after` that `ok` accepts. */
  next(psn: number, after: number, ok?: (c: CapturedPacket) => boolean): CapturedPacket | undefined {
    const list = this.byPsn.get(psn);
    if (list === undefined) return undefined;
    for (let i = firstAfter(list, after); i < list.length; i++) {
      const c = list[i] as CapturedPacket;
      if (ok === undefined || ok(c)) return c;
    }
    return undefined;
  }

  /** Whether a packet for `psn` strictly between frames `after` and `before` satisfies `ok`. */
  someBetween(psn: number, after: number, before: number, ok: (c: CapturedPacket) => boolean): boolean {
    const list = this.byPsn.get(psn);
    if (list === undefined) return false;
    for (let i = firstAfter(list, after); i < list.length; i++) {
      const c = list[i] as CapturedPacket;
      if (c.frame >= before) return false;
      if (ok(c)) return true;
    }
    return false;
  }

  /** The packets strictly between frames `after` and `before`, in frame order. */
  *between(after: number, before: number): Generator<CapturedPacket> {
    for (let i = firstAfter(this.packets, after); i < this.packets.length; i++) {
      const c = this.packets[i] as CapturedPacket;
      if (c.frame >= before) return;
      yield c;
    }
  }
}

/** The index of the first item of `list` (in frame order) whose frame is after `after`. */
export function firstAfter(list: readonly { frame: number }[], after: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as { frame: number }).frame <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
