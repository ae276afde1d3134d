/**
 * A driver that wraps another and passes everything through: the base of drivers that change
 * one part of the interface (fault injection on a real link, activity notifications for the
 * perftest loops) and leave the rest to the driver inside.
 */
import type { DriverStats, NicDriver } from './driver';

export class PassThroughDriver implements NicDriver {
  constructor(protected readonly inner: NicDriver) {}

  get name(): string {
    return this.inner.name;
  }
  get mac(): number {
    return this.inner.mac;
  }
  get mtu(): number {
    return this.inner.mtu;
  }
  get stats(): DriverStats {
    return this.inner.stats;
  }
  txBurst(frames: readonly Uint8Array[]): number {
    return this.inner.txBurst(frames);
  }
  rxBurst(max: number): Uint8Array[] {
    return this.inner.rxBurst(max);
  }
  setRxHandler(fn: (() => void) | null): void {
    this.inner.setRxHandler(fn);
  }
  pollRx(): boolean {
    return this.inner.pollRx?.() ?? false;
  }
  close(): void {
    this.inner.close();
  }
  /**
   * For a wrapper that passes zero-copy transmit through: makes `txSpace` a getter of the inner
   * driver's as it is at each moment, not a copy, since a driver may lend other memory after a
   * commit (the memory link starts a new slab). The wrapper declares the member (`declare readonly
   * txSpace?: TxSpace`).
   */
  protected passTxSpace(): void {
    Object.defineProperty(this, 'txSpace', { get: () => this.inner.txSpace, enumerable: true });
  }
}
