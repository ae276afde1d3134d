/**
 * Shared receive queue (IBTA vol. 1 §10.2.9): receive WQEs that several QPs
 * draw from, with the limit event (ibv_modify_srq srq_limit): when the number
 * of WQEs falls below the limit, the listener runs once and the limit disarms.
 */
import type { ProtectionDomain } from './memory-region';
import { type RecvWqe, type RecvWr, makeRecvWqe } from './work-request';
import { VerbsError, VerbsErrorCode, invalid } from './errors';

/** A shared receive queue (`ibv_srq`): receive work requests several QPs take from. */
export class SharedReceiveQueue {
  private readonly q: RecvWqe[] = [];
  private limit = 0;
  private limitListener: (() => void) | null = null;

  constructor(
    readonly pd: ProtectionDomain,
    readonly maxWr: number,
    readonly maxSge: number,
  ) {
    if (!Number.isInteger(maxWr) || maxWr < 1 || maxWr > 1 << 20) throw invalid(`createSrq: maxWr must be 1..${1 << 20}`);
  }

  get size(): number {
    return this.q.length;
  }

  postRecv(wrs: RecvWr | readonly RecvWr[]): void {
    const list = Array.isArray(wrs) ? (wrs as readonly RecvWr[]) : [wrs as RecvWr];
    if (this.q.length + list.length > this.maxWr)
      throw new VerbsError(VerbsErrorCode.QueueFull, `srq postRecv: queue full (${this.q.length} of ${this.maxWr})`);
    const wqes = list.map((wr) => makeRecvWqe(wr, this.maxSge));
    for (const w of wqes) this.q.push(w);
  }

  /** Arms the limit event: `fn` runs once when fewer than `limit` WQEs remain. */
  setLimit(limit: number, fn: () => void): void {
    this.limit = limit;
    this.limitListener = fn;
  }

  take(): RecvWqe | null {
    const w = this.q.shift() ?? null;
    if (w !== null && this.limitListener !== null && this.q.length < this.limit) {
      const fn = this.limitListener;
      this.limitListener = null;
      queueMicrotask(fn);
    }
    return w;
  }
}
