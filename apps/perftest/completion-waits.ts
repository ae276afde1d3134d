/**
 * How the measured loops wait for the work they posted: they poll a completion
 * queue and, while it is empty, yield to the event loop (`idle`: the next turn
 * by default, as the C tools spin on ibv_poll_cq; a host device not in
 * busy-poll mode sleeps until frames arrive), so the same loops run on a
 * RealClock and on a VirtualClock driven by `pumpVirtualClock`. A wait gives up
 * after the run timeout, and fails at once when the QP went to the error state.
 */
import type { DriverStats } from '../../nic-driver/driver';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import { QpState, WC_STATUS_NAMES, WcStatus, type WorkCompletion } from '../../stack/types';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { qpStateReport } from './qp-state-report';

/** The queues a wait watches (null before they exist). */
export interface WatchedQueues {
  readonly qp: QueuePair | null;
  readonly sendCq: CompletionQueue | null;
  readonly recvCq: CompletionQueue | null;
  /** The device the QP lives on (its driver's counters go into a stall report). */
  readonly dev: { readonly driver: { readonly name: string; readonly stats: DriverStats } };
}

export class CompletionWaits {
  constructor(
    /** The tool's name, for messages (ib_write_bw, ...). */
    private readonly binary: string,
    readonly runTimeoutMs: number,
    /** Waits when there is nothing to poll. */
    readonly idle: () => Promise<void>,
    private readonly queues: WatchedQueues,
  ) {}

  /** Throws a COMPLETION error when `wc` did not succeed. */
  check(wc: WorkCompletion, what: string): void {
    if (wc.status !== WcStatus.SUCCESS) {
      throw new PerftestError(PerftestErrorCode.COMPLETION, `${this.binary}: ${what} #${wc.wrId} completed with ${WC_STATUS_NAMES[wc.status] ?? wc.status}${wc.vendorErr ? ` (${wc.vendorErr})` : ''}${this.where()}`, 'completion');
    }
  }

  /** Polls `cq` until it yields at least one completion. */
  async pollSome(cq: CompletionQueue, what: string, max = 64): Promise<WorkCompletion[]> {
    const deadline = Date.now() + this.runTimeoutMs;
    for (;;) {
      const wcs = cq.poll(max);
      if (wcs.length > 0) return wcs;
      this.assertAlive(what);
      if (Date.now() > deadline) throw this.timeout(`no completion within ${this.runTimeoutMs} ms while waiting for ${what}`);
      await this.idle();
    }
  }

  /** Waits until `cond` holds. */
  async waitFor(cond: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + this.runTimeoutMs;
    while (!cond()) {
      this.assertAlive(what);
      if (Date.now() > deadline) throw this.timeout(`timed out after ${this.runTimeoutMs} ms waiting for ${what}`);
      await this.idle();
    }
  }

  /**
   * The TIMEOUT error of a wait that saw no progress: `what` happened, followed by where the QP
   * stands (qp-state-report.ts), so a stall says whether the window stayed closed, the retransmit
   * timer was not armed or frames stopped arriving.
   */
  timeout(what: string): PerftestError {
    return new PerftestError(PerftestErrorCode.TIMEOUT, `${this.binary}: ${what}${this.where()}`, 'completion');
  }

  /** Where the QP stands, in brackets after a message (empty before the QP exists). */
  private where(): string {
    const qp = this.queues.qp;
    return qp !== null ? ` [${qpStateReport(qp, this.queues.dev.driver)}]` : '';
  }

  /** Throws when the QP went to the error state, with the error completion that explains it if there is one. */
  assertAlive(what: string): void {
    const { qp, sendCq, recvCq } = this.queues;
    if (qp !== null && qp.state === QpState.ERR) {
      // The error completion (if any) explains it; report the QP's reason when there is none.
      const wcs = [...(sendCq?.poll(1) ?? []), ...(recvCq?.poll(1) ?? [])];
      for (const wc of wcs) this.check(wc, what);
      throw new PerftestError(PerftestErrorCode.COMPLETION, `${this.binary}: QP 0x${qp.qpNum.toString(16)} went to the error state while waiting for ${what}: ${qp.errorReason}`, 'qp');
    }
  }
}
