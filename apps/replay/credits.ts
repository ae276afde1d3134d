/**
 * End-to-end credits in a responder replay (IBTA vol. 1 §9.7.7.2). An ACK's
 * credit count says how many receive WQEs the real responder had left; those
 * depend on what its application posted, which the capture does not show. So
 * replay posts receives to the stack's QP following the counts the capture
 * shows (`receivesWanted`), and then checks each count the stack sent against
 * the captured one (`CreditCheck`): a difference is a violation only where the
 * stack's QP held a number of WQEs that the captured code stands for (it then
 * encoded them wrong); where replay could not give it such a number (the real
 * count fell faster than the requests the capture shows could take WQEs, or
 * was taken at another moment) it is unverifiable.
 */
import { AethKind, CREDITS_INVALID, CREDIT_TABLE, creditRange, decodeSyndrome } from '../../packets/aeth';
import type { RocePacket } from '../../packets/decode';
import { psnDiff } from '../../base/psn';
import { type Difference, DiffClass } from './differences';
import { AnswerIndex } from './answer-index';

/** The most receives replay posts to stand for a credit count (code 30 means 32768 or more). */
const MAX_RECEIVES = 1 << 15;

/** The credit code of an ACK-kind AETH (ACK, first or last READ response, atomic ACK), else null. */
export function creditOf(p: RocePacket): number | null {
  if (p.aeth === null) return null;
  const s = decodeSyndrome(p.aeth.syndrome);
  return s.kind === AethKind.ACK ? s.value : null;
}

/** What the comparison needs of a response. */
export interface CreditedResp {
  kind: string;
  psn: number;
  frame: number;
  credit: number | null;
  /** The stack's answers: receive WQEs its QP held when it sent this one. */
  wqes?: number;
}

/**
 * Receive WQEs the stack's QP should hold before it takes the request at `psn`: the fewest the real
 * responder's credit count for that PSN stands for, plus one for a request that takes a WQE (so that,
 * once taken, the count left is the captured one); just that one when the capture shows no count (or
 * the responder generates none).
 */
export function receivesWanted(credited: ReadonlyMap<number, CreditedResp>, psn: number, takesWqe: boolean, noCredits: boolean): number {
  const own = takesWqe ? 1 : 0;
  if (noCredits) return own;
  const r = credited.get(psn);
  if (r === undefined || r.credit === null) return own;
  return Math.min(MAX_RECEIVES, CREDIT_TABLE[r.credit] ?? 0) + own;
}

const text = (code: number | null): string => {
  if (code === null) return 'no credit count';
  if (code === CREDITS_INVALID) return 'credit code 31 (no flow control)';
  const range = creditRange(code);
  const wqes =
    range === null ? '' : range[1] === Number.POSITIVE_INFINITY ? `${range[0]}+` : range[0] === range[1] ? `${range[0]}` : `${range[0]}..${range[1]}`;
  return `credit code ${code} (${wqes} receive WQEs)`;
};

/** Per PSN, the first of the real responder's answers for it that carries a credit count (not code 31): what `receivesWanted` reads. */
export function creditedByPsn(expected: readonly CreditedResp[]): Map<number, CreditedResp> {
  const m = new Map<number, CreditedResp>();
  for (const e of expected) if (e.credit !== null && e.credit !== CREDITS_INVALID && !m.has(e.psn)) m.set(e.psn, e);
  return m;
}

/** Compares the credit counts of the stack's answers with the captured ones; runs of one class are reported once. */
export class CreditCheck {
  private readonly found: Difference[] = [];

  constructor(expected: readonly CreditedResp[], got: readonly CreditedResp[]) {
    // The k-th captured answer of a kind for a PSN goes with the stack's k-th (duplicates are answered again).
    const seen = new Map<string, number>();
    const answered = new AnswerIndex(got);
    for (const e of expected) {
      if (e.credit === null) continue;
      const key = `${e.kind}:${e.psn}`;
      const k = seen.get(key) ?? 0;
      seen.set(key, k + 1);
      const g = answered.of(e.kind, e.psn)[k];
      if (g === undefined || g.credit === null || g.credit === e.credit) continue;
      const range = creditRange(e.credit);
      const inRange = range !== null && g.credit !== CREDITS_INVALID && g.wqes !== undefined && g.wqes >= range[0] && g.wqes <= range[1];
      if (inRange) {
        this.add(
          DiffClass.VIOLATION,
          e,
          g,
          `IBTA §9.7.7.2: an ACK's credit count encodes the receive WQEs available (the largest code whose count does not exceed them, as rdmavt); the stack's QP held ${g.wqes}`,
        );
      } else if (range === null || g.credit === CREDITS_INVALID) {
        this.add(
          DiffClass.UNVERIFIABLE,
          e,
          g,
          "the real responder sent credit counts on some answers and code 31 on others: replay's QP either generates credits or not (a shared receive queue)",
        );
      } else {
        this.add(
          DiffClass.UNVERIFIABLE,
          e,
          g,
          `replay posts receives as the captured counts say, but its QP held ${g.wqes ?? '?'} WQEs here: the real count fell faster than the requests the capture shows could take WQEs, or was taken at another moment`,
        );
      }
    }
  }

  private add(cls: DiffClass, e: CreditedResp, g: CreditedResp, rule: string): void {
    const prev = this.found.find((d) => d.class === cls);
    if (prev !== undefined) {
      prev.count = (prev.count ?? 1) + 1;
      if (prev.psn !== null && (prev.lastPsn === undefined || psnDiff(e.psn, prev.lastPsn) > 0)) prev.lastPsn = e.psn;
      if (prev.frames.length < 16) prev.frames.push(e.frame);
      return;
    }
    this.found.push({
      class: cls,
      kind: 'ackCredits',
      psn: e.psn,
      lastPsn: e.psn,
      count: 1,
      frames: [e.frame],
      expected: text(e.credit),
      got: text(g.credit),
      rule,
    });
  }

  differences(): Difference[] {
    return this.found;
  }
}
