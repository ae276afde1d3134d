/**
 * When each of a flow's recent request PSNs was last sent, and the first request after it: what
 * a loss-recovery episode reads when the PSN is sent again (episodes.ts `TxInfo`). A ring of the
 * last `TX_RING` transmissions, indexed by PSN, in typed arrays: constant memory and no object per
 * request (a Map of objects was a fifth of `roce analyze`'s time on its own thread).
 */
import type { TxInfo } from './episodes';

/** Transmissions remembered: a PSN sent again after this many others is looked up in vain. */
export const TX_RING = 4096;
const MASK = TX_RING - 1;

export class TxRing {
  private readonly psn = new Int32Array(TX_RING).fill(-1);
  /** The transmission count when the slot was written: a slot older than `TX_RING` transmissions is stale. */
  private readonly seq = new Float64Array(TX_RING);
  private readonly frame = new Float64Array(TX_RING);
  private readonly timeNs = new Float64Array(TX_RING);
  private readonly followerFrame = new Float64Array(TX_RING);
  private readonly followerNs = new Float64Array(TX_RING);
  private sent = 0;

  /** The slot of `psn`, or -1 when it is not among the last `TX_RING` transmissions. */
  private slot(psn: number): number {
    const i = psn & MASK;
    return this.psn[i] === psn && this.sent - (this.seq[i] as number) <= TX_RING ? i : -1;
  }

  has(psn: number): boolean {
    return this.slot(psn) >= 0;
  }

  /** `psn`'s last transmission, or undefined. */
  get(psn: number): TxInfo | undefined {
    const i = this.slot(psn);
    if (i < 0) return undefined;
    return { frame: this.frame[i] as number, timeNs: this.timeNs[i] as number, followerFrame: this.followerFrame[i] as number, followerNs: this.followerNs[i] as number };
  }

  /** `psn` sent in `frame` at `timeNs`. */
  record(psn: number, frame: number, timeNs: number): void {
    const i = psn & MASK;
    this.psn[i] = psn;
    this.seq[i] = ++this.sent;
    this.frame[i] = frame;
    this.timeNs[i] = timeNs;
    this.followerFrame[i] = 0;
    this.followerNs[i] = 0;
  }

  /** The first request after `psn` with a later PSN, if none was noted yet. */
  follow(psn: number, frame: number, timeNs: number): void {
    const i = this.slot(psn);
    if (i < 0 || this.followerFrame[i] !== 0) return;
    this.followerFrame[i] = frame;
    this.followerNs[i] = timeNs;
  }
}
