/**
 * `roce replay --role responder`: feeds the requester's packets of a captured
 * RC conversation into a stack QP configured from the capture (QPNs, start
 * PSN, path MTU, memory regions at the captured RETH/AtomicETH addresses and
 * R_Keys, filled with what the real responder returned), then compares the
 * stack's answers with the real responder's: ACK/NAK coverage and MSN, READ
 * response segmentation, PSNs and data, atomic results, and the end-to-end
 * credit counts (credits.ts).
 */
import { decodeSyndrome, AethKind, NakCode } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import { psnDiff } from '../../base/psn';
import type { CapturedPacket, RcConversation } from './conversation';
import { type Difference, DiffClass, type ReplaySummary, replaySummary } from './differences';
import { type ReplayOptions, type ReplayStack, replayStack } from './replay-stack';
import { MAX_BRIDGE, alignMsns, firstMsnCountsUnseen } from './resync';
import { CreditCheck, creditedByPsn } from './credits';
import { AnswerIndex } from './answer-index';
import { CapturedIndex, firstAfter } from './captured-index';
import { psnsOf, requestSpan } from './request-span';
import { Feature, unsupportedDifference } from './unsupported';
import { buildRegions } from './responder-regions';
import { type Resp, toResp } from './responder-answer';
import { type FeedOutcome, feedRequests, setUpResponderQp } from './responder-feed';
import { compare, same } from './responder-compare';
import type { WindowFailure } from './window-stand-ins';

/**
 * Replays the responder side of `conv`: sets up the stack, its memory regions and QP as the capture
 * shows them (responder-regions.ts, responder-feed.ts), feeds it the captured requests, and compares
 * its answers with the real responder's (responder-compare.ts).
 */
export function replayResponder(conv: RcConversation, o: ReplayOptions = {}): ReplaySummary {
  const diffs: Difference[] = [];
  const stack = replayStack(conv, 'responder', o);
  const pd = stack.dev.allocPd();
  const cq = stack.dev.createCq(1 << 16);
  const requests = new CapturedIndex(conv.requests);
  const responses = new CapturedIndex(conv.responses);
  const memory = buildRegions(conv, o.maxRegionBytes, stack.dev, pd, requests, responses, diffs);
  const expected = capturedAnswers(conv);
  const expectedBy = new AnswerIndex(expected);
  const start = startOf(conv);
  const q = setUpResponderQp(conv, stack, pd, cq, memory, expected, start.startPsn, requests, responses);
  const outcome = feedRequests({
    conv,
    timing: o.timing,
    stack,
    pd,
    cq,
    requests,
    responses,
    memory,
    expectedBy,
    credited: creditedByPsn(expected),
    q,
    firstFed: start.firstFed,
    skippedAtStart: start.skippedAtStart,
    diffs,
  });
  return verify(conv, stack, requests, expected, expectedBy, start, q.windows.failures, outcome, diffs);
}

/**
 * What the real responder returned. Atomic results are preset from it while feeding; READ data just
 * before each READ is fed (read-source.ts), except where a WRITE the capture shows put the bytes there.
 */
function capturedAnswers(conv: RcConversation): Resp[] {
  const expected: Resp[] = [];
  for (const c of conv.responses) {
    const r = toResp(c.p, c.bytes, c.frame);
    if (r !== null) expected.push(r);
  }
  return expected;
}

/** Where the replay starts in the capture. */
interface StartPlan {
  /** The first request the stack is given. */
  firstFed: CapturedPacket | undefined;
  /** The stack's first expected PSN. */
  startPsn: number;
  /** Requests captured before `firstFed`, not fed. */
  skippedAtStart: number;
}

/**
 * Whether the real responder took request `c`: an acknowledgement at or past its PSN (an ACK, READ
 * response or atomic ACK; not a NAK) is captured after it and before its next copy. A sequence
 * error NAK names the PSN the responder expected when an out-of-order request arrived (IBTA
 * §9.7.5.2.2); a capture at a host may hold that expected request before the NAK, when both
 * arrived in one receive burst, and the answer to it shows the responder took that copy.
 */
function taken(conv: RcConversation, c: CapturedPacket): boolean {
  const psn = c.p.bth?.psn;
  if (psn === undefined) return false;
  const again = conv.requests.find((x) => x.frame > c.frame && x.p.bth?.psn === psn)?.frame ?? Number.MAX_SAFE_INTEGER;
  return conv.responses.some((r) => {
    if (r.frame <= c.frame || r.frame >= again || r.p.bth === null || psnDiff(r.p.bth.psn, psn) < 0 || psnDiff(r.p.bth.psn, psn) > MAX_BRIDGE) return false;
    if (r.p.aeth === null || ((r.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) !== 0) return true;
    return decodeSyndrome(r.p.aeth.syndrome).kind === AethKind.ACK;
  });
}

function startOf(conv: RcConversation): StartPlan {
  // A capture that starts inside a message: the stack starts at the next message (IBTA §9.7.4.1.1:
  // a MIDDLE or LAST without its FIRST is an invalid request), and what comes before is not compared.
  // If the real responder's first answer is a PSN sequence error or RNR NAK, it was waiting for that
  // PSN when the capture started: the requests captured before its resend were not in sequence for it.
  const startsMessage = (c: CapturedPacket): boolean => ((c.p.info?.flags ?? 0) & OpFlag.START) !== 0;
  let firstFed = conv.requests.find(startsMessage);
  const firstAnswer = conv.responses[0];
  if (firstFed !== undefined && firstAnswer?.p.aeth != null && firstAnswer.p.bth !== null && firstAnswer.p.bth.psn !== firstFed.p.bth?.psn) {
    const s = decodeSyndrome(firstAnswer.p.aeth.syndrome);
    const waiting = s.kind === AethKind.RNR_NAK || (s.kind === AethKind.NAK && s.value === NakCode.PSN_SEQUENCE_ERROR);
    const resend = waiting
      ? conv.requests.find(
          (c) => c.p.bth?.psn === firstAnswer.p.bth?.psn && startsMessage(c) && (s.kind === AethKind.RNR_NAK || c.frame > firstAnswer.frame || taken(conv, c)),
        )
      : undefined;
    if (resend !== undefined) firstFed = resend;
  }
  // A connection whose CM exchange the capture holds starts at the PSN the REQ or REP gave.
  if (conv.cm !== undefined)
    firstFed = conv.requests.find((c) => c.p.bth !== null && psnDiff(c.p.bth.psn, conv.cm?.startPsn ?? 0) >= 0 && startsMessage(c)) ?? firstFed;
  const startPsn = conv.cm?.startPsn ?? firstFed?.p.bth?.psn ?? conv.firstRequestPsn;
  const skippedAtStart = firstFed === undefined ? conv.requests.length : conv.requests.indexOf(firstFed);
  return { firstFed, startPsn, skippedAtStart };
}

/** Sets what the stack answered against what the capture shows the real responder answering. */
function verify(
  conv: RcConversation,
  stack: ReplayStack,
  requests: CapturedIndex,
  expected: Resp[],
  expectedBy: AnswerIndex<Resp>,
  { startPsn, skippedAtStart }: StartPlan,
  windowFailures: ReadonlyMap<number, WindowFailure>,
  outcome: FeedOutcome,
  diffs: Difference[],
): ReplaySummary {
  const { mtuBytes } = stack;
  const { got, framesOut, gaps, source, watch, fed, outOfSequenceAt } = outcome;
  // Responses to requests the capture does not hold (before it started, in its gaps) are not compared.
  const before = (psn: number): boolean => psnDiff(psn, startPsn) < 0;
  const shown = expected.filter((e) => !before(e.psn) && !gaps.covers(e.psn));
  const answered = got.filter((g) => !before(g.psn) && !gaps.covers(g.psn));
  // Memory-window keys the stack could not bind a window under: its answers to them are not its own.
  for (const [rkey, { psn, frames, why }] of windowFailures) {
    diffs.push(
      unsupportedDifference(
        Feature.MEMORY_WINDOW,
        psn,
        frames,
        `R_Key 0x${rkey.toString(16)} of a memory window bound off the wire`,
        `replay could not bind a window under that key (${why}), so the stack refused it`,
      ),
    );
  }
  if (skippedAtStart > 0 || expected.some((e) => before(e.psn))) {
    diffs.push({
      class: DiffClass.UNVERIFIABLE,
      kind: 'captureStart',
      psn: startPsn,
      frames: conv.requests.slice(0, Math.min(skippedAtStart, 16)).map((c) => c.frame),
      expected: 'the conversation from its start',
      got: `the capture starts mid-conversation: replay starts at PSN ${startPsn}; ${skippedAtStart} request(s) before it and the responses to requests before it are not compared; MSNs are compared from the first acknowledgement on`,
      rule: 'only what the capture shows can be checked',
    });
  }
  diffs.push(...gaps.differences(), ...source.differences());
  // MSNs count messages from the connection's start: where the capture joined late or lost requests,
  // the stack's count is set against the real one at the first acknowledgement after that point.
  const learnFirst = skippedAtStart > 0 || expected.some((e) => before(e.psn)) || firstMsnCountsUnseen(shown, conv.requests);
  alignMsns(shown, answered, [{ psn: startPsn, learn: learnFirst }, ...gaps.segments()]);
  // PSNs the captured READ and atomic requests are owed responses for.
  const owed = new Set<number>();
  for (const c of conv.requests) if (((c.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) !== 0) for (const psn of psnsOf(c, mtuBytes)) owed.add(psn);
  // The captured READ requests in frame order, with the PSNs each occupies: which one a READ response answers.
  const readRequests = conv.requests.flatMap((c) =>
    c.p.bth !== null && ((c.p.info?.flags ?? 0) & OpFlag.READ) !== 0 ? [{ frame: c.frame, psn: c.p.bth.psn, span: requestSpan(c.p, mtuBytes) }] : [],
  );
  // The R_Key each captured request names, and the keys a SEND with invalidate names, in frame order.
  const keyed = conv.requests.flatMap((c) => {
    const rkey = c.p.reth?.rkey ?? c.p.atomicEth?.rkey ?? null;
    return c.p.bth !== null && (rkey !== null || c.p.ieth !== null) ? [{ frame: c.frame, psn: c.p.bth.psn, rkey, invalidates: c.p.ieth?.rkey ?? null }] : [];
  });
  const tookAt = (psn: number, after: number, before: number): boolean =>
    shown.some(
      (x) => x.frame > after && x.frame < before && x.kind !== 'NAK' && x.kind !== 'RNR_NAK' && psnDiff(x.psn, psn) >= 0 && psnDiff(x.psn, psn) <= MAX_BRIDGE,
    );
  compare(shown, answered, diffs, {
    keyRevokedOffWire: (psn, frame) => {
      const at = keyed.filter((k) => k.psn === psn && k.frame < frame).pop();
      if (at === undefined || at.rkey === null) return false;
      const key = at.rkey;
      const earlier = keyed.filter((k) => k.frame < at.frame);
      const lastInvalidation = earlier.filter((k) => k.invalidates === key).pop()?.frame ?? -1;
      return earlier.some((k) => k.rkey === key && k.frame > lastInvalidation && tookAt(k.psn, k.frame, frame));
    },
    mtu: mtuBytes,
    readRequestOf: (psn, frame) => {
      for (let i = firstAfter(readRequests, frame - 1) - 1, left = MAX_BRIDGE; i >= 0 && left > 0; i--, left--) {
        const r = readRequests[i] as { frame: number; psn: number; span: number };
        const d = psnDiff(psn, r.psn);
        if (d >= 0 && d < r.span) return r.frame;
      }
      return null;
    },
    owed: (psn) => owed.has(psn),
    fedBetween: (psn, after, before) => (fed.get(psn) ?? []).some((f) => f > after && f < before),
    outOfSequenceAt: (psn) => outOfSequenceAt.has(psn),
    invalidatesAt: (psn) => keyed.some((k) => k.psn === psn && k.invalidates !== null),
    fullPacketAt: (psn) =>
      conv.requests.some((c) => {
        const f = c.p.info?.flags ?? 0;
        const full = (f & OpFlag.MIDDLE) !== 0 || (f & (OpFlag.START | OpFlag.END)) === OpFlag.START;
        return full && c.p.bth?.psn === psn && c.p.payloadLength === mtuBytes;
      }),
    resentAfter: (psn, frame) => requests.next(psn, frame) !== undefined,
  });
  diffs.push(...new CreditCheck(shown, answered).differences());
  const answeredBy = new AnswerIndex(answered);
  const matched = shown.filter((e) => answeredBy.of(e.kind, e.psn).some((g) => same(e, g))).length;
  // The captured responder ended the same way when it sent a NAK that ends a QP (not a PSN sequence error) at that PSN.
  const errAt = watch.position?.psn ?? null;
  const qpError = watch.report(errAt !== null && expectedBy.of('NAK', errAt).some((e) => e.value !== NakCode.PSN_SEQUENCE_ERROR));
  return replaySummary('responder', conv, { pathMtu: mtuBytes, framesIn: conv.requests.length, framesOut, matched, expected: shown.length }, diffs, qpError);
}
