/**
 * `roce replay --role responder`: feeds the requester's packets of a captured
 * RC conversation into a stack QP configured from the capture (QPNs, start
 * PSN, path MTU, memory regions at the captured RETH/AtomicETH addresses and
 * R_Keys, filled with what the real responder returned), then compares the
 * stack's answers with the real responder's: ACK/NAK coverage and MSN, READ
 * response segmentation, PSNs and data, atomic results, and the end-to-end
 * credit counts (credits.ts).
 */
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { FlushLevel, WrOpcode } from '../../stack/work-request-codes';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { AethKind, CREDITS_INVALID, NAK_CODE_NAMES, NakCode, decodeSyndrome } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import { psnAdd, psnDiff } from '../../base/psn';
import type { CapturedPacket, RcConversation } from './conversation';
import { type Difference, DiffClass, type ReplaySummary, malformedOutput, replaySummary } from './differences';
import { type ReplayOptions, replayStack } from './replay-stack';
import { CaptureGaps, MAX_BRIDGE, type OpenMessage, alignMsns, firstMsnCountsUnseen, responderGotThrough } from './resync';
import { ReadSource } from './read-source';
import { withStackKeys } from './rkey-map';
import { CreditCheck, creditOf, creditedByPsn, receivesWanted } from './credits';
import { AnswerIndex } from './answer-index';
import { CapturedIndex, firstAfter } from './captured-index';
import { requestSpan } from './request-span';
import { accessRefused, refusedAccess } from './captured-refusals';
import { Feature, rxeMemoryWindowKey, unsupportedDifference } from './unsupported';
import { QpErrorWatch } from './qp-error';
import { WindowStandIns } from './window-stand-ins';
import type { MemoryRegion } from '../../stack/memory-region';

const ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

interface Region {
  lo: bigint;
  hi: bigint;
}

/** A response, reduced to what the comparison looks at. */
export interface Resp {
  frame: number;
  kind: 'ACK' | 'NAK' | 'RNR_NAK' | 'READ' | 'ATOMIC';
  psn: number;
  msn: number | null;
  value: number;
  opcode: number;
  name: string;
  payload: Uint8Array;
  /** Payload bytes the capture holds (the rest of a truncated frame is not compared). */
  captured: number;
  orig: bigint | null;
  /** The end-to-end credit code of an ACK-kind AETH (ACK, first/last READ response, atomic ACK), else null. */
  credit: number | null;
  /** The stack's answers: receive WQEs its QP had posted when it sent this one. */
  wqes?: number;
}

function toResp(p: RocePacket, bytes: Uint8Array, frame: number): Resp | null {
  const b = p.bth;
  const info = p.info;
  if (b === null || info === undefined) return null;
  const payload = bytes.subarray(p.payloadOff, p.payloadOff + p.payloadLength);
  const msn = p.aeth?.msn ?? null;
  const captured = p.payloadCaptured;
  const credit = creditOf(p);
  if ((info.flags & OpFlag.READ) !== 0) return { frame, kind: 'READ', psn: b.psn, msn, value: 0, opcode: b.opcode, name: info.name, payload, captured, orig: null, credit };
  if (p.atomicAckEth !== null) return { frame, kind: 'ATOMIC', psn: b.psn, msn, value: 0, opcode: b.opcode, name: info.name, payload, captured, orig: p.atomicAckEth.origData, credit };
  if (p.aeth === null) return null;
  const s = decodeSyndrome(p.aeth.syndrome);
  const kind = s.kind === AethKind.ACK ? 'ACK' : s.kind === AethKind.NAK ? 'NAK' : s.kind === AethKind.RNR_NAK ? 'RNR_NAK' : null;
  if (kind === null) return null;
  return { frame, kind, psn: b.psn, msn, value: s.value, opcode: b.opcode, name: info.name, payload, captured, orig: null, credit };
}

/** The PSNs request `c` occupies (request-span.ts). */
function psnsOf(c: CapturedPacket, mtu: number): number[] {
  const b = c.p.bth;
  if (b === null) return [];
  return Array.from({ length: requestSpan(c.p, mtu) }, (_, i) => psnAdd(b.psn, i));
}

/**
 * Regions the requests address, per R_Key: [lowest VA, highest VA + length). A zero-length READ or
 * WRITE names no memory: its VA and R_Key are not checked and may be anything, 0 included (C9-88;
 * rxe_resp.c check_rkey() skips them), so it adds no region. Neither does a request the real
 * responder refused with a Remote Access Error NAK (`refused`): its key or range was not valid there.
 */
function regionsOf(reqs: readonly CapturedPacket[], refused: (c: CapturedPacket) => boolean): Map<number, Region> {
  const m = new Map<number, Region>();
  const add = (rkey: number, va: bigint, len: number): void => {
    const r = m.get(rkey);
    const hi = va + BigInt(len);
    if (r === undefined) m.set(rkey, { lo: va, hi });
    else {
      if (va < r.lo) r.lo = va;
      if (hi > r.hi) r.hi = hi;
    }
  };
  for (const c of reqs) {
    const reth = c.p.reth;
    // A FLUSH of the whole region (selectivity level 1) names no range: its VA may be anything.
    const wholeRegion = c.p.feth !== null && c.p.feth.selectivity === FlushLevel.MR;
    if (reth !== null && reth.dmaLength > 0 && !wholeRegion && !refused(c)) add(reth.rkey, reth.va, reth.dmaLength);
    if (c.p.atomicEth !== null && !refused(c)) add(c.p.atomicEth.rkey, c.p.atomicEth.va, 8);
  }
  return m;
}

export function replayResponder(conv: RcConversation, o: ReplayOptions = {}): ReplaySummary {
  const diffs: Difference[] = [];
  const { clock, driver, dev, mtuBytes, pathMtu, peer } = replayStack(conv, 'responder', o);
  const pd = dev.allocPd();
  const cq = dev.createCq(1 << 16);

  const requests = new CapturedIndex(conv.requests);
  const responses = new CapturedIndex(conv.responses);
  // Memory regions at the captured addresses and keys.
  const maxRegion = BigInt(o.maxRegionBytes ?? 64 * 1024 * 1024);
  const mrs = new Map<number, { lo: bigint; buf: Uint8Array }>();
  /** Captured R_Key -> the stack's, for regions registered under a key the stack picked. */
  const stackKeys = new Map<number, number>();
  /** Bytes of all regions built so far: the limit holds for their sum too (a capture naming many keys). */
  let built = 0n;
  /** Per memory-window key (window-stand-ins.ts), the region its window opens onto. */
  const windowRegions = new Map<number, MemoryRegion>();
  for (const [rkey, r] of regionsOf(conv.requests, (c) => refusedAccess(c, requests, responses))) {
    const size = r.hi - r.lo;
    if (size > maxRegion || built + size > maxRegion) {
      diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'regionTooLarge', psn: null, frames: [], expected: `a region for rkey 0x${rkey.toString(16)}`, got: `${size} bytes (${built} already built) exceed the limit of ${maxRegion}`, rule: 'replay builds memory regions in RAM' });
      continue;
    }
    const buf = new Uint8Array(Number(size));
    built += size;
    if (rxeMemoryWindowKey(rkey)) {
      // A memory window's key: the region goes under a key of the stack's, the window under the captured one.
      windowRegions.set(rkey, dev.regMr(pd, buf, ACCESS_ALL | Access.MW_BIND, r.lo));
      mrs.set(rkey, { lo: r.lo, buf });
      continue;
    }
    try {
      dev.regMr(pd, buf, ACCESS_ALL, r.lo, rkey);
      mrs.set(rkey, { lo: r.lo, buf });
    } catch {
      // A key the stack cannot take as it is (hardware keys: rkey-map.ts): one it picks stands in.
      try {
        const mr = dev.regMr(pd, buf, ACCESS_ALL, r.lo);
        stackKeys.set(rkey, mr.rkey);
        mrs.set(rkey, { lo: r.lo, buf });
      } catch (e) {
        diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'regionKey', psn: null, frames: [], expected: `rkey 0x${rkey.toString(16)}`, got: (e as Error).message, rule: 'the stack could not register a region at the captured addresses' });
      }
    }
  }

  // What the real responder returned. Atomic results are preset below; READ data just before each
  // READ is fed (readSource), except where a WRITE the capture shows put the bytes there.
  const expected: Resp[] = [];
  for (const c of conv.responses) {
    const r = toResp(c.p, c.bytes, c.frame);
    if (r !== null) expected.push(r);
  }
  const expectedBy = new AnswerIndex(expected);
  const credited = creditedByPsn(expected);
  const source = new ReadSource(mrs, mtuBytes);
  // An atomic's target holds, before the first atomic on it the capture shows (and again after a
  // capture gap: a lost request may have changed it), the original value the real responder returned.
  const atomicKnown = new Set<string>();
  const presetAtomic = (c: CapturedPacket): void => {
    const a = c.p.atomicEth;
    if (a === null || c.p.bth === null) return;
    const k = `${a.rkey}:${a.va}`;
    if (atomicKnown.has(k)) return;
    const ack = expectedBy.of('ATOMIC', c.p.bth.psn)[0];
    const mr = mrs.get(a.rkey);
    // Without its captured ACK the value stays unknown: the next atomic on it is preset again.
    if (ack?.orig != null && mr && a.va >= mr.lo && Number(a.va - mr.lo) + 8 <= mr.buf.length) {
      new DataView(mr.buf.buffer, mr.buf.byteOffset).setBigUint64(Number(a.va - mr.lo), ack.orig, true);
      atomicKnown.add(k);
    }
  };

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
    const resend = waiting ? conv.requests.find((c) => c.p.bth?.psn === firstAnswer.p.bth?.psn && startsMessage(c) && (s.kind === AethKind.RNR_NAK || c.frame > firstAnswer.frame)) : undefined;
    if (resend !== undefined) firstFed = resend;
  }
  // A connection whose CM exchange the capture holds starts at the PSN the REQ or REP gave.
  if (conv.cm !== undefined) firstFed = conv.requests.find((c) => c.p.bth !== null && psnDiff(c.p.bth.psn, conv.cm?.startPsn ?? 0) >= 0 && startsMessage(c)) ?? firstFed;
  const startPsn = conv.cm?.startPsn ?? firstFed?.p.bth?.psn ?? conv.firstRequestPsn;
  const skippedAtStart = firstFed === undefined ? conv.requests.length : conv.requests.indexOf(firstFed);

  // The QP, as the capture shows it. A responder whose first credit count is code 31 generates no
  // end-to-end credits (an SRQ; rxe on every QP): the stack's QP then takes its receive WQEs from a
  // shared receive queue, so that it sends code 31 too (IBTA vol. 1 §9.7.7.2).
  const firstCredit = expected.find((r) => r.credit !== null)?.credit ?? null;
  const srq = firstCredit === CREDITS_INVALID ? dev.createSrq(pd, { maxWr: 1 << 16 }) : null;
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 16, maxRecvWr: 1 << 16 }, ...(srq !== null ? { srq } : {}) }, conv.responderQpn);
  const posted = (): number => (srq !== null ? srq.size : qp.rq.length);
  const windows = new WindowStandIns(dev, pd, qp, stackKeys);
  for (const [rkey, mr] of windowRegions) windows.setRegion(rkey, mr);
  const rnr = expected.find((r) => r.kind === 'RNR_NAK');
  // The remote access the real responder's QP showed it did not allow is not allowed here either (captured-refusals.ts).
  qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qpAccessFlags: ACCESS_ALL & ~accessRefused(conv.requests, requests, responses) });
  qp.modify({
    qpState: QpState.RTR,
    ahAttr: peer,
    pathMtu,
    destQpNum: conv.requesterQpn || 1,
    rqPsn: startPsn,
    maxDestRdAtomic: 128,
    minRnrTimer: rnr?.value ?? 12,
  });
  qp.modify({ qpState: QpState.RTS, sqPsn: 0, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 16 });
  // Receive buffers follow the capture: one is posted just before each request that takes one, unless the
  // real responder answered that very packet with an RNR NAK (its application had not posted one yet).
  const rbuf = new Uint8Array(1 << 20);
  const rmr = dev.regMr(pd, rbuf, Access.LOCAL_WRITE);
  const takesWqe = (c: CapturedPacket): boolean => {
    const f = c.p.info?.flags ?? 0;
    return (f & OpFlag.RWR) !== 0 && ((f & OpFlag.SEND) !== 0 ? (f & OpFlag.START) !== 0 : true);
  };
  const rnrAnswered = (c: CapturedPacket): boolean => {
    const psn = c.p.bth?.psn;
    if (psn === undefined) return false;
    const again = requests.next(psn, c.frame)?.frame ?? Number.MAX_SAFE_INTEGER;
    // An RNR NAK for it; or, when the capture lost that RNR NAK, a PSN sequence error NAK for its
    // own PSN before it is sent again: the responder did not take this in-sequence request.
    const nakedAt = responses.someBetween(psn, c.frame, again, (r) => {
      if (r.p.aeth === null) return false;
      const s = decodeSyndrome(r.p.aeth.syndrome);
      return s.kind === AethKind.RNR_NAK || (s.kind === AethKind.NAK && s.value === NakCode.PSN_SEQUENCE_ERROR);
    });
    // Unless the real responder shows it went past this PSN before it was sent again: such a NAK
    // answered an earlier packet, captured after this one (a late RNR NAK for an earlier copy the
    // network held back, or a NAK drawn by a request that overtook this one, captured after it when
    // both arrived in one receive burst).
    return nakedAt && !wentPast(psn, c.frame, again);
  };
  /**
   * Whether a response captured between frames `after` and `before` shows the real responder past
   * `psn` before the requester is seen going back (a request behind one it sent since `after`: what
   * the responder says after that may answer a resend of `psn` the capture lost). Past it: an
   * acknowledgement at or after it (an ACK, READ response or atomic ACK; one for a duplicate carries
   * the PSN before the expected one, IBTA §9.7.5.1.2 C9-105), or a NAK after it (a PSN sequence error
   * or RNR NAK names the expected PSN, §9.7.5.2.2). Looks at a bounded number of frames.
   */
  const wentPast = (psn: number, after: number, before: number): boolean => {
    const sent = requests.between(after, before);
    let nextSent = sent.next();
    let highest = psn;
    let left = 4096;
    for (const r of responses.between(after, before)) {
      for (; !nextSent.done && nextSent.value.frame < r.frame; nextSent = sent.next()) {
        const q = nextSent.value.p.bth?.psn;
        if (q === undefined) continue;
        if (psnDiff(q, highest) < 0) return false;
        highest = q;
      }
      if (--left < 0) return false;
      const rp = r.p.bth?.psn;
      if (rp === undefined) continue;
      const d = psnDiff(rp, psn);
      if (d < 0 || d > MAX_BRIDGE) continue;
      const s = r.p.aeth !== null && ((r.p.info?.flags ?? 0) & OpFlag.READ) === 0 && r.p.atomicAckEth === null ? decodeSyndrome(r.p.aeth.syndrome) : null;
      if (s === null || s.kind === AethKind.ACK || d > 0) return true;
    }
    return false;
  };
  let recvs = 0;
  const postRecv = (): void => {
    const wr = { wrId: recvs++, sgList: [rmr.sge(0, rbuf.length)] };
    if (srq !== null) srq.postRecv(wr);
    else qp.postRecv(wr);
  };

  // Feed the requests, in order, at the captured times or back to back.
  const t0 = conv.requests[0]?.timeNs ?? 0;
  const got: Resp[] = [];
  let framesOut = 0;
  /** The captured request being given to the stack (or bridged to): where an error of its QP is reported. */
  let feeding: CapturedPacket | null = null;
  const watch = new QpErrorWatch(dev, qp, cq, () => ({ frame: feeding?.frame ?? null, psn: feeding?.p.bth?.psn ?? null }));
  const collect = (): void => {
    watch.drain();
    for (const f of driver.takeSent()) {
      framesOut++;
      const d = decodeFrame(f);
      if (!d.roce || d.error !== null) {
        diffs.push(malformedOutput(d));
        continue;
      }
      const r = toResp(d, f, 0);
      // The stack's answers carry the frame of the captured request fed last: where in the capture they were sent.
      if (r !== null) got.push({ ...r, frame: lastFed, wqes: posted() });
    }
  };
  // Capture gaps: requests the capture lost although the real responder got them (it did not NAK
  // them). The stack is brought past them with zero-length WRITEs (resync.ts), at a message boundary.
  const gaps = new CaptureGaps();
  const fillMr = dev.regMr(pd, new Uint8Array(8), ACCESS_ALL);
  let lastFed = firstFed?.frame ?? 0;
  /** Per PSN, the frames of the captured requests at it the stack was given, in order: an answer to any other it cannot be asked for. */
  const fed = new Map<number, number[]>();
  /** The stack's ePSNs at which it was given a request ahead of it: where it could draw a PSN sequence error NAK (IBTA §9.7.5.2.2). */
  const outOfSequenceAt = new Set<number>();
  /**
   * The ePSN at which the stack refused an in-sequence request the real responder did not turn away
   * (it NAKed or dropped it, other than for want of a receive WQE): from there the stack, not the
   * capture, is out of step, so replay does not bridge past it as a capture gap.
   */
  let refusedAt: number | null = null;
  let skipping: CapturedPacket[] = [];
  let open: OpenMessage | null = null;
  /**
   * Per captured R_Key a SEND with Invalidate names and no region of the capture has: the
   * fast-registration region standing in for it, and the frames. Such a key (outside rxe's
   * memory-window range, which window-stand-ins.ts takes) was bound by a REG_MR that never reaches the
   * wire: only those can be invalidated (rxe rxe_invalidate_mr()). Replay binds a fast-registration
   * region under it with a REG_MR of the stack's own QP before the SEND, and again (a new key byte, the
   * same index) after each invalidation.
   */
  const invalidated = new Map<number, { mr: MemoryRegion | null; psn: number | null; frames: number[] }>();
  const invalidatable = (c: CapturedPacket, rkey: number): void => {
    if (mrs.has(rkey) || rxeMemoryWindowKey(rkey)) return; // a window's key: window-stand-ins.ts
    let entry = invalidated.get(rkey);
    if (entry === undefined) invalidated.set(rkey, (entry = { mr: null, psn: c.p.bth?.psn ?? null, frames: [] }));
    entry.frames.push(c.frame);
    if (entry.mr?.valid === true) return;
    // A key of the same index bound before (the captured region registered again with a new key byte) is bound again.
    const sameIndex = [...invalidated.values()].find((x) => x.mr !== null && x.mr.lkey >>> 8 === rkey >>> 8 && !x.mr.valid)?.mr ?? null;
    let mr = entry.mr ?? sameIndex;
    let key = rkey;
    try {
      mr ??= dev.allocMr(pd, 1, rkey);
    } catch {
      // An index the stack's own regions hold: a key it picks stands in (rkey-map.ts).
      try {
        mr = dev.allocMr(pd, 1);
        key = mr.lkey;
        stackKeys.set(rkey, key);
      } catch {
        entry.mr = null; // the stack then refuses the invalidation: its QP goes to ERR, which the report names
        return;
      }
    }
    if (mr.lkey >>> 8 !== rkey >>> 8) key = stackKeys.get(rkey) ?? ((mr.lkey & ~0xff) | (rkey & 0xff)) >>> 0;
    if (key !== rkey) stackKeys.set(rkey, key);
    entry.mr = mr;
    dev.mapMrSg(mr, new Uint8Array(8));
    qp.postSend({ wrId: 0, opcode: WrOpcode.REG_MR, reg: { mr, key, access: ACCESS_ALL } });
    qp.runRequester();
  };
  for (const c of conv.requests.slice(Math.max(0, skippedAtStart))) {
    const b = c.p.bth;
    if (b === null) continue;
    feeding = c;
    const f = c.p.info?.flags ?? 0;
    const ePsn = qp.resp.psn;
    // A request past the stack's ePSN, where the real responder's answers show it got the PSNs in
    // between (the capture does not): the capture lost those requests.
    const through = refusedAt !== ePsn && psnDiff(b.psn, ePsn) > 0 && psnDiff(b.psn, ePsn) <= MAX_BRIDGE ? responderGotThrough(responses, requests, ePsn, lastFed) : null;
    const gap = through !== null;
    if (gap || skipping.length > 0) {
      // The stack is brought only as far as the real responder got: past that it is out of sequence
      // for both (a request lost on the wire as well).
      const target = through !== null && psnDiff(b.psn, psnAdd(through, 1)) > 0 ? psnAdd(through, 1) : b.psn;
      // A packet that continues the message the stack is in is fed after MIDDLE fillers; one inside a
      // message whose start the capture lost waits for the next message.
      const continues = target === b.psn && (f & OpFlag.START) === 0 && open !== null && open.send === ((f & OpFlag.SEND) !== 0) && skipping.length === 0;
      if ((f & OpFlag.START) === 0 && !continues) {
        skipping.push(c);
        continue;
      }
      const bridged =
        psnDiff(target, ePsn) > 0 &&
        gaps.bridge(ePsn, target, open, skipping, c, fillMr, conv.responderQpn, mtuBytes, (frame) => {
          driver.inject([frame]);
          clock.runUntil(clock.now());
          collect();
        });
      if (!bridged) break; // the stack cannot be brought in step: stop comparing here
      if (continues && open !== null) open.resid -= psnDiff(target, ePsn) * mtuBytes;
      else open = null;
      skipping = [];
      if (bridged && qp.resp.psn !== target) break; // the stack did not take the bridge: stop comparing here
      // What lost requests did to memory is not known: later READ data and atomic results are not
      // checked against what captured requests wrote before the gap.
      atomicKnown.clear();
      source.forget();
    }
    if (o.timing !== 'fast') clock.runUntil(Math.max(clock.now(), c.timeNs - t0));
    const wasAt = qp.resp.psn;
    const turnedAway = b.psn === wasAt && rnrAnswered(c);
    if (b.psn === wasAt && !turnedAway) {
      // As many receive WQEs as the real responder's credit count for this PSN says it had left
      // (credits.ts), and one for a request that takes one when none is there.
      const want = receivesWanted(credited, b.psn, takesWqe(c), srq !== null);
      // Bounded: a QP in the error state flushes each receive at once, so the count would never grow.
      for (let n = posted(); n < want && posted() < want; n++) postRecv();
    } else if (b.psn === wasAt && takesWqe(c)) {
      // The real responder had no receive WQE for it. Receives replay posted for earlier counts may
      // still be there (requests the capture lost took the real ones): replay withdraws its own.
      while (qp.hasRecvWqe()) qp.takeRecvWqe();
    }
    source.beforeRequest(c, responses);
    // Only an atomic the stack will execute (in sequence) finds the value preset: one it drops or
    // answers from its saved result must not change memory an earlier one still needs.
    if (b.psn === wasAt) presetAtomic(c);
    if (psnDiff(b.psn, wasAt) > 0) outOfSequenceAt.add(wasAt);
    if (c.p.ieth !== null) invalidatable(c, c.p.ieth.rkey);
    windows.beforeRequest(c, refusedAccess(c, requests, responses));
    const answersBefore = got.length;
    driver.inject([withStackKeys(c.bytes, c.p, stackKeys)]);
    for (const psn of psnsOf(c, mtuBytes)) {
      const frames = fed.get(psn);
      if (frames === undefined) fed.set(psn, [c.frame]);
      else frames.push(c.frame);
    }
    lastFed = c.frame;
    if ((f & OpFlag.START) !== 0 && (f & OpFlag.END) === 0) open = { send: (f & OpFlag.SEND) !== 0, resid: (c.p.reth?.dmaLength ?? 0) - c.p.payloadLength };
    else if (open !== null && (f & OpFlag.MIDDLE) !== 0) open.resid -= c.p.payloadLength;
    else if ((f & OpFlag.END) !== 0) open = null;

    clock.runUntil(clock.now());
    collect();
    if (b.psn === wasAt && qp.resp.psn === wasAt && !turnedAway && !got.slice(answersBefore).some((g) => g.kind === 'RNR_NAK')) refusedAt = wasAt;
  }
  clock.runUntilIdle(100_000);
  collect();

  // Responses to requests the capture does not hold (before it started, in its gaps) are not compared.
  const before = (psn: number): boolean => psnDiff(psn, startPsn) < 0;
  const shown = expected.filter((e) => !before(e.psn) && !gaps.covers(e.psn));
  const answered = got.filter((g) => !before(g.psn) && !gaps.covers(g.psn));
  // Memory-window keys the stack could not bind a window under: its answers to them are not its own.
  for (const [rkey, { psn, frames, why }] of windows.failures) {
    diffs.push(unsupportedDifference(Feature.MEMORY_WINDOW, psn, frames, `R_Key 0x${rkey.toString(16)} of a memory window bound off the wire`, `replay could not bind a window under that key (${why}), so the stack refused it`));
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
  const readRequests = conv.requests.flatMap((c) => (c.p.bth !== null && ((c.p.info?.flags ?? 0) & OpFlag.READ) !== 0 ? [{ frame: c.frame, psn: c.p.bth.psn, span: requestSpan(c.p, mtuBytes) }] : []));
  compare(shown, answered, diffs, {
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

/** The stack's payload equals the captured one as far as the capture holds it. */
const sameCaptured = (e: Resp, g: Resp): boolean => Buffer.compare(e.payload.subarray(0, e.captured), g.payload.subarray(0, e.captured)) === 0;

/** Equal answers. Credit counts are compared apart (credits.ts): they depend on receives posted, which replay sets up. */
function same(a: Resp, b: Resp): boolean {
  if (a.kind !== b.kind || a.psn !== b.psn) return false;
  if (a.kind !== 'ACK' && a.value !== b.value) return false;
  if (a.kind === 'READ') return a.opcode === b.opcode && a.msn === b.msn && a.payload.length === b.payload.length && sameCaptured(a, b);
  if (a.kind === 'ATOMIC') return a.orig === b.orig && a.msn === b.msn;
  return a.msn === b.msn;
}

const describe = (r: Resp | undefined): string =>
  r === undefined ? 'nothing' : `${r.name} PSN ${r.psn}${r.msn !== null ? ` MSN ${r.msn}` : ''}${r.kind === 'NAK' ? ` (${NAK_CODE_NAMES[r.value] ?? r.value})` : ''}${r.kind === 'READ' ? ` ${r.payload.length} bytes` : ''}`;

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
  diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'requestNotFed', psn: e.psn, lastPsn: e.psn, count: 1, frames: [e.frame], expected: describe(e), got: 'nothing', rule: 'the stack never got the request this answers: the capture lost it where replay could not bridge the gap (inside a message whose start was lost too, or at the capture’s end), or replay stopped before it' });
}

/** What the comparison knows of the capture and of what replay gave the stack. */
interface CompareContext {
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
}

/** Compares the real responder's answers (expected) with the stack's (got). */
function compare(expected: Resp[], got: Resp[], diffs: Difference[], { mtu, owed, fedBetween, outOfSequenceAt, resentAfter, readRequestOf }: CompareContext): void {
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
        const g = (e.kind === 'READ' ? all.find((x) => x.frame < e.frame && same(e, x)) : undefined) ?? (req !== null ? all.find((x) => x.frame === req) : undefined) ?? all[occurrence] ?? all[all.length - 1];
        if (g === undefined && !fed(e)) {
          notFed(diffs, e);
        } else if (g === undefined) {
          diffs.push({ class: DiffClass.VIOLATION, kind: e.kind === 'READ' ? 'missingReadResponse' : 'missingAtomicAck', psn: e.psn, frames: [e.frame], expected: describe(e), got: 'nothing', rule: 'IBTA §9.7.4.1: every READ response PSN / atomic ACK is owed' });
        } else if (e.kind === 'READ' && (g.opcode !== e.opcode || g.payload.length !== e.payload.length)) {
          diffs.push({ class: DiffClass.VIOLATION, kind: 'readSegmentation', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(g), rule: `READ responses are segmented by the path MTU (${mtu}): FIRST/MIDDLE full, LAST the rest` });
        } else if (e.kind === 'READ' && !sameCaptured(e, g)) {
          diffs.push({ class: DiffClass.VIOLATION, kind: 'readData', psn: e.psn, frames: [e.frame], expected: describe(e), got: 'different bytes', rule: 'READ returns the memory the request names' });
        } else if (e.kind === 'ATOMIC' && g.orig !== e.orig) {
          diffs.push({ class: DiffClass.VIOLATION, kind: 'atomicResult', psn: e.psn, frames: [e.frame], expected: `original 0x${e.orig?.toString(16)}`, got: `original 0x${g.orig?.toString(16)}`, rule: 'an atomic returns the value before the operation, executed once' });
        } else if (g.msn !== e.msn) {
          diffs.push({ class: DiffClass.POLICY, kind: 'msnInResponse', psn: e.psn, frames: [e.frame], expected: `MSN ${e.msn}`, got: `MSN ${g.msn}`, rule: 'when a READ or atomic counts toward the MSN within its responses differs between implementations' });
        }
        break;
      }
      case 'ACK': {
        const acks = gotBy.of('ACK', e.psn);
        const g = acks[occurrence] ?? acks[acks.length - 1];
        if (g !== undefined) {
          if (g.msn !== e.msn) diffs.push({ class: DiffClass.VIOLATION, kind: 'msn', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(g), rule: 'IBTA §9.7.5.1.2: the MSN counts completed request messages' });
          break;
        }
        // Acknowledged by a later ACK of the stack (coalescing), or not at all.
        const later = got.find((x) => (x.kind === 'ACK' || x.kind === 'READ' || x.kind === 'ATOMIC') && psnDiff(x.psn, e.psn) > 0);
        if (later === undefined && !fed(e)) notFed(diffs, e);
        else if (later !== undefined) diffs.push({ class: DiffClass.POLICY, kind: 'ackCoalescing', psn: e.psn, frames: [e.frame], expected: describe(e), got: `covered by ${describe(later)}`, rule: 'IBTA §9.7.5.1.1: a responder may coalesce ACKs' });
        else diffs.push({ class: DiffClass.VIOLATION, kind: 'missingAck', psn: e.psn, frames: [e.frame], expected: describe(e), got: 'no ACK covers this PSN', rule: 'a request with AckReq is acknowledged' });
        break;
      }
      case 'NAK': {
        const g = gotBy.of('NAK', e.psn)[0];
        // A PSN sequence error NAK is drawn by a request ahead of the expected PSN: where the stack was
        // never given one at that PSN, the capture lost the request that drew it.
        if (g === undefined && e.value === NakCode.REMOTE_OPERATIONAL_ERROR) {
          diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'responderFault', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(gotBy.firstAt(e.psn)), rule: 'a Remote Operational Error NAK reports a failure inside the real responder, not a fault of the request (IBTA §9.9.3 class A: its own resources, such as a receive WQE it cannot use; rxe RESPST_ERR_MALFORMED_WQE): replay cannot bring it about' });
        } else if (g === undefined && e.value === NakCode.PSN_SEQUENCE_ERROR && !outOfSequenceAt(e.psn)) {
          diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'nakCause', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(gotBy.firstAt(e.psn)), rule: 'the request that drew this NAK (one ahead of the expected PSN) is not in the capture, so the stack was never given it' });
        } else if (g === undefined) diffs.push({ class: DiffClass.VIOLATION, kind: 'missingNak', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(gotBy.firstAt(e.psn)), rule: 'IBTA §9.7.5.1: the same request stream draws the same NAK' });
        else if (g.value !== e.value) diffs.push({ class: DiffClass.VIOLATION, kind: 'nakKind', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(g), rule: 'the NAK code follows from the request' });
        break;
      }
      case 'RNR_NAK': {
        const g = gotBy.of('RNR_NAK', e.psn)[0];
        if (g === undefined) diffs.push({ class: DiffClass.POLICY, kind: 'rnr', psn: e.psn, frames: [e.frame], expected: describe(e), got: describe(gotBy.firstAt(e.psn)), rule: 'an RNR NAK depends on the responder application posting receives, which the capture does not show' });
        break;
      }
    }
  }
  // Answers the stack gave that the real responder did not (where it failed on its own, `responderFault` says so).
  for (const g of got) {
    if (expectedBy.of(g.kind, g.psn).length > 0) continue;
    if (expectedBy.of('NAK', g.psn).some((e) => e.value === NakCode.REMOTE_OPERATIONAL_ERROR)) continue;
    if (g.kind === 'ACK') {
      diffs.push({ class: DiffClass.POLICY, kind: 'extraAck', psn: g.psn, frames: [], expected: 'no ACK for this PSN', got: describe(g), rule: 'IBTA §9.7.5.1.1: how often to acknowledge is the responder\'s choice' });
    } else if (g.kind === 'READ' || g.kind === 'ATOMIC') {
      const cut = expected.length === 0 || psnDiff(g.psn, expected[expected.length - 1]?.psn ?? g.psn) > 0;
      // A response a captured READ or atomic request is owed, where the real responder went on past
      // it: the capture lost the real one (capture loss), it is not missing from the wire.
      const lost = !cut && owed(g.psn);
      const cls = cut || lost ? DiffClass.UNVERIFIABLE : DiffClass.VIOLATION;
      // Runs of READ responses are reported once, as a PSN range.
      const prev = diffs[diffs.length - 1];
      if (prev !== undefined && prev.kind === 'extraResponse' && prev.psn !== null && prev.class === cls && prev.lastPsn !== undefined && psnDiff(g.psn, prev.lastPsn) === 1) {
        prev.lastPsn = g.psn;
        prev.got = `${prev.count = (prev.count ?? 1) + 1} responses up to PSN ${g.psn}`;
        continue;
      }
      const rule = cut ? 'the capture ends before the real responder answered' : lost ? 'a captured request is owed this response and the real responder went on past it: the capture lost it' : 'responses the real responder never sent';
      diffs.push({ class: cls, kind: 'extraResponse', psn: g.psn, lastPsn: g.psn, frames: [], expected: 'nothing', got: describe(g), rule });
    } else if (g.kind === 'NAK' && resentAfter(g.psn, g.frame)) {
      // The requester went back to this PSN afterwards: the real responder did not take it either,
      // and its NAK is what the capture lost (or it stayed silent until the requester's timeout).
      diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'nakNotCaptured', psn: g.psn, frames: [], expected: 'no NAK', got: describe(g), rule: 'the capture shows the requester sending this PSN again afterwards, so the real responder did not take it: its NAK is not in the capture' });
    } else if (g.kind === 'NAK' && !answeredFrom(g.psn, g.frame)) {
      // Nothing after it shows the real responder taking this PSN: the capture lost its answers from
      // here on, and whether it took the request or NAKed it too cannot be told.
      diffs.push({ class: DiffClass.UNVERIFIABLE, kind: 'nakNotCaptured', psn: g.psn, frames: [], expected: 'no NAK', got: describe(g), rule: 'the capture holds no later answer of the real responder at or past this PSN, so whether it took this request cannot be told' });
    } else {
      diffs.push({ class: g.kind === 'RNR_NAK' ? DiffClass.POLICY : DiffClass.VIOLATION, kind: g.kind === 'RNR_NAK' ? 'rnr' : 'extraNak', psn: g.psn, frames: [], expected: 'no NAK', got: describe(g), rule: g.kind === 'RNR_NAK' ? 'receive posting differs' : 'the real responder accepted this request' });
    }
  }
}
