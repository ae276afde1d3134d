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
import { QpState } from '../../stack/qp-type-and-state';
import { WC_STATUS_NAMES, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { qpStateReport } from './qp-state-report';
import type { NoProgressBound } from '../host/no-progress-bound';

/** Where the QP's transport stands: it changes when a response moved the retry point or a request was taken (real progress, not ghosts). */
export function progressMark(qp: QueuePair | null): number {
  return qp === null ? -1 : qp.comp.psn * 0x1000000 + qp.resp.psn;
}

/** Where a test's QPs (perftest -q) stand together: it changes when any of them makes progress. */
export function progressMarkAll(qps: readonly QueuePair[]): number {
  let m = 0;
  for (const qp of qps) m += progressMark(qp);
  return m;
}

/** The QP a message about `qps` names: the first in the error state, else the first. */
function namedQp(qps: readonly QueuePair[]): QueuePair | null {
  return qps.find((q) => q.state === QpState.ERR) ?? qps[0] ?? null;
}

/** The queues a wait watches (empty or null before they exist). */
export interface WatchedQueues {
  /** The test's QPs (one, or perftest -q of them). */
  readonly qps: readonly QueuePair[];
  readonly sendCq: CompletionQueue | null;
  readonly recvCq: CompletionQueue | null;
  /** The device the QP lives on (its driver's counters go into a stall report). */
  readonly dev: { readonly driver: { readonly name: string; readonly stats: DriverStats } };
}

export class CompletionWaits {
  constructor(
    /** The tool's name, for messages (ib_write_bw, ...). */
    private readonly binary: string,
    /** How long a wait may see no progress (apps/host/no-progress-bound.ts: the QP's timers, or --timeout). */
    readonly bound: NoProgressBound,
    /** Waits when there is nothing to poll. */
    readonly idle: () => Promise<void>,
    private readonly queues: WatchedQueues,
  ) {}

  /** Throws a COMPLETION error when `wc` did not succeed. */
  check(wc: WorkCompletion, what: string): void {
    if (wc.status !== WcStatus.SUCCESS) {
      throw new PerftestError(
        PerftestErrorCode.COMPLETION,
        `${this.binary}: ${what} #${wc.wrId} completed with ${WC_STATUS_NAMES[wc.status] ?? wc.status}${wc.vendorErr ? ` (${wc.vendorErr})` : ''}${this.where()}`,
        'completion',
      );
    }
  }

  get runTimeoutMs(): number {
    return this.bound.ms;
  }

  /** The no-progress clock of one wait: it starts again whenever the QP's transport moves. */
  private clock(): () => boolean {
    let mark = progressMarkAll(this.queues.qps);
    let deadline = Date.now() + this.bound.ms;
    return () => {
      const m = progressMarkAll(this.queues.qps);
      if (m !== mark) {
        mark = m;
        deadline = Date.now() + this.bound.ms;
      }
      return Date.now() > deadline;
    };
  }

  /** The message of a wait that ran out of its bound. */
  private noProgress(what: string): PerftestError {
    return this.timeout(`no progress within ${this.bound.ms} ms (${this.bound.why}) while waiting for ${what}`);
  }

  /** Polls `cq` until it yields at least one completion. */
  async pollSome(cq: CompletionQueue, what: string, max = 64): Promise<WorkCompletion[]> {
    const expired = this.clock();
    for (;;) {
      const wcs = cq.poll(max);
      if (wcs.length > 0) return wcs;
      this.assertAlive(what);
      if (expired()) throw this.noProgress(what);
      await this.idle();
    }
  }

  /** Waits until `cond` holds. */
  async waitFor(cond: () => boolean, what: string): Promise<void> {
    const expired = this.clock();
    while (!cond()) {
      this.assertAlive(what);
      if (expired()) throw this.noProgress(what);
      await this.idle();
    }
  }

  /**
   * Waits for `wait` (an out-of-band read) while watching the QP: it fails at once when the QP
   * goes to the error state (naming the QP's error, not the read), and, with `progress`, when the
   * QP's transport sees no progress within the bound (a passive server waiting for its client's
   * run to end: the client's requests move the responder's expected PSN). When the read itself
   * fails while the QP is in the error state, the QP's error is the cause and is what is thrown.
   */
  async watch<T>(wait: Promise<T>, what: string, progress: boolean): Promise<T> {
    let settled = false;
    let value: T | undefined;
    let failure: unknown = null;
    wait.then(
      (v) => {
        settled = true;
        value = v;
      },
      (e: unknown) => {
        settled = true;
        failure = e;
      },
    );
    // The idle wait sleeps until frames arrive or its fallback timer fires; the out-of-band reply
    // must end it too, or every exchange after connecting (one per QP with perftest -q) costs a
    // fallback period.
    const settledSignal = wait.then(
      () => undefined,
      () => undefined,
    );
    const expired = this.clock();
    while (!settled) {
      this.assertAlive(what);
      if (progress && expired()) throw this.noProgress(what);
      await Promise.race([this.idle(), settledSignal]);
    }
    if (failure !== null) {
      const qp = namedQp(this.queues.qps);
      if (qp !== null && qp.state === QpState.ERR) {
        throw new PerftestError(
          PerftestErrorCode.COMPLETION,
          `${this.binary}: QP 0x${qp.qpNum.toString(16)} is in the error state: ${qp.errorReason} (then ${what} failed: ${(failure as Error).message})`,
          'qp',
        );
      }
      throw failure;
    }
    return value as T;
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
    const { qps } = this.queues;
    const qp = namedQp(qps);
    if (qp === null) return '';
    return ` [${qps.length > 1 ? `QP ${qps.indexOf(qp)} of ${qps.length}: ` : ''}${qpStateReport(qp, this.queues.dev.driver)}]`;
  }

  /** Throws when the QP went to the error state, with the error completion that explains it if there is one. */
  assertAlive(what: string): void {
    const { sendCq, recvCq } = this.queues;
    const qp = namedQp(this.queues.qps);
    if (qp !== null && qp.state === QpState.ERR) {
      // The error completion (if any) explains it; report the QP's reason when there is none.
      const wcs = [...(sendCq?.poll(1) ?? []), ...(recvCq?.poll(1) ?? [])];
      for (const wc of wcs) this.check(wc, what);
      throw new PerftestError(
        PerftestErrorCode.COMPLETION,
        `${this.binary}: QP 0x${qp.qpNum.toString(16)} went to the error state while waiting for ${what}: ${qp.errorReason}`,
        'qp',
      );
    }
  }
}
