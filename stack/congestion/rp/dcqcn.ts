/**
 * The DCQCN reaction point of one QP (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, §3.2), with the knobs and the refinements of the mlx5
 * firmware (parameters.ts): a small state machine on the injected clock.
 *
 * State: current rate R_C, target rate R_T, alpha α, the timer and byte-counter stages T and BC.
 *
 *  - A QP starts unlimited (at the line rate, or rp_max_rate). The first CNP makes it limited:
 *    α ← rp_initial_alpha_value/1024, and R_C = R_T = rp_rate_to_set_on_first_cnp when that is
 *    set, else the CNP decreases the rate like any other.
 *  - Decrease (at most one per rp_rate_reduce_monitor_period; a CNP inside the period is acted
 *    on at its end): R_T ← R_C when clamping applies (rp_clamp_tgt_rate, or the rate was raised
 *    by the byte counter since the last decrease, or by the timer with rp_clamp_tgt_rate_ati);
 *    then R_C ← R_C − R_C·α/2^(rp_gd−10) (rp_gd 11: the paper's R_C(1 − α/2)), the cut bounded
 *    by rp_min_dec_fac and R_C floored at rp_min_rate; T, BC and the byte count reset, and the
 *    increase timer restarts.
 *  - Alpha, once per rp_dce_tcp_rtt: α ← (1−g)α + g when a CNP arrived in the period, else
 *    α ← (1−g)α, with 1−g = rp_dce_tcp_g/1024 (the paper's α update). Computed
 *    when needed from the periods elapsed, which is exactly the periodic timer without its events.
 *  - Increase, each time the timer (rp_time_reset µs) or the byte counter (rp_byte_reset bytes
 *    sent) expires, judged on the stages before that expiry (F = rp_threshold):
 *      max(T, BC) < F   fast recovery    R_C ← (R_T + R_C)/2
 *      min(T, BC) > F   hyper increase   R_T ← R_T + rp_hai_rate; R_C ← (R_T + R_C)/2
 *      otherwise        additive         R_T ← R_T + rp_ai_rate;  R_C ← (R_T + R_C)/2
 *    R_T never exceeds the maximum rate. The paper's hyper step grows with the stage
 *    (i·R_HAI); mlx5's is the fixed rp_hai_rate, used here.
 *  - Once R_T is at the maximum and R_C within 1 Mb/s of it (mlx5 rates are whole Mb/s), the
 *    QP is unlimited again ("once this limit is reached, RP is no longer rate limited",
 *    cong.c's rp_max_rate commit): its timers stop and the next CNP is a first CNP.
 */
import type { Clock, TimerId } from '../../../base/clock';
import type { RpParams } from '../parameters';

export const IncreaseKind = { FAST_RECOVERY: 'fast-recovery', ADDITIVE: 'additive', HYPER: 'hyper' } as const;
export type IncreaseKind = (typeof IncreaseKind)[keyof typeof IncreaseKind];

/** What the reaction point did, for tests and reports. */
export interface RpEvents {
  decreases: number;
  fastRecovery: number;
  additive: number;
  hyper: number;
  /** Times the QP went back to unlimited. */
  released: number;
}

const US = 1000;

export class DcqcnReactionPoint {
  private limitedFlag = false;
  private rc: number;
  private rt: number;
  private alphaValue = 0;
  /** Start of the current alpha period, and whether a CNP arrived in it. */
  private alphaEpoch = 0;
  private cnpInPeriod = false;
  private lastDecreaseAt = Number.NEGATIVE_INFINITY;
  private pendingDecrease: TimerId | null = null;
  private increaseTimer: TimerId | null = null;
  private timerStage = 0;
  private byteStage = 0;
  private bytes = 0;
  readonly events: RpEvents = { decreases: 0, fastRecovery: 0, additive: 0, hyper: 0, released: 0 };
  /** Called after every rate change (the pacer re-times a wait on it); null for none. */
  onRateChange: (() => void) | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly p: RpParams,
    private readonly lineRateMbps: number,
  ) {
    this.rc = this.maxRate;
    this.rt = this.maxRate;
  }

  /** rp_max_rate, or the line rate when it is 0 (or above it). */
  get maxRate(): number {
    return this.p.rpMaxRate > 0 ? Math.min(this.p.rpMaxRate, this.lineRateMbps) : this.lineRateMbps;
  }

  /** True while the QP is rate-limited (between its first CNP and its recovery). */
  get limited(): boolean {
    return this.limitedFlag;
  }

  /** R_C in Mb/s. */
  get currentRate(): number {
    return this.rc;
  }

  /** R_T in Mb/s. */
  get targetRate(): number {
    return this.rt;
  }

  /** α now, as a fraction (the periods elapsed applied). */
  get alpha(): number {
    this.catchUpAlpha(this.clock.now());
    return this.alphaValue;
  }

  /** The timer and byte-counter stages since the last decrease. */
  get stages(): { timer: number; byte: number } {
    return { timer: this.timerStage, byte: this.byteStage };
  }

  /** Bytes the byte counter has counted toward its next expiry (rp_byte_reset). */
  get byteCount(): number {
    return this.bytes;
  }

  /** A CNP for this QP arrived. */
  onCnp(): void {
    const now = this.clock.now();
    const p = this.p;
    if (!this.limitedFlag) {
      this.limitedFlag = true;
      this.alphaValue = p.rpInitialAlphaValue / 1024;
      this.alphaEpoch = now;
      this.cnpInPeriod = false;
      this.rc = this.maxRate;
      this.rt = this.maxRate;
      this.timerStage = 0;
      this.byteStage = 0;
      this.bytes = 0;
      if (p.rpRateToSetOnFirstCnp > 0) {
        this.rc = Math.max(p.rpMinRate, Math.min(p.rpRateToSetOnFirstCnp, this.maxRate));
        this.rt = this.rc;
        this.lastDecreaseAt = now;
        this.restartIncreaseTimer(now);
        this.changed();
        return;
      }
      this.decrease(now);
      return;
    }
    this.catchUpAlpha(now);
    this.cnpInPeriod = true;
    const period = p.rpRateReduceMonitorPeriod * US;
    if (now - this.lastDecreaseAt >= period) {
      this.decrease(now);
    } else if (this.pendingDecrease === null) {
      this.pendingDecrease = this.clock.schedule(this.lastDecreaseAt + period, () => {
        this.pendingDecrease = null;
        if (this.limitedFlag) this.decrease(this.clock.now());
      });
    }
  }

  /** `n` bytes of this QP went on the wire: the byte counter. */
  onSent(n: number): void {
    if (!this.limitedFlag) return;
    this.bytes += n;
    const reset = this.p.rpByteReset;
    while (this.bytes >= reset && this.limitedFlag) {
      this.bytes -= reset;
      this.increase(false);
    }
  }

  /** Stops the timers and forgets the state (QP reset or destroyed). */
  stop(): void {
    this.cancelTimers();
    this.limitedFlag = false;
    this.rc = this.maxRate;
    this.rt = this.maxRate;
  }

  private decrease(now: number): void {
    const p = this.p;
    this.catchUpAlpha(now);
    if (p.rpClampTgtRate === 1 || this.byteStage > 0 || (p.rpClampTgtRateAti === 1 && this.timerStage > 0)) this.rt = this.rc;
    const cut = Math.min((this.rc * this.alphaValue) / 2 ** (p.rpGd - 10), (this.rc * (100 - p.rpMinDecFac)) / 100);
    this.rc = Math.min(this.maxRate, Math.max(p.rpMinRate, this.rc - cut));
    this.timerStage = 0;
    this.byteStage = 0;
    this.bytes = 0;
    this.lastDecreaseAt = now;
    this.events.decreases++;
    this.restartIncreaseTimer(now);
    this.changed();
  }

  private increase(byTimer: boolean): void {
    const p = this.p;
    const f = p.rpThreshold;
    const t = this.timerStage;
    const b = this.byteStage;
    if (Math.max(t, b) < f) {
      this.events.fastRecovery++;
    } else if (Math.min(t, b) > f) {
      this.rt += p.rpHaiRate;
      this.events.hyper++;
    } else {
      this.rt += p.rpAiRate;
      this.events.additive++;
    }
    const max = this.maxRate;
    if (this.rt > max) this.rt = max;
    this.rc = (this.rt + this.rc) / 2;
    if (byTimer) this.timerStage++;
    else this.byteStage++;
    if (this.rt >= max && max - this.rc < 1) {
      this.release();
      return;
    }
    this.changed();
  }

  private release(): void {
    this.cancelTimers();
    this.limitedFlag = false;
    this.rc = this.maxRate;
    this.rt = this.maxRate;
    this.timerStage = 0;
    this.byteStage = 0;
    this.bytes = 0;
    this.events.released++;
    this.changed();
  }

  /**
   * The rate-increase timer. On the real clock a timer fires late (Node's timers: a millisecond
   * or more, against rp_time_reset's 55 µs), so a firing applies every period that has elapsed
   * since the due time, each an increase as the firmware's timer would have made, and the next
   * is due on the same grid. On the virtual clock exactly one period has elapsed.
   */
  private restartIncreaseTimer(from: number): void {
    if (this.increaseTimer !== null) this.clock.cancel(this.increaseTimer);
    const period = this.p.rpTimeReset * US;
    const due = from + period;
    this.increaseTimer = this.clock.schedule(due, () => {
      this.increaseTimer = null;
      if (!this.limitedFlag) return;
      const periods = Math.max(1, Math.floor((this.clock.now() - due) / period) + 1);
      for (let i = 0; i < periods && this.limitedFlag; i++) this.increase(true);
      if (this.limitedFlag) this.restartIncreaseTimer(due + (periods - 1) * period);
    });
  }

  private cancelTimers(): void {
    if (this.increaseTimer !== null) this.clock.cancel(this.increaseTimer);
    if (this.pendingDecrease !== null) this.clock.cancel(this.pendingDecrease);
    this.increaseTimer = null;
    this.pendingDecrease = null;
  }

  /** Applies the alpha periods that ended by `now` (a CNP marks only the period it arrived in). */
  private catchUpAlpha(now: number): void {
    if (!this.limitedFlag) return;
    const period = this.p.rpDceTcpRtt * US;
    const n = Math.floor((now - this.alphaEpoch) / period);
    if (n <= 0) return;
    const keep = this.p.rpDceTcpG / 1024;
    this.alphaValue = keep * this.alphaValue + (this.cnpInPeriod ? 1 - keep : 0);
    this.cnpInPeriod = false;
    if (n > 1) this.alphaValue *= keep ** (n - 1);
    this.alphaEpoch += n * period;
  }

  private changed(): void {
    if (this.onRateChange !== null) this.onRateChange();
  }
}
