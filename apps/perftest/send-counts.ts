/**
 * Where each QP of a sending loop stands (perftest's scnt and ccnt): messages posted and completed
 * per QP, and how run_iter_bw posts (each QP in turn, up to tx depth outstanding).
 */
import type { SendWr } from '../../stack/work-request';
import type { PerftestSide } from './perftest-side';

/** Where each QP of a sending loop stands: messages posted and completed, per QP. */
export class SendCounts {
  readonly posted: number[];
  readonly completed: number[];
  totalPosted = 0;
  totalCompleted = 0;

  constructor(qps: number) {
    this.posted = new Array<number>(qps).fill(0);
    this.completed = new Array<number>(qps).fill(0);
  }

  /**
   * run_iter_bw's posting: each QP in turn posts while it has fewer than tx depth outstanding and
   * fewer than `limit` posted; `signaled(k)` says which of its messages ask for a completion.
   */
  post(side: PerftestSide, limit: number, signaled: (k: number) => boolean): void {
    const { rc } = side;
    const { qps } = side.resources();
    for (let q = 0; q < rc.qps; q++) {
      let p = this.posted[q] as number;
      const c = this.completed[q] as number;
      if (p >= limit || p - c >= rc.txDepth) continue;
      const batch: SendWr[] = [];
      while (p < limit && p - c < rc.txDepth) {
        const k = p++;
        batch.push(side.sendWr(k, signaled(k), q));
      }
      this.totalPosted += p - (this.posted[q] as number);
      this.posted[q] = p;
      (qps[q] as (typeof qps)[number]).postSend(batch);
    }
  }

  /**
   * After a loop that signals every cq_mod-th request only: each QP's tail may be unsignaled, and
   * one more signaled request completes it (RC completes in order).
   */
  signalTails(side: PerftestSide): void {
    const { rc } = side;
    const { qps } = side.resources();
    for (let q = 0; q < rc.qps; q++) {
      const p = this.posted[q] as number;
      if ((this.completed[q] as number) < p && p % rc.cqMod !== 0) {
        (qps[q] as (typeof qps)[number]).postSend(side.sendWr(p, true, q));
        this.posted[q] = p + 1;
        this.totalPosted++;
      }
    }
  }

  /**
   * Waits for send completions (at least one), checks each and counts it; `what` names the
   * requests in messages (the verb, upper case, by default).
   */
  async reap(side: PerftestSide, what = side.rc.verb.toUpperCase()): Promise<void> {
    const { waits, rc } = side;
    for (const wc of await waits.pollSome(side.resources().sendCq, `the completion of ${what} #${this.totalCompleted}`)) {
      waits.check(wc, what);
      this.complete(Number(wc.wrId), rc.qps);
    }
  }

  /** A send completion: RC completes in order, so a signaled message completes every one of its QP posted before it. */
  complete(wrId: number, qpCount: number): void {
    const q = wrId % qpCount;
    const done = Math.floor(wrId / qpCount) + 1;
    this.totalCompleted += done - (this.completed[q] as number);
    this.completed[q] = done;
  }
}
