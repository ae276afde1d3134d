/**
 * The requester's pacer: spaces a QP's request packets at the reaction point's current rate, on
 * the injected clock (virtual in a simulation, real on the drivers). A packet of L bytes sent at
 * time t lets the next one go at t + L·8/R_C; while the RP is not rate-limited the pacer lets
 * everything through (the link itself serializes at line rate) and keeps no timer.
 *
 * The requester asks `admit()` before each packet; a refusal arms one timer for the time the next
 * packet may go, which resumes the requester (`resume`). No credit builds up while a QP is idle:
 * the next packet after a pause goes at once, the one after it a gap later.
 */
import type { Clock, TimerId } from '../../base/clock';

export interface RateSource {
  readonly limited: boolean;
  /** Mb/s. */
  readonly currentRate: number;
}

export class Pacer {
  /** When the next packet may go (ns; fractional, the gaps are exact). */
  private nextAt = 0;
  private timer: TimerId | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly rate: RateSource,
    private readonly resume: () => void,
  ) {}

  /** True when a packet may go now; otherwise arms the resume timer (once) and returns false. */
  admit(): boolean {
    if (!this.rate.limited) return true;
    const now = this.clock.now();
    if (now >= this.nextAt) return true;
    if (this.timer === null) {
      this.timer = this.clock.schedule(Math.ceil(this.nextAt), () => {
        this.timer = null;
        this.resume();
      });
    }
    return false;
  }

  /** A packet of `bytes` (its Ethernet frame) went out: the next may go one gap later. */
  sent(bytes: number): void {
    if (!this.rate.limited) {
      this.nextAt = 0;
      return;
    }
    const now = this.clock.now();
    this.nextAt = Math.max(now, this.nextAt) + (bytes * 8000) / this.rate.currentRate;
  }

  /** The rate changed: a wait armed for a slower rate is cut short (the requester re-asks). */
  rateChanged(): void {
    if (this.timer === null) return;
    if (!this.rate.limited) {
      this.nextAt = 0;
      this.clock.cancel(this.timer);
      this.timer = null;
      this.resume();
    }
  }

  /** Cancels a pending resume (QP reset, error or destroy). */
  stop(): void {
    if (this.timer !== null) this.clock.cancel(this.timer);
    this.timer = null;
    this.nextAt = 0;
  }
}
