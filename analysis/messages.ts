/**
 * Message reconstruction for one requester flow: requests grouped into
 * messages (FIRST..LAST or ONLY), and completed from what the responder
 * sends back, as a requester's completer would (rxe rxe_comp.c: an
 * acknowledgement of PSN q also acknowledges every earlier request; READ and
 * atomic requests complete only with their own responses).
 *
 * Also keeps the requester's completion point `compHigh` (the last PSN
 * acknowledged in order, rxe's comp.psn - 1). Memory is bounded: at most
 * MAX_OUTSTANDING messages wait for completion; older ones are given up as
 * incomplete.
 */
import { OpFlag } from '../packets/opcodes';
import type { FrameView } from './frame-view';
import { psnAdd, psnDiff } from '../base/psn';
import { type Message, MessageOp, type Side } from './types';

export const MAX_OUTSTANDING = 4096;

function opOf(flags: number): MessageOp {
  if ((flags & OpFlag.SEND) !== 0) return MessageOp.SEND;
  if ((flags & OpFlag.WRITE) !== 0) return MessageOp.WRITE;
  if ((flags & OpFlag.READ) !== 0) return MessageOp.READ;
  if ((flags & OpFlag.ATOMIC) !== 0) return MessageOp.ATOMIC;
  if ((flags & OpFlag.FLUSH) !== 0) return MessageOp.FLUSH;
  return MessageOp.ATOMIC_WRITE;
}

/** Messages that complete only with their own response (READ, atomics, FLUSH, ATOMIC WRITE). */
function needsResponse(m: Message): boolean {
  return m.op !== MessageOp.SEND && m.op !== MessageOp.WRITE;
}

export class MessageTracker {
  /** Messages sent and not yet completed, in PSN order. */
  private readonly outstanding: Message[] = [];
  /** The message being sent (FIRST seen, LAST not yet). */
  private open: Message | null = null;
  compHigh: number | null = null;
  /** Messages completed by the last call (advance, onReadResponse, onAtomicAck, onFatalNak). */
  completedByLast = 0;

  constructor(
    private readonly conversation: number,
    private readonly requester: Side,
    /** Reliable (RC, XRC): completion by acknowledgement. Else a message completes with its last packet. */
    private readonly reliable: boolean,
    private readonly sink: (m: Message) => void,
  ) {}

  /** The oldest message still waiting, if any. */
  head(): Message | undefined {
    return this.outstanding[0];
  }

  /** A request's first transmission (retransmissions never start messages). */
  onNewRequest(v: FrameView): void {
    const f = v.opFlags;
    if ((f & OpFlag.START) !== 0) {
      if (this.open !== null) this.open = null; // the capture lost its end
      const op = opOf(f);
      const m: Message = {
        conversation: this.conversation,
        requester: this.requester,
        op,
        opcode: v.opName,
        size: op === MessageOp.READ ? Math.max(0, v.dmaLength) : op === MessageOp.ATOMIC ? 8 : v.payloadLength,
        firstPsn: v.psn,
        lastPsn: null,
        packets: 1,
        immediate: (f & OpFlag.IMM) !== 0,
        firstFrame: v.frame,
        lastFrame: v.frame,
        startNs: v.timeNs,
        completeNs: null,
        completionNs: null,
        responseLatencyNs: null,
        status: 'incomplete',
        error: null,
      };
      if (op !== MessageOp.READ) {
        if ((f & OpFlag.END) !== 0) m.lastPsn = v.psn;
        else this.open = m;
      }
      if (this.reliable) this.push(m);
      else if ((f & OpFlag.END) !== 0) this.complete(m, v.timeNs, 'ok', null);
      return;
    }
    const m = this.open;
    if (m === null) return; // the capture started inside this message
    m.packets++;
    m.size += v.payloadLength;
    m.lastFrame = v.frame;
    if ((f & OpFlag.IMM) !== 0) m.immediate = true;
    if ((f & OpFlag.END) !== 0) {
      m.lastPsn = v.psn;
      this.open = null;
      if (!this.reliable) this.complete(m, v.timeNs, 'ok', null);
    }
  }

  private push(m: Message): void {
    this.outstanding.push(m);
    if (this.outstanding.length > MAX_OUTSTANDING) {
      const old = this.outstanding.shift();
      if (old !== undefined) this.sink(old);
    }
  }

  private complete(m: Message, timeNs: number, status: 'ok' | 'error', error: string | null): void {
    this.completedByLast++;
    m.completeNs = timeNs;
    m.completionNs = timeNs - m.startNs;
    m.status = status;
    m.error = error;
    this.sink(m);
  }

  private setComp(psn: number): void {
    if (this.compHigh === null || psnDiff(psn, this.compHigh) > 0) this.compHigh = psn;
  }

  /**
   * Everything up to and including `psn` is acknowledged: completes SEND and
   * WRITE messages that end by then. Stops at a READ or atomic (they complete
   * with their own responses) and returns it when `psn` reaches into it.
   */
  advance(psn: number, timeNs: number): Message | null {
    for (;;) {
      const m = this.outstanding[0];
      if (m === undefined) {
        this.setComp(psn);
        return null;
      }
      if (psnDiff(psn, m.firstPsn) < 0) {
        this.setComp(psn);
        return null;
      }
      if (needsResponse(m)) {
        this.setComp(psnAdd(m.firstPsn, -1));
        return m;
      }
      if (m.lastPsn === null || psnDiff(psn, m.lastPsn) < 0) {
        this.setComp(psn);
        return null;
      }
      this.outstanding.shift();
      this.complete(m, timeNs, 'ok', null);
    }
  }

  /**
   * A READ response at `v.psn`. Returns 'gap' when it skips responses (an
   * implied NAK for the requester), 'dup' for one already seen, else 'ok'.
   */
  onReadResponse(v: FrameView): 'ok' | 'gap' | 'dup' {
    const m = this.advance(psnAdd(v.psn, -1), v.timeNs) ?? this.head();
    const expected = this.compHigh === null ? v.psn : psnAdd(this.compHigh, 1);
    const d = psnDiff(v.psn, expected);
    if (d < 0) return 'dup';
    if (d > 0) return 'gap';
    this.setComp(v.psn);
    if (m === undefined || m.op === MessageOp.SEND || m.op === MessageOp.WRITE) return 'ok';
    if (m.responseLatencyNs === null) m.responseLatencyNs = v.timeNs - m.startNs;
    if ((v.opFlags & OpFlag.END) !== 0) {
      m.lastPsn = v.psn;
      this.outstanding.shift();
      this.complete(m, v.timeNs, 'ok', null);
    }
    return 'ok';
  }

  /**
   * An atomic acknowledgement (or the READ RESPONSE ONLY answering FLUSH / ATOMIC WRITE, handled above).
   * Returns the READ or atomic before it still waiting for its response, or null.
   */
  onAtomicAck(v: FrameView): Message | null {
    const blocked = this.advance(psnAdd(v.psn, -1), v.timeNs);
    if (blocked !== null && blocked.firstPsn !== v.psn) return blocked;
    const m = blocked ?? this.head();
    if (m === undefined || m.firstPsn !== v.psn || m.op !== MessageOp.ATOMIC) return null;
    m.lastPsn = v.psn;
    m.responseLatencyNs = v.timeNs - m.startNs;
    this.setComp(v.psn);
    this.outstanding.shift();
    this.complete(m, v.timeNs, 'ok', null);
    return null;
  }

  /** A NAK other than a PSN sequence error at `psn`: the message holding it completes in error. */
  onFatalNak(v: FrameView, flag: string): void {
    this.advance(psnAdd(v.psn, -1), v.timeNs);
    const m = this.outstanding[0];
    if (m === undefined || psnDiff(v.psn, m.firstPsn) < 0) return;
    this.outstanding.shift();
    this.complete(m, v.timeNs, 'error', flag);
  }

  /** Flushes every waiting message as incomplete (end of capture). */
  finish(): void {
    for (const m of this.outstanding) this.sink(m);
    this.outstanding.length = 0;
    this.open = null;
  }
}
