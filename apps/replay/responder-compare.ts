/**
 * The responder replay's verdict: the real responder's answers (expected) set against the stack's
 * (got), answer by answer, with what the capture cannot show told apart from what the stack did
 * differently.
 */
import { NAK_CODE_NAMES, NakCode } from '../../packets/aeth';
import { psnDiff } from '../../base/psn';
import { type Difference, DiffClass } from './differences';
import { MAX_BRIDGE } from './resync';
import { AnswerIndex } from './answer-index';
import { firstAfter } from './captured-index';
import type { Resp } from './responder-answer';

/** The stack's payload equals the captured one as far as the capture holds it. */
const sameCaptured = (e: Resp, g: Resp): boolean => Buffer.compare(e.payload.subarray(0, e.captured), g.payload.subarray(0, e.captured)) === 0;

/** Equal answers. Credit counts are compared apart (credits.ts): they depend on receives posted, which replay sets up. */
export function same(a: Resp, b: Resp): boolean {
  if (a.kind !== b.kind || a.psn !== b.psn) return false;
  if (a.kind !== 'ACK' && a.value !== b.value) return false;
  if (a.kind === 'READ') return a.opcode === b.opcode && a.msn === b.msn && a.payload.length === b.payload.length && sameCaptured(a, b);
  if (a.kind === 'ATOMIC') return a.orig === b.orig && a.msn === b.msn;
  return a.msn === b.msn;
}

const describe = (r: Resp | undefined): string =>
  r === undefined
    ? 'nothing'
    : `${r.name} PSN ${r.psn}${r.msn !== null ? ` MSN ${r.msn}` : ''}${r.kind === 'NAK' ? ` (${NAK_CODE_NAMES[r.value] ?? r.value})` : ''}${r.kind === 'READ' ? ` ${r.payload.length} bytes` : ''}`;

/**
 * An answer the real responder sent to a request the stack was never given: the capture lost the
 * request without leaving a gap replay could bridge (inside a message whose start it also lost, at
 * the capture's end), or replay stopped before it. Not the stack's to give; runs are reported once.
 */
function notFed(diffs: Difference[], e: Resp): void {
  const prev = diffs[diffs.length - 1];
  if (prev !== undefined && prev.kind === 'requestNotFed' && prev.lastPsn !== undefined && psnDiff(e.psn, prev.lastPsn) >= 0) {
    prev.lastPsn = e.psn;
    prev.count = (prev.count ?? 1) + 1;
    prev.got = `nothing for ${prev.count} answers up to PSN ${e.psn}`;
    if (prev.frames.length < 16) prev.frames.push(e.frame);
    return;
  }
  diffs.push({
    class: DiffClass.UNVERIFIABLE,
    kind: 'requestNotFed',
    psn: e.psn,
    lastPsn: e.psn,
    count: 1,
    frames: [e.frame],
    expected: describe(e),
    got: 'nothing',
    rule: 'the stack never got the request this answers: the capture lost it where replay could not bridge the gap (inside a message whose start was lost too, or at the capture’s end), or replay stopped before it',
  });
}

/** What the comparison knows of the capture and of what replay gave the stack. */
export interface CompareContext {
  mtu: number;
  /** A captured READ or atomic request is owed a response at this PSN. */
  owed: (psn: number) => boolean;
  /** The stack was given a captured request at this PSN between these two frames. */
  fedBetween: (psn: number, after: number, before: number) => boolean;
  /** The stack was given a request ahead of it while it expected this PSN. */
  outOfSequenceAt: (psn: number) => boolean;
  /** The capture shows the requester sending this PSN again after this frame. */
  resentAfter: (psn: number, frame: number) => boolean;
  /** The frame of the captured READ request that a READ response at `psn` in `frame` answers: the latest one before it that covers the PSN, or null. */
  readRequestOf: (psn: number, frame: number) => number | null;
  /**
   * Whether the request at `psn` answered in `frame` names an R_Key the real responder took in an
   * earlier request of the conversation, with no invalidation of it on the wire between: the key
   * was revoked off the wire (a LOCAL_INV, an unbind or a deregistration by the responder's side).
   */
  keyRevokedOffWire: (psn: number, frame: number) => boolean;
  /** The captured request at `psn` is a SEND with invalidate (it carries an IETH). */
  invalidatesAt: (psn: number) => boolean;
  /** A captured request at `psn` is a FIRST or MIDDLE packet whose payload is `mtu`, the path MTU replay gave the stack. */
  fullPacketAt: (psn: number) => boolean;
}

/**
 * Why the real responder's NAK `e`, which the stack did not give, cannot be held against the stack,
 * or null when it can (a missingNak violation).
 */
function unverifiableNak(
  e: Resp,
  outOfSequenceAt: (psn: number) => boolean,
  keyRevokedOffWire: (psn: number, frame: number) => boolean,
  fullPacketAt: (psn: number) => boolean,
): { kind: string; rule: string } | null {
  if (e.value === NakCode.REMOTE_OPERATIONAL_ERROR)
    return {
      kind: 'responderFault',
      rule: 'a Remote Operational Error NAK reports a failure inside the real responder, not a fault of the request (IBTA §9.9.3 class A: its own resources, such as a receive WQE it cannot use; rxe RESPST_ERR_MALFORMED_WQE): replay cannot bring it about',
    };
  // A PSN sequence error NAK is drawn by a request ahead of the expected PSN: where the stack was
  // never given one at that PSN, the capture lost the request that drew it.
  if (e.value === NakCode.PSN_SEQUENCE_ERROR && !outOfSequenceAt(e.psn))
    return {
      kind: 'nakCause',
      rule: 'the request that drew this NAK (one ahead of the expected PSN) is not in the capture, so the stack was never given it',
    };
  // A FIRST or MIDDLE packet carries exactly its requester's path MTU (C9-29), which replay takes
  // as the stack's; a responder that refused one with NAK invalid request had another path MTU
  // (rxe_resp.c check_length()), which nothing in the capture shows.
  if (e.value === NakCode.INVALID_REQUEST && fullPacketAt(e.psn))
    return {
      kind: 'pathMtuOffWire',
      rule: "the real responder refused a FIRST or MIDDLE packet, whose payload is exactly the requester's path MTU (C9-29): its own path MTU differed, and the capture does not show it (replay gives the stack the requester's)",
    };
  if (e.value === NakCode.REMOTE_ACCESS_ERROR && keyRevokedOffWire(e.psn, e.frame))
    return {
      kind: 'keyRevokedOffWire',
      rule: 'the real responder took this R_Key earlier and refused it here with no invalidation on the wire: its side revoked the key itself (LOCAL_INV, an unbind, a deregistration; IBTA §10.6.7, rxe_mw.c), which the capture cannot show',
    };
  return null;
}

/** Compares the real responder's answers (expected) with the stack's (got). */
export function compare(
  expected: Resp[],
  got: Resp[],
  diffs: Difference[],
  { mtu, owed, fedBetween, outOfSequenceAt, resentAfter, readRequestOf, keyRevokedOffWire, invalidatesAt, fullPacketAt }: CompareContext,
): void {
  const gotBy = new AnswerIndex(got);
  const expectedBy = new AnswerIndex(expected);
  const byFrame = [...expected].sort((a, b) => a.frame - b.frame);
  /** Whether the real responder acknowledged `psn` or a later PSN in an answer captured after `frame`. */
  const answeredFrom = (psn: number, frame: number): boolean => {
    for (let i = firstAfter(byFrame, frame); i < byFrame.length; i++) {
      const x = byFrame[i] as Resp;
      if ((x.kind === 'ACK' || x.kind === 'READ' || x.kind === 'ATOMIC') && psnDiff(x.psn, psn) >= 0 && psnDiff(x.psn, psn) <= MAX_BRIDGE) return true;
    }
    return false;
  };
  /** The real responder's NAKs and RNR NAKs, in frame order: each turned away its PSN and every later one until the requester went back. */
  const waits = byFrame.filter((x) => x.kind === 'NAK' || x.kind === 'RNR_NAK');
  /**
   * Whether the stack was given the request that answer `e` answers: one at its PSN, captured after
   * the real responder last turned that PSN away (a NAK or RNR NAK at it or an earlier PSN) and
   * before `e`. The request the real responder took may be a resend the capture lost.
   */
  const fed = (e: Resp): boolean => {
    let turnedAway = 0;
    for (let i = waits.length - 1; i >= 0; i--) {
      const x = waits[i] as Resp;
      if (x.frame < e.frame && psnDiff(e.psn, x.psn) >= 0 && psnDiff(e.psn, x.psn) <= MAX_BRIDGE) {
        turnedAway = x.frame;
        break;
      }
    }
    return fedBetween(e.psn, turnedAway, e.frame);
  };
  // The k-th captured answer of a kind for a PSN is compared with the stack's k-th (duplicates are answered again).
  const seen = new Map<string, number>();
  const nth = (e: Resp): number => {
    const k = `${e.kind}:${e.psn}`;
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    return n;
  };
  for (const e of expected) {
    const occurrence = nth(e);
    switch (e.kind) {
      case 'READ':
      case 'ATOMIC': {
        const all = gotBy.of(e.kind, e.psn);
        // A READ response is compared with an answer of the stack's that equals it (to a request
        // captured before it: a later one cannot have drawn it), else with the stack's answer to the
        // same request (its answers carry the frame of the request fed), else with its k-th: a
        // capture taken before a lossy link holds requests the real responder never got, and the
        // k-th captured response for a PSN is then not the k-th the stack gave.
        const req = e.kind === 'READ' ? readRequestOf(e.psn, e.frame) : null;
        const g =
          (e.kind === 'READ' ? all.find((x) => x.frame < e.frame && same(e, x)) : undefined) ??
          (req !== null ? all.find((x) => x.frame === req) : undefined) ??
          all[occurrence] ??
          all[all.length - 1];
        if (g === undefined && !fed(e)) {
          notFed(diffs, e);
        } else if (g === undefined) {
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: e.kind === 'READ' ? 'missingReadResponse' : 'missingAtomicAck',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: 'nothing',
            rule: 'IBTA §9.7.4.1: every READ response PSN / atomic ACK is owed',
          });
        } else if (e.kind === 'READ' && (g.opcode !== e.opcode || g.payload.length !== e.payload.length)) {
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'readSegmentation',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: describe(g),
            rule: `READ responses are segmented by the path MTU (${mtu}): FIRST/MIDDLE full, LAST the rest`,
          });
        } else if (e.kind === 'READ' && !sameCaptured(e, g)) {
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'readData',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: 'different bytes',
            rule: 'READ returns the memory the request names',
          });
        } else if (e.kind === 'ATOMIC' && g.orig !== e.orig) {
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'atomicResult',
            psn: e.psn,
            frames: [e.frame],
            expected: `original 0x${e.orig?.toString(16)}`,
            got: `original 0x${g.orig?.toString(16)}`,
            rule: 'an atomic returns the value before the operation, executed once',
          });
        } else if (g.msn !== e.msn) {
          diffs.push({
            class: DiffClass.POLICY,
            kind: 'msnInResponse',
            psn: e.psn,
            frames: [e.frame],
            expected: `MSN ${e.msn}`,
            got: `MSN ${g.msn}`,
            rule: 'when a READ or atomic counts toward the MSN within its responses differs between implementations',
          });
        }
        break;
      }
      case 'ACK': {
        const acks = gotBy.of('ACK', e.psn);
        const g = acks[occurrence] ?? acks[acks.length - 1];
        if (g !== undefined) {
          if (g.msn !== e.msn && e.msn !== null && g.msn === ((e.msn + 1) & 0xffffff) && invalidatesAt(e.psn))
            diffs.push({
              class: DiffClass.POLICY,
              kind: 'msnAfterFailedInvalidate',
              psn: e.psn,
              frames: [e.frame],
              expected: describe(e),
              got: describe(g),
              rule: 'whether a SEND with invalidate whose key could not be invalidated counts toward the MSN: rxe acknowledges it without counting it (rxe_resp.c execute() leaves for RESPST_ERR_INVALIDATE_RKEY before msn++; the receive completes with REM_INV_REQ_ERR and the QP goes to ERR after the ACK), this stack counts the message it acknowledged; the capture does not show whether the key could be invalidated',
            });
          else if (g.msn !== e.msn)
            diffs.push({
              class: DiffClass.VIOLATION,
              kind: 'msn',
              psn: e.psn,
              frames: [e.frame],
              expected: describe(e),
              got: describe(g),
              rule: 'IBTA §9.7.5.1.2: the MSN counts completed request messages',
            });
          break;
        }
        // Acknowledged by a later ACK of the stack (coalescing), or not at all.
        const later = got.find((x) => (x.kind === 'ACK' || x.kind === 'READ' || x.kind === 'ATOMIC') && psnDiff(x.psn, e.psn) > 0);
        if (later === undefined && !fed(e)) notFed(diffs, e);
        else if (later !== undefined)
          diffs.push({
            class: DiffClass.POLICY,
            kind: 'ackCoalescing',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: `covered by ${describe(later)}`,
            rule: 'IBTA §9.7.5.1.1: a responder may coalesce ACKs',
          });
        else
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'missingAck',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: 'no ACK covers this PSN',
            rule: 'a request with AckReq is acknowledged',
          });
        break;
      }
      case 'NAK': {
        const g = gotBy.of('NAK', e.psn)[0];
        // A NAK the stack did not give, for a cause replay cannot bring about: unverifiable, with its reason.
        const cannotTell = g !== undefined ? null : unverifiableNak(e, outOfSequenceAt, keyRevokedOffWire, fullPacketAt);
        if (cannotTell !== null) {
          diffs.push({
            class: DiffClass.UNVERIFIABLE,
            kind: cannotTell.kind,
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: describe(gotBy.firstAt(e.psn)),
            rule: cannotTell.rule,
          });
        } else if (g === undefined)
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'missingNak',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: describe(gotBy.firstAt(e.psn)),
            rule: 'IBTA §9.7.5.1: the same request stream draws the same NAK',
          });
        else if (g.value !== e.value)
          diffs.push({
            class: DiffClass.VIOLATION,
            kind: 'nakKind',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: describe(g),
            rule: 'the NAK code follows from the request',
          });
        break;
      }
      case 'RNR_NAK': {
        const g = gotBy.of('RNR_NAK', e.psn)[0];
        if (g === undefined)
          diffs.push({
            class: DiffClass.POLICY,
            kind: 'rnr',
            psn: e.psn,
            frames: [e.frame],
            expected: describe(e),
            got: describe(gotBy.firstAt(e.psn)),
            rule: 'an RNR NAK depends on the responder application posting receives, which the capture does not show',
          });
        break;
      }
    }
  }
  // Answers the stack gave that the real responder did not (where it failed on its own, `responderFault` says so).
  const fromGot = diffs.length;
  for (const g of got) {
    if (expectedBy.of(g.kind, g.psn).length > 0) continue;
    if (expectedBy.of('NAK', g.psn).some((e) => e.value === NakCode.REMOTE_OPERATIONAL_ERROR)) continue;
    const d = extraAnswer(g);
    if (d === null) continue;
    // Replay feeds every captured copy of a request (the requester's resends), and the stack answers
    // each duplicate again (rxe_resp.c duplicate_request()): its answers to the copies of a request
    // already reported here make that one difference, counted, not one difference per copy.
    const earlier = diffs
      .slice(fromGot)
      .find((x) => x.kind === d.kind && x.class === d.class && x.psn !== null && psnDiff(g.psn, x.psn) >= 0 && psnDiff(g.psn, x.lastPsn ?? x.psn) <= 0);
    if (earlier === undefined) diffs.push(d);
    else if (earlier.psn === g.psn) earlier.copies = (earlier.copies ?? 1) + 1;
  }
  for (const d of diffs.slice(fromGot)) if (d.copies !== undefined) d.got += `, to each of ${d.copies} copies of the request`;

  /** The difference answer `g`, which the real responder did not send, makes; null when it extends the run of READ responses reported last. */
  function extraAnswer(g: Resp): Difference | null {
    if (g.kind === 'ACK') {
      return {
        class: DiffClass.POLICY,
        kind: 'extraAck',
        psn: g.psn,
        frames: [],
        expected: 'no ACK for this PSN',
        got: describe(g),
        rule: "IBTA §9.7.5.1.1: how often to acknowledge is the responder's choice",
      };
    }
    if (g.kind === 'READ' || g.kind === 'ATOMIC') {
      const cut = expected.length === 0 || psnDiff(g.psn, expected[expected.length - 1]?.psn ?? g.psn) > 0;
      // A response a captured READ or atomic request is owed, where the real responder went on past
      // it: the capture lost the real one (capture loss), it is not missing from the wire.
      const lost = !cut && owed(g.psn);
      const cls = cut || lost ? DiffClass.UNVERIFIABLE : DiffClass.VIOLATION;
      // Runs of READ responses are reported once, as a PSN range.
      const prev = diffs[diffs.length - 1];
      if (
        prev !== undefined &&
        prev.kind === 'extraResponse' &&
        prev.psn !== null &&
        prev.class === cls &&
        prev.lastPsn !== undefined &&
        psnDiff(g.psn, prev.lastPsn) === 1
      ) {
        prev.lastPsn = g.psn;
        prev.got = `${(prev.count = (prev.count ?? 1) + 1)} responses up to PSN ${g.psn}`;
        return null;
      }
      const rule = cut
        ? 'the capture ends before the real responder answered'
        : lost
          ? 'a captured request is owed this response and the real responder went on past it: the capture lost it'
          : 'responses the real responder never sent';
      return { class: cls, kind: 'extraResponse', psn: g.psn, lastPsn: g.psn, frames: [], expected: 'nothing', got: describe(g), rule };
    }
    if (g.kind === 'NAK' && resentAfter(g.psn, g.frame)) {
      // The requester went back to this PSN afterwards: the real responder did not take it either,
      // and its NAK is what the capture lost (or it stayed silent until the requester's timeout).
      return {
        class: DiffClass.UNVERIFIABLE,
        kind: 'nakNotCaptured',
        psn: g.psn,
        frames: [],
        expected: 'no NAK',
        got: describe(g),
        rule: 'the capture shows the requester sending this PSN again afterwards, so the real responder did not take it: its NAK is not in the capture',
      };
    }
    if (g.kind === 'NAK' && !answeredFrom(g.psn, g.frame)) {
      // Nothing after it shows the real responder taking this PSN: the capture lost its answers from
      // here on, and whether it took the request or NAKed it too cannot be told.
      return {
        class: DiffClass.UNVERIFIABLE,
        kind: 'nakNotCaptured',
        psn: g.psn,
        frames: [],
        expected: 'no NAK',
        got: describe(g),
        rule: 'the capture holds no later answer of the real responder at or past this PSN, so whether it took this request cannot be told',
      };
    }
    return {
      class: g.kind === 'RNR_NAK' ? DiffClass.POLICY : DiffClass.VIOLATION,
      kind: g.kind === 'RNR_NAK' ? 'rnr' : 'extraNak',
      psn: g.psn,
      frames: [],
      expected: 'no NAK',
      got: describe(g),
      rule: g.kind === 'RNR_NAK' ? 'receive posting differs' : 'the real responder accepted this request',
    };
  }
}
