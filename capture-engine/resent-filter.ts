/**
 * Which requests of a capture are copies of a packet the capture already holds: a requester's
 * go-back-N resends its requests with the PSNs they had (IBTA vol. 1 §9.7.5.2.6, §9.7.6.1.3). A
 * per-request report (an NVMe command, an RPC) takes each packet once: the first copy captured,
 * which is the one the peer answered if it got it. A copy whose first one is not in the capture
 * (lost before the capture point) is the first seen, and counts.
 *
 * A request is known by its destination QP and its PSN. Each QP keeps the last WINDOW PSNs it saw:
 * a resend goes back at most the requester's window (rxe: 128 unacknowledged PSNs), and a PSN
 * seen again further back is a new packet of a PSN space that wrapped.
 */

/** PSNs remembered per QP and direction: far more than any requester keeps outstanding. */
const WINDOW = 8192;

interface Seen {
  set: Set<number>;
  order: number[];
  next: number;
}

export class ResentFilter {
  private readonly seen = new Map<number, Seen>();

  /** True when a request to `destQp` with `psn` was seen before: a copy. Records it otherwise. */
  isCopy(destQp: number, psn: number): boolean {
    let s = this.seen.get(destQp);
    if (s === undefined) {
      s = { set: new Set(), order: [], next: 0 };
      this.seen.set(destQp, s);
    }
    if (s.set.has(psn)) return true;
    if (s.order.length < WINDOW) s.order.push(psn);
    else {
      s.set.delete(s.order[s.next]!);
      s.order[s.next] = psn;
      s.next = (s.next + 1) % WINDOW;
    }
    s.set.add(psn);
    return false;
  }
}
