/**
 * The run of a responder replay: the requester's captured packets fed, in order, to the stack's QP,
 * at the captured times or back to back, with receive WQEs posted as the real responder's credit
 * counts show, atomic targets and READ data preset from its answers, capture gaps bridged
 * (resync.ts), and the stack's answers collected.
 */
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { WrOpcode } from '../../stack/work-request-codes';
import { decodeFrame } from '../../packets/decode';
import { AethKind, CREDITS_INVALID, NakCode, decodeSyndrome } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import { psnAdd, psnDiff } from '../../base/psn';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { QueuePair } from '../../stack/queue-pair';
import type { SharedReceiveQueue } from '../../stack/shared-receive-queue';
import type { CapturedPacket, RcConversation } from './conversation';
import { type Difference, malformedOutput } from './differences';
import type { ReplayOptions, ReplayStack } from './replay-stack';
import { CaptureGaps, MAX_BRIDGE, type OpenMessage, responderGotThrough } from './resync';
import { ReadSource } from './read-source';
import { withStackKeys } from './rkey-map';
import { type CreditedResp, receivesWanted } from './credits';
import type { AnswerIndex } from './answer-index';
import type { CapturedIndex } from './captured-index';
import { psnsOf } from './request-span';
import { accessRefused, refusedAccess } from './captured-refusals';
import { QpErrorWatch } from './qp-error';
import { WindowStandIns } from './window-stand-ins';
import { ACCESS_ALL, type ResponderMemory } from './responder-regions';
import { type Resp, toResp } from './responder-answer';

/** The stack's QP as replay set it up, with its receive buffer and memory-window stand-ins. */
export interface ResponderQp {
  qp: QueuePair;
  /** The shared receive queue the QP takes its receive WQEs from, when the captured responder sent no credits. */
  srq: SharedReceiveQueue | null;
  windows: WindowStandIns;
  rbuf: Uint8Array;
  rmr: MemoryRegion;
}

/**
 * The QP, as the capture shows it. A responder whose first credit count is code 31 generates no
 * end-to-end credits (an SRQ; rxe on every QP): the stack's QP then takes its receive WQEs from a
 * shared receive queue, so that it sends code 31 too (IBTA vol. 1 §9.7.7.2).
 */
export function setUpResponderQp(
  conv: RcConversation,
  stack: ReplayStack,
  pd: ProtectionDomain,
  cq: CompletionQueue,
  memory: ResponderMemory,
  expected: readonly Resp[],
  startPsn: number,
  requests: CapturedIndex,
  responses: CapturedIndex,
): ResponderQp {
  const { dev, pathMtu, peer } = stack;
  const firstCredit = expected.find((r) => r.credit !== null)?.credit ?? null;
  const srq = firstCredit === CREDITS_INVALID ? dev.createSrq(pd, { maxWr: 1 << 16 }) : null;
  const qp = dev.createQp(
    pd,
    { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 16, maxRecvWr: 1 << 16 }, ...(srq !== null ? { srq } : {}) },
    conv.responderQpn,
  );
  const windows = new WindowStandIns(dev, pd, qp, memory.stackKeys, memory.windowKey);
  for (const [rkey, mr] of memory.windowRegions) windows.setRegion(rkey, mr);
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
  return { qp, srq, windows, rbuf, rmr };
}

/** Everything the feed works with: the stack and its QP, the capture and its indexes, and the real responder's answers. */
export interface FeedSetup {
  conv: RcConversation;
  timing: ReplayOptions['timing'];
  stack: ReplayStack;
  pd: ProtectionDomain;
  cq: CompletionQueue;
  requests: CapturedIndex;
  responses: CapturedIndex;
  memory: ResponderMemory;
  /** The real responder's answers, by kind and PSN, and its credit counts by PSN (credits.ts). */
  expectedBy: AnswerIndex<Resp>;
  credited: ReadonlyMap<number, CreditedResp>;
  q: ResponderQp;
  /** The first request fed, and how many captured before it are skipped. */
  firstFed: CapturedPacket | undefined;
  skippedAtStart: number;
  /** Where the differences found while feeding go (malformed frames of the stack's). */
  diffs: Difference[];
}

/** What feeding leaves for the comparison. */
export interface FeedOutcome {
  /** The stack's answers, each carrying the frame of the captured request fed last when it was sent. */
  got: Resp[];
  framesOut: number;
  gaps: CaptureGaps;
  source: ReadSource;
  watch: QpErrorWatch;
  /** Per PSN, the frames of the captured requests at it the stack was given, in order: an answer to any other it cannot be asked for. */
  fed: Map<number, number[]>;
  /** The stack's ePSNs at which it was given a request ahead of it: where it could draw a PSN sequence error NAK (IBTA §9.7.5.2.2). */
  outOfSequenceAt: Set<number>;
}

/** The feed's state as it goes through the capture. */
interface FeedState extends FeedOutcome {
  /** The captured request being given to the stack (or bridged to): where an error of its QP is reported. */
  feeding: CapturedPacket | null;
  /** The frame of the captured request fed last. */
  lastFed: number;
  fillMr: MemoryRegion;
  /**
   * The ePSN at which the stack refused an in-sequence request the real responder did not turn away
   * (it NAKed or dropped it, other than for want of a receive WQE): from there the stack, not the
   * capture, is out of step, so replay does not bridge past it as a capture gap.
   */
  refusedAt: number | null;
  /** Packets inside a message whose start the capture lost, waiting for the next message. */
  skipping: CapturedPacket[];
  open: OpenMessage | null;
  /**
   * Per captured R_Key a SEND with Invalidate names and no region of the capture has: the
   * fast-registration region standing in for it, and the frames. Such a key (outside rxe's
   * memory-window range, which window-stand-ins.ts takes) was bound by a REG_MR that never reaches the
   * wire: only those can be invalidated (rxe rxe_invalidate_mr()). Replay binds a fast-registration
   * region under it with a REG_MR of the stack's own QP before the SEND, and again (a new key byte, the
   * same index) after each invalidation.
   */
  invalidated: Map<number, { mr: MemoryRegion | null; psn: number | null; frames: number[] }>;
  /** Receive WQEs posted so far. */
  recvs: number;
  /**
   * Atomic targets whose value is known. An atomic's target holds, before the first atomic on it the
   * capture shows (and again after a capture gap: a lost request may have changed it), the original
   * value the real responder returned.
   */
  atomicKnown: Set<string>;
}

/** Receive WQEs the stack's QP (or its SRQ) holds. */
const posted = (q: ResponderQp): number => (q.srq !== null ? q.srq.size : q.qp.rq.length);

/** Whether request `c` takes a receive WQE: a SEND's first packet, or a WRITE with immediate. */
function takesWqe(c: CapturedPacket): boolean {
  const f = c.p.info?.flags ?? 0;
  return (f & OpFlag.RWR) !== 0 && ((f & OpFlag.SEND) !== 0 ? (f & OpFlag.START) !== 0 : true);
}

/** Whether the real responder answered request `c` with an RNR NAK (its application had not posted a receive). */
function rnrAnswered(c: CapturedPacket, requests: CapturedIndex, responses: CapturedIndex): boolean {
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
  return nakedAt && !wentPast(psn, c.frame, again, requests, responses);
}

/**
 * Whether a response captured between frames `after` and `before` shows the real responder past
 * `psn` before the requester is seen going back (a request behind one it sent since `after`: what
 * the responder says after that may answer a resend of `psn` the capture lost; a first copy behind
 * one is the network's reordering, not a resend). Past it: an
 * acknowledgement at or after it (an ACK, READ response or atomic ACK; one for a duplicate carries
 * the PSN before the expected one, IBTA §9.7.5.1.2 C9-105), or a NAK after it (a PSN sequence error
 * or RNR NAK names the expected PSN, §9.7.5.2.2). Looks at a bounded number of frames.
 */
function wentPast(psn: number, after: number, before: number, requests: CapturedIndex, responses: CapturedIndex): boolean {
  const sent = requests.between(after, before);
  let nextSent = sent.next();
  let highest = psn;
  let left = 4096;
  for (const r of responses.between(after, before)) {
    for (; !nextSent.done && nextSent.value.frame < r.frame; nextSent = sent.next()) {
      const q = nextSent.value.p.bth?.psn;
      if (q === undefined) continue;
      // Behind the highest, and sent before: the requester went back. A first copy behind it is a
      // request the network reordered (it overtook nothing the requester resent).
      if (psnDiff(q, highest) < 0 && (requests.next(q, -1)?.frame ?? nextSent.value.frame) < nextSent.value.frame) return false;
      if (psnDiff(q, highest) < 0) continue;
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
}

/** Presets the target of atomic request `c` to the original value the real responder returned, unless already known. */
function presetAtomic(c: CapturedPacket, s: FeedState, setup: FeedSetup): void {
  const a = c.p.atomicEth;
  if (a === null || c.p.bth === null) return;
  const k = `${a.rkey}:${a.va}`;
  if (s.atomicKnown.has(k)) return;
  const ack = setup.expectedBy.of('ATOMIC', c.p.bth.psn)[0];
  const mr = setup.memory.mrs.get(a.rkey);
  // Without its captured ACK the value stays unknown: the next atomic on it is preset again.
  if (ack?.orig != null && mr && a.va >= mr.lo && Number(a.va - mr.lo) + 8 <= mr.buf.length) {
    new DataView(mr.buf.buffer, mr.buf.byteOffset).setBigUint64(Number(a.va - mr.lo), ack.orig, true);
    s.atomicKnown.add(k);
  }
}

function postRecv(s: FeedState, q: ResponderQp): void {
  const wr = { wrId: s.recvs++, sgList: [q.rmr.sge(0, q.rbuf.length)] };
  if (q.srq !== null) q.srq.postRecv(wr);
  else q.qp.postRecv(wr);
}

/** Takes the QP's completions and the stack's frames sent since the last call. */
function collect(s: FeedState, setup: FeedSetup): void {
  s.watch.drain();
  for (const f of setup.stack.driver.takeSent()) {
    s.framesOut++;
    const d = decodeFrame(f);
    if (!d.roce || d.error !== null) {
      setup.diffs.push(malformedOutput(d));
      continue;
    }
    const r = toResp(d, f, 0);
    // The stack's answers carry the frame of the captured request fed last: where in the capture they were sent.
    if (r !== null) s.got.push({ ...r, frame: s.lastFed, wqes: posted(setup.q) });
  }
}

/** Binds a fast-registration region under `rkey`, which SEND with Invalidate `c` names (FeedState.invalidated). */
function invalidatable(c: CapturedPacket, rkey: number, s: FeedState, setup: FeedSetup): void {
  const { dev } = setup.stack;
  const { stackKeys } = setup.memory;
  if (setup.memory.mrs.has(rkey) || setup.memory.windowKey(rkey)) return; // a window's key: window-stand-ins.ts
  let entry = s.invalidated.get(rkey);
  if (entry === undefined) s.invalidated.set(rkey, (entry = { mr: null, psn: c.p.bth?.psn ?? null, frames: [] }));
  entry.frames.push(c.frame);
  if (entry.mr?.valid === true) return;
  // A key of the same index bound before (the captured region registered again with a new key byte) is bound again.
  const sameIndex = [...s.invalidated.values()].find((x) => x.mr !== null && x.mr.lkey >>> 8 === rkey >>> 8 && !x.mr.valid)?.mr ?? null;
  let mr = entry.mr ?? sameIndex;
  let key = rkey;
  try {
    mr ??= dev.allocMr(setup.pd, 1, rkey);
  } catch {
    // An index the stack's own regions hold: a key it picks stands in (rkey-map.ts).
    try {
      mr = dev.allocMr(setup.pd, 1);
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
  setup.q.qp.postSend({ wrId: 0, opcode: WrOpcode.REG_MR, reg: { mr, key, access: ACCESS_ALL } });
  setup.q.qp.runRequester();
}

/**
 * Capture gaps: requests the capture lost although the real responder got them (it did not NAK
 * them). The stack is brought past them with zero-length WRITEs (resync.ts), at a message boundary.
 * Returns 'skip' for a packet inside a message whose start the capture lost (it waits for the next
 * message), 'stop' where the stack cannot be brought in step, else 'feed'.
 */
function bridgeGap(c: CapturedPacket, s: FeedState, setup: FeedSetup): 'skip' | 'stop' | 'feed' {
  const { conv, requests, responses, q } = setup;
  const { clock, driver, mtuBytes } = setup.stack;
  const b = c.p.bth;
  if (b === null) return 'feed';
  const f = c.p.info?.flags ?? 0;
  const ePsn = q.qp.resp.psn;
  // A request past the stack's ePSN, where the real responder's answers show it got the PSNs in
  // between (the capture does not): the capture lost those requests.
  const through =
    s.refusedAt !== ePsn && psnDiff(b.psn, ePsn) > 0 && psnDiff(b.psn, ePsn) <= MAX_BRIDGE ? responderGotThrough(responses, requests, ePsn, s.lastFed) : null;
  const gap = through !== null;
  if (!gap && s.skipping.length === 0) return 'feed';
  // The stack is brought only as far as the real responder got: past that it is out of sequence
  // for both (a request lost on the wire as well).
  const target = through !== null && psnDiff(b.psn, psnAdd(through, 1)) > 0 ? psnAdd(through, 1) : b.psn;
  // A packet that continues the message the stack is in is fed after MIDDLE fillers; one inside a
  // message whose start the capture lost waits for the next message.
  const continues = target === b.psn && (f & OpFlag.START) === 0 && s.open !== null && s.open.send === ((f & OpFlag.SEND) !== 0) && s.skipping.length === 0;
  if ((f & OpFlag.START) === 0 && !continues) {
    s.skipping.push(c);
    return 'skip';
  }
  const bridged =
    psnDiff(target, ePsn) > 0 &&
    s.gaps.bridge(ePsn, target, s.open, s.skipping, c, s.fillMr, conv.responderQpn, mtuBytes, (frame) => {
      driver.inject([frame]);
      clock.runUntil(clock.now());
      collect(s, setup);
    });
  if (!bridged) return 'stop'; // the stack cannot be brought in step: stop comparing here
  if (continues && s.open !== null) s.open.resid -= psnDiff(target, ePsn) * mtuBytes;
  else s.open = null;
  s.skipping = [];
  if (bridged && q.qp.resp.psn !== target) return 'stop'; // the stack did not take the bridge: stop comparing here
  // What lost requests did to memory is not known: later READ data and atomic results are not
  // checked against what captured requests wrote before the gap.
  s.atomicKnown.clear();
  s.source.forget();
  return 'feed';
}

/** Gives request `c` to the stack at its captured time, with the receives, memory and keys it finds there, and collects the answers. */
function feedRequest(c: CapturedPacket, t0: number, s: FeedState, setup: FeedSetup): void {
  const { requests, responses, q } = setup;
  const { clock, driver, mtuBytes } = setup.stack;
  const b = c.p.bth;
  if (b === null) return;
  const f = c.p.info?.flags ?? 0;
  if (setup.timing !== 'fast') clock.runUntil(Math.max(clock.now(), c.timeNs - t0));
  const wasAt = q.qp.resp.psn;
  const turnedAway = b.psn === wasAt && rnrAnswered(c, requests, responses);
  if (b.psn === wasAt && !turnedAway) {
    // As many receive WQEs as the real responder's credit count for this PSN says it had left
    // (credits.ts), and one for a request that takes one when none is there.
    const want = receivesWanted(setup.credited, b.psn, takesWqe(c), q.srq !== null);
    // Bounded: a QP in the error state flushes each receive at once, so the count would never grow.
    for (let n = posted(q); n < want && posted(q) < want; n++) postRecv(s, q);
  } else if (b.psn === wasAt && takesWqe(c)) {
    // The real responder had no receive WQE for it. Receives replay posted for earlier counts may
    // still be there (requests the capture lost took the real ones): replay withdraws its own.
    while (q.qp.hasRecvWqe()) q.qp.takeRecvWqe();
  }
  s.source.beforeRequest(c, responses);
  // Only an atomic the stack will execute (in sequence) finds the value preset: one it drops or
  // answers from its saved result must not change memory an earlier one still needs.
  if (b.psn === wasAt) presetAtomic(c, s, setup);
  if (psnDiff(b.psn, wasAt) > 0) s.outOfSequenceAt.add(wasAt);
  if (c.p.ieth !== null) invalidatable(c, c.p.ieth.rkey, s, setup);
  q.windows.beforeRequest(c, refusedAccess(c, requests, responses));
  const answersBefore = s.got.length;
  driver.inject([withStackKeys(c.bytes, c.p, setup.memory.stackKeys)]);
  for (const psn of psnsOf(c, mtuBytes)) {
    const frames = s.fed.get(psn);
    if (frames === undefined) s.fed.set(psn, [c.frame]);
    else frames.push(c.frame);
  }
  s.lastFed = c.frame;
  if ((f & OpFlag.START) !== 0 && (f & OpFlag.END) === 0) s.open = { send: (f & OpFlag.SEND) !== 0, resid: (c.p.reth?.dmaLength ?? 0) - c.p.payloadLength };
  else if (s.open !== null && (f & OpFlag.MIDDLE) !== 0) s.open.resid -= c.p.payloadLength;
  else if ((f & OpFlag.END) !== 0) s.open = null;

  clock.runUntil(clock.now());
  collect(s, setup);
  if (b.psn === wasAt && q.qp.resp.psn === wasAt && !turnedAway && !s.got.slice(answersBefore).some((g) => g.kind === 'RNR_NAK')) s.refusedAt = wasAt;
}

/** Feeds the requests, in order, at the captured times or back to back, and collects the stack's answers. */
export function feedRequests(setup: FeedSetup): FeedOutcome {
  const { conv, pd, cq, q } = setup;
  const { clock, dev, mtuBytes } = setup.stack;
  const t0 = conv.requests[0]?.timeNs ?? 0;
  const s: FeedState = {
    source: new ReadSource(setup.memory.mrs, mtuBytes),
    atomicKnown: new Set<string>(),
    got: [],
    framesOut: 0,
    feeding: null,
    watch: new QpErrorWatch(dev, q.qp, cq, () => ({ frame: s.feeding?.frame ?? null, psn: s.feeding?.p.bth?.psn ?? null })),
    gaps: new CaptureGaps(),
    fillMr: dev.regMr(pd, new Uint8Array(8), ACCESS_ALL),
    lastFed: setup.firstFed?.frame ?? 0,
    fed: new Map(),
    outOfSequenceAt: new Set(),
    refusedAt: null,
    skipping: [],
    open: null,
    invalidated: new Map(),
    recvs: 0,
  };
  for (const c of conv.requests.slice(Math.max(0, setup.skippedAtStart))) {
    if (c.p.bth === null) continue;
    s.feeding = c;
    const step = bridgeGap(c, s, setup);
    if (step === 'skip') continue;
    if (step === 'stop') break;
    feedRequest(c, t0, s, setup);
  }
  clock.runUntilIdle(100_000);
  collect(s, setup);
  return s;
}
