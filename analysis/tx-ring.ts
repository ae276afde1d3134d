/**
 * When each of a flow's recent request PSNs was last sent, and the first request after it: what
 * a loss-recovery episode reads when the PSN is sent again (episodes.ts `TxInfo`). A ring of the
 * last `TX_RING` transmissions, indexed by PSN, in typed arrays: constant memory and no object per
 * request (a Map of objects was a fifth of `roce analyze`'s time on its own thread).
 *
 * The ring starts small and doubles, up to `TX_RING` slots, when a PSN would take the slot of
 * another still remembered: so a lookup finds what a ring of `TX_RING` slots would, while a flow of
 * a few requests costs a few hundred bytes, not 180 KB. A capture of 20 000 QPs had needed 4 GB
 * (docs/performance.md, "Many conversations in little memory").
 */
import type { TxInfo } from './episodes';

/** Transmissions remembered: a PSN sent again after this many others is looked up in vain. */
export const TX_RING = 4096;
/** Slots of a new flow's ring. */
const FIRST_SLOTS = 16;

/** Numbers per slot in `data`: seq, frame, timeNs, followerFrame, followerNs. */
const FIELDS = 6;
const SEQ = 0;
const FRAME = 1;
const TIME = 2;
const FOLLOWER_FRAME = 3;
const FOLLOWER_NS = 4;
/** Transmissions of the slot's PSN while it stayed remembered. */
const COUNT = 5;
/** The frame of a transmission the capture does not hold (frames count from 1). */
const UNSEEN_FRAME = -1;

export class TxRing {
  private mask = FIRST_SLOTS - 1;
  private psn = new Int32Array(FIRST_SLOTS).fill(-1);
  /**
   * Per slot (FIELDS numbers): the transmission count when it was written (a slot older than
   * `TX_RING` transmissions is stale), the frame and time, and the first request after it.
   */
  private data = new Float64Array(FIRST_SLOTS * FIELDS);
  private sent = 0;

  /** Slots now (for tests): it grows only when a PSN would take the slot of another still remembered. */
  get slots(): number {
    return this.mask + 1;
  }

  /** Whether slot `i` holds a transmission still remembered (one of the last `TX_RING`). */
  private live(i: number): boolean {
    return this.psn[i] !== -1 && this.sent - (this.data[i * FIELDS + SEQ] as number) <= TX_RING;
  }

  /** The slot of `psn`, or -1 when it is not among the last `TX_RING` transmissions. */
  private slot(psn: number): number {
    const i = psn & this.mask;
    return this.psn[i] === psn && this.live(i) ? i : -1;
  }

  has(psn: number): boolean {
    return this.slot(psn) >= 0;
  }

  /** `psn`'s last transmission, or undefined. */
  get(psn: number): TxInfo | undefined {
    const i = this.slot(psn);
    if (i < 0) return undefined;
    const d = this.data;
    const k = i * FIELDS;
    const frame = d[k + FRAME] as number;
    return {
      frame: frame === UNSEEN_FRAME ? null : frame,
      timeNs: frame === UNSEEN_FRAME ? null : (d[k + TIME] as number),
      followerFrame: d[k + FOLLOWER_FRAME] as number,
      followerNs: d[k + FOLLOWER_NS] as number,
    };
  }

  /** `psn` sent in `frame` at `timeNs`. */
  record(psn: number, frame: number, timeNs: number): void {
    let i = psn & this.mask;
    // Below full size, a slot still remembered for another PSN makes the ring grow instead of
    // forgetting it (at full size it is forgotten, as a ring of TX_RING slots forgets it).
    while (this.mask + 1 < TX_RING && this.psn[i] !== psn && this.live(i)) {
      this.grow();
      i = psn & this.mask;
    }
    const d = this.data;
    const k = i * FIELDS;
    d[k + COUNT] = this.psn[i] === psn && this.live(i) ? (d[k + COUNT] as number) + 1 : 1;
    this.psn[i] = psn;
    d[k + SEQ] = ++this.sent;
    d[k + FRAME] = frame;
    d[k + TIME] = timeNs;
    d[k + FOLLOWER_FRAME] = 0;
    d[k + FOLLOWER_NS] = 0;
  }

  /**
   * A transmission of `psn` the capture does not hold: a go-back-N burst went from an earlier PSN
   * to a later one, so its copy of `psn` was lost before the capture point (or the requester
   * skipped it). Its frame and time are unknown, and the request after it is `frame` (the one past
   * the skip): a gap at `psn` shows from there, not from the request after an earlier copy, which
   * a responder waiting for an earlier PSN threw away (IBTA vol. 1 §9.7.5.2.2). The copies counted
   * stay those captured.
   */
  unseen(psn: number, frame: number, timeNs: number): void {
    const count = this.copies(psn);
    this.record(psn, UNSEEN_FRAME, 0);
    const k = this.slot(psn) * FIELDS;
    this.data[k + COUNT] = count;
    this.data[k + FOLLOWER_FRAME] = frame;
    this.data[k + FOLLOWER_NS] = timeNs;
  }

  /** How many times `psn` was sent while remembered (0 when it is not). */
  copies(psn: number): number {
    const i = this.slot(psn);
    return i < 0 ? 0 : (this.data[i * FIELDS + COUNT] as number);
  }

  /** The first request after `psn` with a later PSN, if none was noted yet. */
  follow(psn: number, frame: number, timeNs: number): void {
    const i = this.slot(psn);
    if (i < 0) return;
    const k = i * FIELDS;
    if (this.data[k + FOLLOWER_FRAME] !== 0) return;
    this.data[k + FOLLOWER_FRAME] = frame;
    this.data[k + FOLLOWER_NS] = timeNs;
  }

  /**
   * Doubles the ring, moving what it remembers. Two PSNs remembered are in different slots of the
   * smaller ring (one never takes the other's), so they are in different slots of the larger one.
   */
  private grow(): void {
    const n = (this.mask + 1) * 2;
    const mask = n - 1;
    const psn = new Int32Array(n).fill(-1);
    const data = new Float64Array(n * FIELDS);
    for (let i = 0; i <= this.mask; i++) {
      if (!this.live(i)) continue;
      const p = this.psn[i] as number;
      const j = p & mask;
      psn[j] = p;
      data.set(this.data.subarray(i * FIELDS, (i + 1) * FIELDS), j * FIELDS);
    }
    this.mask = mask;
    this.psn = psn;
    this.data = data;
  }
}
