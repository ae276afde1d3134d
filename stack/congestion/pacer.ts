/**
 * The requester's pacer: spaces a QP's request packets at the reaction point's current rate, on
 * the injected clock (virtual in a simulation, real on the drivers). A frame of L bytes sent at
 * time t lets the next one go at t + W(L)·8/R_C, W(L) its bytes on the wire: padded to 60, plus
 * preamble, FCS and inter-frame gap (packets/wire-size.ts), so pacing at the line rate is the
 * wire's own rate. While the RP is not rate-limited the pacer lets everything through (the link
 * itself serializes at line rate) and keeps no timer.
 *
 * When the driver reports frames as they start on the wire (nic-driver/driver.ts TxBackpressure),
 * the port charges the pacer then, not when the frame is built: `built()` counts a frame waiting
 * for the wire, and the next is not admitted until it has left and its gap has passed, so a QP
 * held behind a full or paused transmit queue does not pile frames up in it (HPCC's ns-3 sets a
 * QP's next send time when its packet is dequeued for the wire, rdma-hw.cc PktSent).
 *
 * The requester asks `admit()` before each packet; a refusal arms one timer for the time the next
 * packet may go, which resumes the requester (`resume`). No credit builds up while a QP is idle:
 * the next packet after a pause goes at once, the one after it a gap later.
 *
 * `slackNs` is how late the clock's timers may fire: up to that much time the pacer lets a QP it
 * held back catch up (packets whose turn has passed go at once). On the virtual clock timers are exact and
 * the slack is 0; Node's timers on the real clock fire a millisecond or so late, and without slack
 * a QP would send one packet per timer instead of its rate.
 */
import type { Clock, TimerId } from '../../base/clock';
import { wireBytes } from '../../packets/wire-size';

export interface RateSource {
  readonly limited: boolean;
  /** Mb/s. */
  readonly currentRate: number;
}

export class Pacer {
  /** When the next packet may go (ns; fractional, the gaps are exact). */
  private nextAt = 0;
  private timer: TimerId | null = null;
  /** Resumed by the timer and not yet back on schedule: late turns may still be taken (within the slack). */
  private behind = false;
  /** The last packet's turn and size: the gap after it is recomputed when the rate changes. */
  private lastBase = 0;
  private lastBytes = 0;
  /** Frames built and not yet on the wire (only when charged at wire time), and whether the requester waits for them. */
  private unsent = 0;
  private waitWire = false;

  constructor(
    private readonly clock: Clock,
    private readonly rate: RateSource,
    private readonly resume: () => void,
    private readonly slackNs = 0,
    /** Pace at the rate while not limited too (CongestionConfig.paceUnlimited). */
    private readonly always = false,
  ) {}

  /** Whether packets are spaced now. */
  private get pacing(): boolean {
    return this.always || this.rate.limited;
  }

  /** True when a packet may go now; otherwise arms the resume timer (once) and returns false. */
  admit(): boolean {
    if (!this.pacing) return true;
    if (this.unsent > 0) {
      // The gap after a frame starts when it goes on the wire: wait until it has (sent() resumes).
      this.waitWire = true;
      return false;
    }
    const now = this.clock.now();
    if (now >= this.nextAt) return true;
    // Held back from here on: until it is back on schedule, late turns may still be taken (within
    // the slack), whatever resumes the requester first (this timer, an ACK, a new post).
    this.behind = true;
    this.armResume();
    return false;
  }

  /** Arms the timer (once) that resumes the requester at `nextAt`. */
  private armResume(): void {
    if (this.timer !== null) return;
    this.timer = this.clock.schedule(Math.ceil(this.nextAt), () => {
      this.timer = null;
      this.behind = true;
      this.resume();
    });
  }

  /** A frame was built and waits for the wire: `sent` charges it when it starts (wire-time charging). */
  built(): void {
    this.unsent++;
  }

  /**
   * A frame of `bytes` (its Ethernet frame without FCS) went out: the next may go one gap later, the
   * gap the frame's wire bytes take at the current rate. With wire-time charging, called as the
   * frame starts on the wire, and a requester waiting for it is resumed (at once, or at its turn).
   */
  sent(bytes: number): void {
    if (this.unsent > 0) this.unsent--;
    this.charge(bytes);
    this.resumeIfWaited();
  }

  /** A frame `built()` counted will never be on the wire (the driver did not take it): not charged, no longer waited for. */
  dropped(): void {
    if (this.unsent > 0) this.unsent--;
    this.resumeIfWaited();
  }

  /** Sets the next turn one gap of a frame of `bytes` after this one's. */
  private charge(bytes: number): void {
    if (!this.pacing) {
      this.nextAt = 0;
      this.behind = false;
    } else {
      const now = this.clock.now();
      let base = this.nextAt;
      if (base < now && !(this.behind && now - base <= this.slackNs)) base = now;
      const wire = wireBytes(bytes);
      this.lastBase = base;
      this.lastBytes = wire;
      this.nextAt = base + (wire * 8000) / this.rate.currentRate;
      if (this.nextAt >= now) this.behind = false;
    }
  }

  /** A requester that waited for its frames to reach the wire goes on once none is left: at once, or at its turn. */
  private resumeIfWaited(): void {
    if (this.waitWire && this.unsent === 0) {
      this.waitWire = false;
      if (!this.pacing || this.clock.now() >= this.nextAt) this.resume();
      else this.armResume();
    }
  }

  /**
   * The rate changed: the gap after the last packet is the one the new rate gives, so a wait armed
   * at a slower rate is cut short (a QP cut to the minimum rate would otherwise sit out a gap of
   * that rate after recovering), and the requester re-asks at the new time; unlimited, at once.
   */
  rateChanged(): void {
    if (this.timer === null) return;
    if (!this.pacing) {
      this.nextAt = 0;
      this.behind = false;
      this.clock.cancel(this.timer);
      this.timer = null;
      this.resume();
      return;
    }
    const at = this.lastBase + (this.lastBytes * 8000) / this.rate.currentRate;
    if (at >= this.nextAt) return; // slower: admit() re-arms when the timer fires early
    this.nextAt = at;
    this.clock.cancel(this.timer);
    this.timer = null;
    if (this.clock.now() >= at) {
      this.resume();
      return;
    }
    this.timer = this.clock.schedule(Math.ceil(at), () => {
      this.timer = null;
      this.behind = true;
      this.resume();
    });
  }

  /** Cancels a pending resume (QP reset, error or destroy). */
  stop(): void {
    if (this.timer !== null) this.clock.cancel(this.timer);
    this.timer = null;
    this.nextAt = 0;
    this.behind = false;
    this.unsent = 0;
    this.waitWire = false;
  }
}
