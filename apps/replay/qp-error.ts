/**
 * Watching a replayed QP for the error state. A QP in ERR drops every request and flushes every
 * work request (IBTA §10.3.1), so each difference after that moment follows from it: the report
 * names it first, with the captured frame the stack had last been given, the error completion it
 * ended with (status and opcode) and the reason the engine gave.
 */
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QpErrorReport } from './differences';

const WC_OPCODE_NAMES: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(WcOpcode).map(([k, v]) => [v, k]));

/** Where the replay stands: the captured frame it last gave the stack, and that frame's PSN. */
export interface ReplayPosition {
  frame: number | null;
  psn: number | null;
}

export class QpErrorWatch {
  private at: (ReplayPosition & { reason: string; wc: WorkCompletion | null }) | null = null;
  /** The latest error completion (other than a flush) taken from the CQ before the QP went to ERR. */
  private lastError: WorkCompletion | null = null;

  /** Listens to `dev`'s protocol events (replay owns the device) for `qp` going to ERR. */
  constructor(
    dev: Device,
    private readonly qp: QueuePair,
    private readonly cq: CompletionQueue,
    where: () => ReplayPosition,
  ) {
    dev.tracer = (e) => {
      if (e.kind !== 'qp-error' || e.qpn !== qp.qpNum || this.at !== null) return;
      // The engine completes the work request in error before it moves the QP (rxe does the same).
      this.drain();
      this.at = { ...where(), reason: e.reason, wc: this.lastError };
    };
  }

  /** Takes the completions posted so far, so that the CQ never overruns and the error one is kept. */
  drain(): void {
    for (let wcs = this.cq.poll(256); wcs.length > 0; wcs = this.cq.poll(256)) {
      if (this.at !== null) continue;
      for (const w of wcs) if (w.status !== WcStatus.SUCCESS && w.status !== WcStatus.WR_FLUSH_ERR) this.lastError = w;
    }
  }

  /** The position the QP went to ERR at, or null when it has not. */
  get position(): ReplayPosition | null {
    return this.at === null ? null : { frame: this.at.frame, psn: this.at.psn };
  }

  /** The report, or null when the QP never went to ERR; `captured` says whether the capture shows the peer ending the same way. */
  report(captured: boolean): QpErrorReport | null {
    const a = this.at;
    if (a === null) return null;
    return {
      qpn: this.qp.qpNum,
      frame: a.frame,
      psn: a.psn,
      status: a.wc === null ? null : (WC_STATUS_NAMES[a.wc.status] ?? String(a.wc.status)),
      opcode: a.wc === null ? null : (WC_OPCODE_NAMES[a.wc.opcode] ?? String(a.wc.opcode)),
      reason: a.reason,
      captured,
    };
  }
}
