/**
 * The driver wrapper of a host device: it tells waiters when the device has
 * processed a receive burst, and keeps the event loop polling for a while
 * after each burst (the receive linger, HostDeviceOptions.rxLingerUs).
 */
import { type NicDriver, type TxSpace, hasRunReceive, hasZeroCopyTx } from '../../nic-driver/driver';
import { PassThroughDriver } from '../../nic-driver/pass-through-driver';

const EMPTY = new Uint8Array(0);

/**
 * A driver that tells waiters when its receive handler has run (the device has then processed a
 * burst: completions may be in the CQs, RDMA WRITEs in memory), and keeps the event loop polling for
 * the receive linger after each burst (HostDeviceOptions.rxLingerUs). Everything else is passed through.
 */
export class ActivityDriver extends PassThroughDriver {
  /** One shared wait: resolved by the next receive burst or its fallback timer, whichever comes first. */
  private pending: { promise: Promise<void>; resolve: () => void; timer: NodeJS.Timeout } | null = null;
  /** Zero-copy transmit, passed through when the inner driver has it (nic-driver/driver.ts): a getter (PassThroughDriver.passTxSpace). */
  declare readonly txSpace?: TxSpace;
  readonly txReserve?: (len: number) => number;
  readonly txCommit?: () => number;
  /** Descriptor receive, passed through when the inner driver has it (driver.ts RunReceive); the wake-up comes from the handler. */
  readonly rxRun?: (max: number, desc: Uint32Array) => number;
  /** Receive linger (see HostDeviceOptions.rxLingerUs), in ms for performance.now(); 0 = none. */
  private readonly lingerMs: number;
  private lastRxAt = 0;
  private lingering = false;
  private closed = false;
  /**
   * One turn of the linger: while a burst arrived within the window, queue another turn. A queued
   * immediate makes libuv poll without sleeping, so the driver's fd is checked on every turn and
   * its handler runs as frames come, with no wake-up from the kernel.
   */
  private readonly lingerTurn = (): void => {
    if (!this.closed && performance.now() - this.lastRxAt < this.lingerMs) setImmediate(this.lingerTurn);
    else this.lingering = false;
  };
  constructor(inner: NicDriver, lingerUs = 0) {
    super(inner);
    this.lingerMs = lingerUs / 1000;
    if (hasZeroCopyTx(inner)) {
      this.passTxSpace();
      this.txReserve = (len) => inner.txReserve(len);
      this.txCommit = () => inner.txCommit();
    }
    if (hasRunReceive(inner)) this.rxRun = (max, desc) => inner.rxRun(max, desc);
  }
  /** The buffer of the inner driver's last run (driver.ts RunReceive; empty without the extension). */
  get rxRunBuffer(): Uint8Array {
    const inner = this.inner;
    return hasRunReceive(inner) ? inner.rxRunBuffer : EMPTY;
  }
  override setRxHandler(fn: (() => void) | null): void {
    this.inner.setRxHandler(
      fn === null
        ? null
        : () => {
            fn();
            this.wake();
            this.linger();
          },
    );
  }
  override close(): void {
    this.closed = true;
    this.wake();
    super.close();
  }
  /** True while the receive linger keeps the event loop polling (a burst came within the window). */
  get lingeringNow(): boolean {
    return this.lingering;
  }
  private linger(): void {
    if (this.lingerMs <= 0) return;
    this.lastRxAt = performance.now();
    if (this.lingering) return;
    this.lingering = true;
    setImmediate(this.lingerTurn);
  }
  private wake(): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    clearTimeout(p.timer);
    p.resolve();
  }
  /** Resolves after the next receive burst, or after `fallbackMs` (timers, such as a retransmission, complete work too). */
  waitForActivity(fallbackMs: number): Promise<void> {
    if (this.pending === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.pending = { promise, resolve, timer: setTimeout(() => this.wake(), fallbackMs) };
    }
    return this.pending.promise;
  }
}
