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
   * fewer than `limit` posted; `signaled(k)` says which of its messages ask for a completion. With
   * perftest -l (post_list) each call posts exactly that many WRs, and only while the whole list
   * fits the tx depth ("scnt + post_list <= tx_depth + ccnt"); without it, one call takes every
   * WR that fits. When the run keeps the peak's samples, each WR's post time is noted (tposted).
   */
  post(side: PerftestSide, limit: number, signaled: (k: number) => boolean): void {
    const { rc } = side;
    const { qps } = side.resources();
    const list = rc.postList;
    const samples = side.measured.peakSamples;
    for (let q = 0; q < rc.qps; q++) {
      let p = this.posted[q] as number;
      const c = this.completed[q] as number;
      const room = (): boolean => (list > 1 ? p + list <= limit && p + list - c <= rc.txDepth : p < limit && p - c < rc.txDepth);
      if (!room()) continue;
      const qp = qps[q] as (typeof qps)[number];
      if (list > 1) {
        while (room()) {
          const batch: SendWr[] = [];
          for (let n = 0; n < list; n++, p++) batch.push(side.sendWr(p, signaled(p), q));
          if (samples !== null) for (let n = 0, at = side.dev.clock.now(); n < list; n++) samples.posted.push(at);
          qp.postSend(batch);
        }
      } else {
        const batch: SendWr[] = [];
        while (room()) {
          const k = p++;
          batch.push(side.sendWr(k, signaled(k), q));
        }
        if (samples !== null) for (let n = 0, at = side.dev.clock.now(); n < batch.length; n++) samples.posted.push(at);
        qp.postSend(batch);
      }
      this.totalPosted += p - (this.posted[q] as number);
      this.posted[q] = p;
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
    const samples = side.measured.peakSamples;
    for (const wc of await waits.pollSome(side.resources().sendCq, `the completion of ${what} #${this.totalCompleted}`)) {
      waits.check(wc, what);
      this.complete(Number(wc.wrId), rc.qps);
      // tcompleted[totccnt - 1]: when the completion was polled.
      if (samples !== null) samples.completed.set(this.totalCompleted - 1, side.dev.clock.now());
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
