/**
 * The DCQCN reaction point as the model oracles (dcqcn-marks-model.ts, dcqcn-hybrid-model.ts)
 * read mlx5's rules: the monitor period, target-rate clamping, the cut bounded by
 * rp_min_dec_fac, α per rp_dce_tcp_rtt, the timer and the byte counter restarting at a cut,
 * fast recovery, additive and hyper increase, and the release to unlimited (docs/congestion.md
 * lists the rules and their sources). Times in µs, rates in Mb/s of frame bytes.
 *
 * It shares no code with stack/congestion/rp/dcqcn.ts, which runs on a Clock with scheduled
 * timers: this one is driven from outside, by `due()` and `runDue(t)`, so that a model can step
 * many of them on its own time and read their rates between events.
 */

/** The RP's and NP's settings, named as the mlx5 parameters (Mb/s, µs). */
export interface ModelRules {
  rpRateReduceMonitorPeriod: number;
  rpClampTgtRate: 0 | 1;
  rpClampTgtRateAti: 0 | 1;
  rpTimeReset: number;
  rpByteReset: number;
  rpThreshold: number;
  rpAiRate: number;
  rpHaiRate: number;
  rpMinDecFac: number;
  rpMinRate: number;
  rpRateToSetOnFirstCnp: number;
  rpDceTcpG: number;
  rpDceTcpRtt: number;
  rpInitialAlphaValue: number;
  rpGd: number;
  npMinTimeBetweenCnps: number;
}

const NEVER = Number.POSITIVE_INFINITY;
// Read once: a global's lookup costs much more inside a vm context (the test runner's) than a local's.
const { min, max: maxOf } = Math;

export class ModelReactionPoint {
  limited = false;
  /** R_C and R_T, Mb/s. */
  rc: number;
  rt: number;
  alpha = 0;
  /** Rate decreases so far. */
  decreases = 0;
  /**
   * A limit, Mb/s, that something other than the RP puts on what the flow sends (the transport's
   * window): it sends min(R_C, cap), and the byte counter counts what it sends.
   */
  cap = NEVER;
  private alphaDue = NEVER;
  private cnpInPeriod = false;
  private lastDecrease = Number.NEGATIVE_INFINITY;
  private pendingDue = NEVER;
  private timerDue = NEVER;
  private timerStage = 0;
  private byteStage = 0;
  /** Bytes sent since the byte counter's last expiry, as of `at`. */
  private bytes = 0;
  private at = 0;
  private readonly keep: number;

  constructor(
    private readonly r: ModelRules,
    private readonly maxRate: number,
  ) {
    this.rc = maxRate;
    this.rt = maxRate;
    this.keep = r.rpDceTcpG / 1024;
  }

  /** What the flow sends, Mb/s: R_C, or the cap when that is lower. */
  get sendRate(): number {
    return min(this.rc, this.cap);
  }

  /** The time of the RP's next own event (timer, byte counter, α period, a deferred cut), or Infinity. */
  due(): number {
    if (!this.limited) return NEVER;
    return min(this.alphaDue, this.pendingDue, this.timerDue, this.bytesDue());
  }

  private bytesDue(): number {
    const rate = this.sendRate;
    return rate > 0 ? this.at + ((this.r.rpByteReset - this.bytes) * 8) / rate : NEVER;
  }

  /** Runs every own event due by `t`, each at its own time, then counts bytes up to `t`. */
  runDue(t: number): void {
    for (let next = this.due(); next <= t; next = this.due()) this.fire(next);
    this.advance(t);
  }

  /** A CNP reached the RP at `t` (after runDue(t)). */
  cnp(t: number): void {
    const r = this.r;
    this.advance(t);
    if (!this.limited) {
      // Unlimited, R_C and R_T are at the maximum and the stages and the byte count at 0 (the
      // constructor, release): the first CNP starts α and its period.
      this.limited = true;
      this.alpha = r.rpInitialAlphaValue / 1024;
      this.alphaDue = t + r.rpDceTcpRtt;
      this.cnpInPeriod = false;
      if (r.rpRateToSetOnFirstCnp > 0) {
        this.rc = maxOf(r.rpMinRate, min(r.rpRateToSetOnFirstCnp, this.maxRate));
        this.rt = this.rc;
        this.lastDecrease = t;
        this.timerDue = t + r.rpTimeReset;
        return;
      }
      this.decrease(t);
      return;
    }
    this.cnpInPeriod = true;
    if (t - this.lastDecrease >= r.rpRateReduceMonitorPeriod) this.decrease(t);
    else if (this.pendingDue === NEVER) this.pendingDue = this.lastDecrease + r.rpRateReduceMonitorPeriod;
  }

  private advance(t: number): void {
    if (this.limited) this.bytes += (this.sendRate * (t - this.at)) / 8;
    this.at = t;
  }

  private fire(t: number): void {
    const r = this.r;
    const bytesAt = this.bytesDue();
    this.advance(t);
    if (t === this.alphaDue) {
      this.alpha = this.keep * this.alpha + (this.cnpInPeriod ? 1 - this.keep : 0);
      this.cnpInPeriod = false;
      this.alphaDue += r.rpDceTcpRtt;
    } else if (t === this.pendingDue) {
      this.decrease(t);
    } else if (t === this.timerDue) {
      this.timerDue += r.rpTimeReset;
      this.increase(true);
    } else if (t === bytesAt) {
      this.bytes = 0;
      this.increase(false);
    }
  }

  private decrease(t: number): void {
    const r = this.r;
    if (r.rpClampTgtRate === 1 || this.byteStage > 0 || (r.rpClampTgtRateAti === 1 && this.timerStage > 0)) this.rt = this.rc;
    const cut = min((this.rc * this.alpha) / 2 ** (r.rpGd - 10), (this.rc * (100 - r.rpMinDecFac)) / 100);
    this.rc = min(this.maxRate, maxOf(r.rpMinRate, this.rc - cut));
    this.timerStage = 0;
    this.byteStage = 0;
    this.bytes = 0;
    this.lastDecrease = t;
    this.pendingDue = NEVER;
    this.timerDue = t + r.rpTimeReset;
    this.decreases++;
  }

  private increase(byTimer: boolean): void {
    const r = this.r;
    const f = r.rpThreshold;
    if (maxOf(this.timerStage, this.byteStage) < f) {
      // fast recovery: R_T stays
    } else if (min(this.timerStage, this.byteStage) > f) this.rt += r.rpHaiRate;
    else this.rt += r.rpAiRate;
    if (this.rt > this.maxRate) this.rt = this.maxRate;
    this.rc = (this.rt + this.rc) / 2;
    if (byTimer) this.timerStage++;
    else this.byteStage++;
    if (this.rt >= this.maxRate && this.maxRate - this.rc < 1) this.release();
  }

  private release(): void {
    this.limited = false;
    this.rc = this.maxRate;
    this.rt = this.maxRate;
    this.timerStage = 0;
    this.byteStage = 0;
    this.bytes = 0;
    this.alphaDue = NEVER;
    this.pendingDue = NEVER;
    this.timerDue = NEVER;
  }
}

/** The NP's rule: a CNP at a mark at least np_min_time_between_cnps after the last one. */
export class ModelNotificationPoint {
  private last = Number.NEGATIVE_INFINITY;
  constructor(private readonly intervalUs: number) {}
  /** A mark at `t`: true when it earns a CNP. */
  mark(t: number): boolean {
    if (t - this.last < this.intervalUs) return false;
    this.last = t;
    return true;
  }
}
