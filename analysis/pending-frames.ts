/**
 * The frames whose flags may still change (flagged outOfSequence, until the responses say whether
 * the hole was the capture's), by frame number, at most `limit` of them: past that the oldest is let
 * go. Frames come in increasing order, so the oldest is the first still held in a queue of the
 * numbers as they came; taking it costs O(1) on average.
 *
 * A Map alone, asked for its first key after each deletion, walked over every entry deleted before
 * it until the table was rebuilt: with 65 536 frames held, captures whose requests were all out of
 * sequence slowed to 30–70 k frames/s (docs/performance.md, "Out-of-sequence frames in constant time").
 */
import type { FrameResult } from './types';

export class PendingFrames {
  private readonly byFrame = new Map<number, FrameResult>();
  /** Frame numbers in the order they came, from `head` on; some may have been deleted since. */
  private order: number[] = [];
  private head = 0;

  constructor(private readonly limit: number) {}

  get(frame: number): FrameResult | undefined {
    return this.byFrame.get(frame);
  }

  /** Holds `frame` (newer than any held); returns the oldest let go to stay within the limit, if any. */
  add(frame: number, r: FrameResult): FrameResult | undefined {
    this.byFrame.set(frame, r);
    this.order.push(frame);
    // Frames whose flags became final leave the map, not the queue: once the queue is more than
    // twice what is held, it keeps only those (each frame is copied O(1) times on average).
    if (this.order.length - this.head > 2 * this.byFrame.size + 1024) {
      this.order = this.order.slice(this.head).filter((f) => this.byFrame.has(f));
      this.head = 0;
    }
    if (this.byFrame.size <= this.limit) return undefined;
    for (;;) {
      const oldest = this.order[this.head++] as number;
      const gone = this.byFrame.get(oldest);
      if (gone === undefined) continue; // its flags became final meanwhile
      this.byFrame.delete(oldest);
      if (this.head > 1024 && this.head * 2 > this.order.length) {
        this.order = this.order.slice(this.head);
        this.head = 0;
      }
      return gone;
    }
  }

  delete(frame: number): void {
    this.byFrame.delete(frame);
  }

  /** Frame numbers in the queue, held or not: at most twice those held and 1 026 more. */
  get queued(): number {
    return this.order.length - this.head;
  }

  /** The frames held, oldest first. */
  values(): IterableIterator<FrameResult> {
    return this.byFrame.values();
  }

  clear(): void {
    this.byFrame.clear();
    this.order = [];
    this.head = 0;
  }
}
