/**
 * Answers (a responder's ACKs, NAKs, READ responses and atomic ACKs, captured or the stack's) looked
 * up by kind and PSN, so that comparing two lists of them costs a lookup per answer instead of a scan
 * of the other list. Lists keep the answers' order, so the k-th of a kind for a PSN is the k-th
 * sent. A long capture holds tens of thousands of answers: scanning made a responder replay quadratic.
 */
export interface KindAndPsn {
  kind: string;
  psn: number;
}

export class AnswerIndex<T extends KindAndPsn> {
  private readonly byKind = new Map<string, Map<number, T[]>>();
  private readonly firstByPsn = new Map<number, T>();

  constructor(answers: readonly T[]) {
    for (const a of answers) {
      let byPsn = this.byKind.get(a.kind);
      if (byPsn === undefined) this.byKind.set(a.kind, (byPsn = new Map()));
      const list = byPsn.get(a.psn);
      if (list === undefined) byPsn.set(a.psn, [a]);
      else list.push(a);
      if (!this.firstByPsn.has(a.psn)) this.firstByPsn.set(a.psn, a);
    }
  }

  /** The answers of `kind` for `psn`, in the order given. */
  of(kind: string, psn: number): readonly T[] {
    return this.byKind.get(kind)?.get(psn) ?? NONE;
  }

  /** The first answer of any kind for `psn`. */
  firstAt(psn: number): T | undefined {
    return this.firstByPsn.get(psn);
  }
}

const NONE: readonly never[] = [];
