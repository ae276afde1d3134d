/**
 * The pcap replay driver: frames come from a recording (the caller injects
 * them, in capture order, at the captured times or as fast as possible) and
 * whatever the stack transmits is kept for comparison with what the real
 * peer sent. It implements the same NicDriver interface as every driver.
 */
import { type DriverStats, type NicDriver, emptyStats } from './driver';

export class ReplayDriver implements NicDriver {
  readonly name = 'replay0';
  readonly stats: DriverStats = emptyStats();
  private sentFrames: Uint8Array[] = [];
  private rxq: Uint8Array[] = [];
  private handler: (() => void) | null = null;
  private closed = false;

  constructor(
    readonly mac: number,
    readonly mtu: number,
  ) {}

  txBurst(frames: readonly Uint8Array[]): number {
    if (this.closed) return 0;
    for (const f of frames) {
      this.sentFrames.push(f.slice());
      this.stats.txFrames++;
      this.stats.txBytes += f.length;
    }
    return frames.length;
  }

  rxBurst(max: number): Uint8Array[] {
    const out = this.rxq.splice(0, Math.max(0, max));
    this.stats.rxFrames += out.length;
    for (const f of out) this.stats.rxBytes += f.length;
    return out;
  }

  setRxHandler(fn: (() => void) | null): void {
    this.handler = fn;
  }

  close(): void {
    this.closed = true;
    this.rxq = [];
    this.handler = null;
  }

  /** Delivers recorded frames to the stack (one receive burst). */
  inject(frames: readonly Uint8Array[]): void {
    if (this.closed) return;
    for (const f of frames) this.rxq.push(f.slice());
    this.handler?.();
  }

  /** Frames the stack transmitted since the last call. */
  takeSent(): Uint8Array[] {
    const out = this.sentFrames;
    this.sentFrames = [];
    return out;
  }
}
