/**
 * Completion queues: a bounded FIFO of work completions with polling and
 * notification (ibv_req_notify_cq + completion channel), offered here as a
 * callback and as an async iterator of completions.
 */
import type { WorkCompletion } from './work-completion';
import { VerbsError, VerbsErrorCode, invalid } from './errors';

/** A completion queue (`ibv_cq`): work completions in order, polled by the application, with notification. */
export class CompletionQueue {
  private readonly ring: WorkCompletion[] = [];
  private head = 0;
  private armed = false;
  private solicitedOnly = false;
  private listeners: (() => void)[] = [];
  /** True once a completion was lost to a full queue (a CQ overrun is an error: rxe_cq_post() refuses the entry and raises IB_EVENT_CQ_ERR). */
  overrun = false;
  /** Completions ever pushed. */
  total = 0;

  constructor(readonly depth: number) {
    if (!Number.isInteger(depth) || depth < 1 || depth > 1 << 22) throw invalid(`createCq: depth must be 1..${1 << 22}, got ${depth}`);
  }

  get size(): number {
    return this.ring.length - this.head;
  }

  /** Called by the stack. Returns false (and marks the CQ overrun) when full. */
  push(wc: WorkCompletion, solicited = false): boolean {
    if (this.size >= this.depth) {
      this.overrun = true;
      return false;
    }
    this.ring.push(wc);
    this.total++;
    if (this.armed && (!this.solicitedOnly || solicited || wc.status !== 0)) {
      this.armed = false;
      for (const l of this.listeners) queueMicrotask(l);
    }
    return true;
  }

  /** Takes up to `max` completions, oldest first. */
  poll(max = 16): WorkCompletion[] {
    const n = Math.min(max, this.size);
    const out = this.ring.slice(this.head, this.head + n);
    this.head += n;
    if (this.head > 1024 && this.head * 2 > this.ring.length) {
      this.ring.splice(0, this.head);
      this.head = 0;
    }
    return out;
  }

  /** Arms a one-shot notification for the next completion (or the next solicited one). */
  reqNotify(solicitedOnly = false): void {
    this.armed = true;
    this.solicitedOnly = solicitedOnly;
  }

  /** Registers a listener for notifications (the completion channel). */
  onNotify(fn: () => void): () => void {
    this.listeners.push(fn);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== fn);
    };
  }

  /** Waits for the next notification, then polls. */
  async next(max = 16): Promise<WorkCompletion[]> {
    const now = this.poll(max);
    if (now.length > 0) return now;
    await new Promise<void>((resolve) => {
      const off = this.onNotify(() => {
        off();
        resolve();
      });
      this.reqNotify();
    });
    return this.poll(max);
  }

  /** Completions as they come (event mode, like ibv_get_cq_event + poll). */
  async *[Symbol.asyncIterator](): AsyncGenerator<WorkCompletion> {
    for (;;) for (const wc of await this.next()) yield wc;
  }

  assertUsable(): void {
    if (this.overrun) throw new VerbsError(VerbsErrorCode.BadState, 'completion queue overrun: completions were lost');
  }
}
