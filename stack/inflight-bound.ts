/**
 * A device-wide bound on the request packets its RC QPs have in flight: the send scheduler a NIC
 * has, and a host stack needs when many QPs share one receive ring at the peer.
 *
 * Each QP alone keeps at most `maxUnackedPsns` PSNs outstanding (rxe's window), but nothing bounds
 * their sum: N QPs that post at once put N windows on the wire in one go, and over a veth or a NIC
 * without a lossless fabric the peer's receive ring (1 080 frames of AF_PACKET, 2 048 of one AF_XDP
 * queue) overflows. The QPs then recover by their local ACK timers, or run out of retries. A
 * hardware RNIC's send scheduler and PFC keep that from happening; rxe has the same exposure as a
 * host stack (its UDP socket drops) and relies on retransmission.
 *
 * The bound counts, per RC QP, the PSNs sent and not yet acknowledged: from the completer's retry
 * point (`comp.psn`) up to the highest PSN sent, which for a READ is its last response PSN, since
 * the responses are what land in this device's ring. It is kept exact by recounting one QP each
 * time its count may move: after a packet is sent, after a response is processed, when the QP goes
 * to the error state or is reset or destroyed. A new packet (not a retransmission) may leave while
 * the device total plus its cost is within the limit, or when nothing is in flight at all (a READ
 * larger than the limit goes alone). A QP that may not send waits in a FIFO. As acknowledgements
 * free room, the QPs at the head of the FIFO are granted one packet each and kicked; while QPs
 * wait, a QP that was not granted room joins the back of the FIFO even when its own ACK just freed
 * some, so the QPs take turns as under a NIC's round-robin send scheduler, instead of the ones
 * already running keeping the wire. A grant not used in the kick turn it was made for lapses
 * (`endTurn`). A granted READ goes even when its responses outnumber the room left: the total may
 * then pass the limit by that READ's responses less one. A periodic exact recount of every QP,
 * while some wait, is the safety net.
 *
 * Retransmissions always go: their PSNs are counted already. UC and UD are not counted: nothing
 * acknowledges them, so there is nothing to wait for.
 */
import type { Clock, TimerId } from '../base/clock';
import { psnDiff } from '../base/psn';
import type { QueuePair } from './queue-pair';
import { QpState, QpType } from './qp-type-and-state';

/** How often the exact recount runs while some QP waits (ns). */
const RECOUNT_NS = 20_000_000;

/** The PSNs `qp` has sent and not had acknowledged: what it has in flight now. */
export function packetsInFlight(qp: QueuePair): number {
  if (qp.type !== QpType.RC) return 0;
  const st = qp.state;
  if (st !== QpState.RTS && st !== QpState.SQD) return 0;
  const req = qp.req;
  if (!req.sentAny) return 0;
  const n = psnDiff(req.sentHigh, qp.comp.psn) + 1;
  return n > 0 ? n : 0;
}

export interface InflightStats {
  /** Packets in flight now, across the device's QPs. */
  readonly inFlight: number;
  /** The most there have been at once. */
  readonly peak: number;
  /** QPs waiting for room now. */
  readonly waiting: number;
  /** Times the exact recount found the running total off (0 unless a change of a QP went unnoticed). */
  readonly corrections: number;
}

export class InflightBound {
  private total = 0;
  private peakTotal = 0;
  private fixes = 0;
  /** QPs waiting for room, oldest first, from `head` on. */
  private queue: QueuePair[] = [];
  private head = 0;
  private timer: TimerId | null = null;
  /** Packets of room set aside for the QPs woken (one each), and those QPs. */
  private granted = 0;
  private readonly grantees: QueuePair[] = [];
  /** Kick turns begun: a grant is for the turn after the one under way when it was made. */
  private turn = 0;

  /**
   * @param limit packets in flight across the device's RC QPs (at least 1)
   * @param kick asks for a QP's requester to run (the device's kick)
   * @param allQps every QP of the device, for the exact recount
   */
  constructor(
    readonly limit: number,
    private readonly clock: Clock,
    private readonly kick: (qp: QueuePair) => void,
    private readonly allQps: () => Iterable<QueuePair>,
  ) {}

  get stats(): InflightStats {
    return { inFlight: this.total, peak: this.peakTotal, waiting: this.queue.length - this.head, corrections: this.fixes };
  }

  /**
   * True when `qp` may send a new packet that puts `cost` more PSNs in flight (1, or a READ's
   * response count). Otherwise the QP joins the waiting FIFO (once) and false comes back: its
   * requester stops, and is kicked when its turn comes.
   */
  admit(qp: QueuePair, cost: number): boolean {
    if (qp.inflightGrantTurn !== 0) {
      qp.inflightGrantTurn = 0;
      this.granted--;
      return true;
    }
    const held = this.total + this.granted;
    if (this.head === this.queue.length && (held === 0 || held + cost <= this.limit)) return true;
    if (!qp.inflightWaiting) {
      qp.inflightWaiting = true;
      qp.counters.rc_inflight_waits++;
      this.queue.push(qp);
      if (this.timer === null) this.timer = this.clock.schedule(this.clock.now() + RECOUNT_NS, this.onRecountTimer);
    }
    return false;
  }

  /** A kick turn begins (the device runs the requesters it kicked): grants made before now are for it. */
  beginTurn(): void {
    this.turn++;
  }

  /**
   * The kick turn ends: grants made for it that its QPs did not use lapse, and their room goes to
   * the next QPs waiting. Grants made during the turn are for the next one.
   */
  endTurn(): void {
    if (this.granted === 0) {
      this.grantees.length = 0;
      return;
    }
    let keep = 0;
    for (const qp of this.grantees) {
      const t = qp.inflightGrantTurn;
      if (t === 0) continue;
      if (t <= this.turn) {
        qp.inflightGrantTurn = 0;
        this.granted--;
      } else {
        this.grantees[keep++] = qp;
      }
    }
    this.grantees.length = keep;
    if (this.head < this.queue.length) this.wake();
  }

  /** Recounts `qp` after something that may have moved its count; wakes waiting QPs when there is room. */
  note(qp: QueuePair): void {
    const now = packetsInFlight(qp);
    const was = qp.inflightCharge;
    if (now === was) return;
    qp.inflightCharge = now;
    this.total += now - was;
    if (now > was) {
      if (this.total > this.peakTotal) this.peakTotal = this.total;
    } else if (this.head < this.queue.length) {
      this.wake();
    }
  }

  /** Takes a destroyed QP's packets off the count and out of the queue. */
  forget(qp: QueuePair): void {
    this.total -= qp.inflightCharge;
    qp.inflightCharge = 0;
    if (qp.inflightGrantTurn !== 0) {
      qp.inflightGrantTurn = 0;
      this.granted--;
    }
    if (qp.inflightWaiting) {
      qp.inflightWaiting = false;
      const i = this.queue.indexOf(qp, this.head);
      if (i >= 0) this.queue.splice(i, 1);
    }
    if (this.head < this.queue.length) this.wake();
  }

  /** Counts every QP afresh and sets the total from that (the safety net; tests call it too). */
  recount(): void {
    let sum = 0;
    for (const qp of this.allQps()) {
      const n = packetsInFlight(qp);
      if (n !== qp.inflightCharge) this.fixes++;
      qp.inflightCharge = n;
      sum += n;
    }
    this.total = sum;
    if (this.head < this.queue.length) this.wake();
  }

  /** Grants one packet of room to each waiting QP it can, oldest first, and kicks them. */
  private wake(): void {
    let room = this.limit - this.total - this.granted;
    while (room > 0 && this.head < this.queue.length) {
      const qp = this.queue[this.head] as QueuePair;
      this.head++;
      qp.inflightWaiting = false;
      qp.inflightGrantTurn = this.turn + 1;
      this.granted++;
      this.grantees.push(qp);
      this.kick(qp);
      room--;
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      if (this.timer !== null) {
        this.clock.cancel(this.timer);
        this.timer = null;
      }
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private readonly onRecountTimer = (): void => {
    this.timer = null;
    this.recount();
    if (this.head < this.queue.length) this.timer = this.clock.schedule(this.clock.now() + RECOUNT_NS, this.onRecountTimer);
  };
}
