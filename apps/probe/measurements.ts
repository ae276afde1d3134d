/**
 * What the DUT did about each event, measured from this stack's own frame records (probe-driver.ts)
 * and judged against the IBTA rule it answers to. Every figure carries the configured value beside
 * the measured one, the clause, and where its timestamps come from (`errorNs`: how far the figure
 * may be from what happened on the wire; `pathRttNs`: the round trip of the path, which figures
 * that span one include).
 *
 * Figures:
 *  - `nakGeneration`: we skipped a request PSN; from our first request after the gap to the DUT's
 *    PSN sequence NAK, its PSN, and how many NAKs the gap drew (IBTA vol. 1 §9.7.5.2.2: the
 *    responder NAKs the first out-of-sequence request with the PSN it expects, once per gap; rxe
 *    `rxe_resp.c` check_psn() sent_psn_nak).
 *  - `nakRetransmit`: the DUT's request was lost and we NAKed the gap; from our NAK to the DUT's
 *    first resend and that resend's PSN (IBTA vol. 1 §9.7.5.2.6: go-back-N from the NAK's PSN).
 *  - `readRetry`: our READ response was lost and a later one arrived; from that later response to
 *    the DUT's new READ request and its PSN (go-back-N from the first missing response, §9.7.5.2.6).
 *  - `timeoutRetransmit`: nothing told the DUT (the loss was at the tail, or we withheld the ACK);
 *    from the DUT's last frame before the silence to its resend, judged against 4.096 µs × 2^timeout
 *    from the earliest start its timer can have had, and the resend's PSN against the first one we
 *    had not acknowledged (IBTA vol. 1 §9.7.6.1.3).
 *  - `retryCount`: every transmission of the PSN lost; how many resends before the DUT stopped,
 *    against retry_cnt (IBTA vol. 1 §9.7.6.1.3).
 *  - `rnrWait`: we answered a SEND with an RNR NAK; from the NAK to the DUT's resend, against the
 *    NAK's timer (IBTA vol. 1 §9.7.5.2.8, timer codes of table 45).
 *  - `ackDelay`: we held our ACK; whether the DUT's local ACK timer fired before it arrived (a
 *    resend no sooner than 4.096 µs × 2^timeout after its last frame, from the first PSN it had no
 *    ACK for) or not, as the hold plus the round trip against the timeout says it must
 *    (IBTA vol. 1 §9.7.6.1.3).
 *  - `cnpGeneration`: we set CE on a request; from it to the DUT's CNP, when one is due (none in the
 *    DUT's np_min_time_between_cnps before; RoCEv2 annex A17.9.2, DCQCN §3.1).
 *  - `cnpSpacing`: a run of CE marks on one QP; the DUT's CNPs counted against what its interval
 *    allows, and the shortest gap between them against that interval.
 *  - `duplicateResponse`: we sent a request twice; the DUT responder's answer to the copy: a WRITE
 *    or SEND acknowledged again, not NAKed (IBTA vol. 1 C9-105), a READ executed again (its
 *    responses sent again; rxe `rxe_resp.c` duplicate_request()), an atomic answered from its saved
 *    result: the copy's ATOMIC ACKNOWLEDGE carries the first answer's original value and the next
 *    atomic on the word finds it changed once (rxe duplicate_request(), atomic_reply()).
 *  - `rateCut`: we sent CNPs to the DUT's requester; from our first CNP to the first of its frames
 *    at a lower rate, the rate before and after, and the α the cut stands for (RoCEv2 annex A17.9:
 *    how a reaction point reacts is the implementation's; DCQCN §3.2 for the reading).
 *  - `rateRecovery`: after the last cut, how long until its rate is back where it was, with how
 *    many increases, and the DCQCN timer and byte counter those increases fit (dcqcn-estimate.ts).
 *  A `seq-nak` (we answered the DUT's request with a PSN sequence NAK) is measured as a
 *  `nakRetransmit`.
 */
import { psnAdd, psnDiff } from '../../base/psn';
import { AethKind, NakCode, RNR_TIMER_USEC, decodeSyndrome } from '../../packets/aeth';
import { OPCODES, OpFlag, Opcode } from '../../packets/opcodes';
import { localAckTimeoutNs } from '../../stack/qp-attributes';
import type { FrameRecord } from './probe-driver';
import { type DcqcnEstimate, estimateDcqcn } from './dcqcn-estimate';
import { pacedLevels, windowCut } from './rate-levels';
import { RP_DEFAULTS } from '../../stack/congestion/parameters';
import { DutRole, EventType, type ProbeEvent, type ProbeScenario, ProbeVerb } from './scenario';

export const FigureKind = {
  NAK_GENERATION: 'nakGeneration',
  NAK_RETRANSMIT: 'nakRetransmit',
  READ_RETRY: 'readRetry',
  TIMEOUT_RETRANSMIT: 'timeoutRetransmit',
  RETRY_COUNT: 'retryCount',
  RNR_WAIT: 'rnrWait',
  ACK_DELAY: 'ackDelay',
  CNP_GENERATION: 'cnpGeneration',
  CNP_SPACING: 'cnpSpacing',
  DUPLICATE_RESPONSE: 'duplicateResponse',
  RATE_CUT: 'rateCut',
  RATE_RECOVERY: 'rateRecovery',
} as const;
export type FigureKind = (typeof FigureKind)[keyof typeof FigureKind];
export const FIGURE_KINDS: readonly FigureKind[] = Object.values(FigureKind);

export type Verdict = 'pass' | 'fail' | 'none';

/** One measured behaviour of the DUT. Times in ns; null where the DUT did not do the thing measured. */
export interface Figure {
  kind: FigureKind;
  /** Relative QP number and the event's relative PSN. */
  qp: number;
  psn: number;
  /** The scenario line of the event that caused it. */
  eventLine: number;
  /** The measured time (what the figure's description says it spans), or null. */
  measuredNs: number | null;
  /** The measured time less the path's round trip, when the figure spans one and the round trip is known. */
  dutNs: number | null;
  /** The configured or required value it is judged against (a time in ns, a count, a relative PSN), or null. */
  configured: number | null;
  /** The count or relative PSN the figure is about (NAKs per gap, resends, the resend's PSN). */
  value: number | null;
  verdict: Verdict;
  /** Why, in words, with the measured and configured values. */
  detail: string;
  /** The IBTA clause the verdict cites. */
  clause: string;
  /** `rateCut` and `rateRecovery`: the DUT's rate over the run and what it says of its reaction point. */
  rate?: RateFigure;
}

/** The DUT's send rate around our CNPs (rate-levels.ts) and the DCQCN reading of it (dcqcn-estimate.ts). */
export interface RateFigure {
  /** The rate in effect when our first CNP left, Mb/s. */
  beforeMbps: number;
  /** Our CNPs to the QP, when they left, ns. */
  cnpsNs: number[];
  /** The levels from the one before our first CNP on (at most 200): when each began, ns, and its rate, Mb/s. */
  levels: { atNs: number; mbps: number }[];
  /** The last of the DUT's frames drawn (the end of the last level), ns. */
  untilNs: number;
  estimate: DcqcnEstimate;
}

/** The QPs of a run as numbers on the wire. */
export interface ProbeQp {
  ourQpn: number;
  dutQpn: number;
  /** The data requester's first PSN (the DUT's when it is the requester). */
  requestStartPsn: number;
}

export interface MeasureContext {
  scenario: ProbeScenario;
  qps: readonly ProbeQp[];
  records: readonly FrameRecord[];
  /** The path's round trip (both one-way delays), when known; figures spanning it give `dutNs`. */
  pathRttNs: number | null;
  /**
   * How far a timestamp may be off (a live driver's polling delay; 0 on the in-memory link): a time
   * short of its timer by no more than this is not judged early.
   */
  errorNs?: number;
}

const isRequest = (op: number): boolean => ((OPCODES[op]?.flags ?? 0) & OpFlag.REQ) !== 0;
const isResponse = (op: number): boolean => ((OPCODES[op]?.flags ?? 0) & OpFlag.RESP) !== 0;
const isReadRequest = (op: number): boolean => isRequest(op) && ((OPCODES[op]?.flags ?? 0) & OpFlag.READ) !== 0;
const isSeqNak = (r: FrameRecord): boolean => {
  if (r.syndrome < 0) return false;
  const s = decodeSyndrome(r.syndrome);
  return s.kind === AethKind.NAK && s.value === NakCode.PSN_SEQUENCE_ERROR;
};
const isCnp = (r: FrameRecord): boolean => r.opcode === Opcode.CNP;
const isRnrNak = (r: FrameRecord): boolean => r.syndrome >= 0 && decodeSyndrome(r.syndrome).kind === AethKind.RNR_NAK;
/** A response that acknowledges its PSN: an ACK, or a READ response (middle ones carry no AETH). */
const acknowledges = (r: FrameRecord): boolean => isResponse(r.opcode) && (r.syndrome < 0 || decodeSyndrome(r.syndrome).kind === AethKind.ACK);

interface QpView {
  /** Records of this QP, in order: the DUT's frames to our QP and ours to its. */
  recs: FrameRecord[];
  start: number;
}

function viewOf(ctx: MeasureContext, qp: number): QpView {
  const q = ctx.qps[qp]!;
  // The data direction only: the data responder's own requests and their answers run on the other
  // end's PSNs (rping's client SENDs its buffer advertisements on the QP the server READs and WRITEs
  // on), and one PSN number would otherwise name two frames. perftest's QPs carry none.
  const dutRequests = ctx.scenario.dut.role === DutRole.REQUESTER;
  const otherWay = (r: FrameRecord): boolean => ((r.dir === 'rx') !== dutRequests ? isRequest(r.opcode) : isResponse(r.opcode));
  return {
    recs: ctx.records.filter((r) => (r.dir === 'rx' ? r.destQp === q.ourQpn : r.destQp === q.dutQpn) && !otherWay(r)),
    start: q.requestStartPsn,
  };
}

const rel = (v: QpView, psn: number): number => psnDiff(psn, v.start);

/** The index of the `n`-th (1-based) record matching `pred`, or -1. */
function nth(recs: readonly FrameRecord[], n: number, pred: (r: FrameRecord) => boolean): number {
  let k = 0;
  for (let i = 0; i < recs.length; i++) if (pred(recs[i]!) && ++k === n) return i;
  return -1;
}

function firstFrom(recs: readonly FrameRecord[], from: number, pred: (r: FrameRecord) => boolean): number {
  for (let i = from; i < recs.length; i++) if (pred(recs[i]!)) return i;
  return -1;
}

/**
 * The DUT's first resend at or after `from`: a request of the DUT whose PSN is not beyond the
 * highest request PSN it had sent before (go-back-N's first frame), or -1.
 */
function firstResend(recs: readonly FrameRecord[], from: number, mtu: number): number {
  let high: number | null = null;
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i]!;
    if (r.dir !== 'rx' || !isRequest(r.opcode)) continue;
    if (i >= from && high !== null && psnDiff(r.psn, high) <= 0) return i;
    const last = psnAdd(r.psn, lastPsnOffset(r, mtu));
    if (high === null || psnDiff(last, high) > 0) high = last;
  }
  return -1;
}

/**
 * The first frame of the go-back-N burst that the DUT's request at `i` belongs to: back over the
 * requests just before it whose PSNs run up to its own without a gap.
 */
function burstStart(recs: readonly FrameRecord[], i: number, mtu: number): number {
  let b = i;
  for (let j = i - 1; j >= 0; j--) {
    const r = recs[j]!;
    if (r.dir !== 'rx' || !isRequest(r.opcode)) continue;
    if (psnAdd(r.psn, lastPsnOffset(r, mtu) + 1) !== recs[b]!.psn) break;
    b = j;
  }
  return b;
}

/** How many PSNs past its own a request takes: a READ request one per response packet (rxe `rxe_req.c` advances its PSN by the response count), others none. */
function lastPsnOffset(r: FrameRecord, mtu: number): number {
  return ((OPCODES[r.opcode]?.flags ?? 0) & OpFlag.READ) !== 0 && r.reth !== null ? Math.max(1, Math.ceil(r.reth.length / mtu)) - 1 : 0;
}

function figure(ev: ProbeEvent, kind: FigureKind, f: Omit<Figure, 'kind' | 'qp' | 'psn' | 'eventLine'>): Figure {
  return { kind, qp: ev.qpn, psn: ev.psn, eventLine: ev.line, ...f };
}

/** A figure that could not be measured (the event never happened, or nothing followed it): no verdict. */
function unmeasured(ev: ProbeEvent, kind: FigureKind, clause: string, detail: string, configured: number | null = null): Figure {
  return figure(ev, kind, { measuredNs: null, dutNs: null, configured, value: null, verdict: 'none', detail, clause });
}

const us = (ns: number): string => `${(ns / 1000).toFixed(3)} µs`;
const less = (ns: number, rtt: number | null): number | null => (rtt === null ? null : ns - rtt);

function nakGeneration(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const v = viewOf(ctx, ev.qpn);
  const P = psnAdd(v.start, ev.psn);
  const clause = 'IBTA vol. 1 §9.7.5.2.2';
  const n = ev.iter === 'all' ? 1 : ev.iter;
  const skipped = nth(v.recs, n, (r) => r.dir === 'tx' && r.psn === P && isRequest(r.opcode));
  if (skipped < 0 || v.recs[skipped]!.fate !== 'dropped')
    return [unmeasured(ev, FigureKind.NAK_GENERATION, clause, `transmission ${n} of PSN ${ev.psn} was never sent`)];
  // The PSN the DUT expected when we skipped: a responder that has NAKed an earlier gap drops what comes
  // after it silently until that PSN arrives (IBTA vol. 1 §9.7.5.2.2), so a skip then shows no gap of its own.
  let expected = v.start;
  for (let i = 0; i < skipped; i++) {
    const r = v.recs[i]!;
    if (r.dir === 'tx' && r.fate === 'delivered' && isRequest(r.opcode) && r.psn === expected)
      expected = psnAdd(r.psn, lastPsnOffset(r, ctx.scenario.traffic.mtu) + 1);
  }
  if (expected !== P)
    return [
      unmeasured(
        ev,
        FigureKind.NAK_GENERATION,
        clause,
        `the DUT was still waiting for PSN ${rel(v, expected)} when we skipped PSN ${ev.psn}: it drops what follows a gap until the PSN it waits for arrives, so this skip shows no gap of its own`,
      ),
    ];
  const trigger = firstFrom(v.recs, skipped + 1, (r) => r.dir === 'tx' && r.fate === 'delivered' && isRequest(r.opcode) && psnDiff(r.psn, P) > 0);
  if (trigger < 0)
    return [
      unmeasured(
        ev,
        FigureKind.NAK_GENERATION,
        clause,
        `no request followed the skipped PSN ${ev.psn}: the DUT could not see the gap (our timeout recovers it)`,
      ),
    ];
  const nak = firstFrom(v.recs, trigger, (r) => r.dir === 'rx' && isSeqNak(r));
  if (nak < 0)
    return [
      figure(ev, FigureKind.NAK_GENERATION, {
        measuredNs: null,
        dutNs: null,
        configured: ev.psn,
        value: 0,
        verdict: 'fail',
        detail: `no PSN sequence NAK for the gap at PSN ${ev.psn}`,
        clause,
      }),
    ];
  const t0 = v.recs[trigger]!.timeNs;
  const nakRec = v.recs[nak]!;
  // NAKs for the gap: up to the first response that shows the DUT got the PSN (then a new gap may be NAKed again).
  const closed = firstFrom(v.recs, nak + 1, (r) => r.dir === 'rx' && acknowledges(r) && psnDiff(r.psn, P) >= 0);
  const end = closed < 0 ? v.recs.length : closed;
  let naks = 0;
  for (let i = trigger; i < end; i++) if (v.recs[i]!.dir === 'rx' && isSeqNak(v.recs[i]!) && v.recs[i]!.psn === nakRec.psn) naks++;
  const latency = nakRec.timeNs - t0;
  const nakRel = rel(v, nakRec.psn);
  const ok = nakRel === ev.psn && naks === 1;
  return [
    figure(ev, FigureKind.NAK_GENERATION, {
      measuredNs: latency,
      dutNs: less(latency, ctx.pathRttNs),
      configured: ev.psn,
      value: naks,
      verdict: ok ? 'pass' : 'fail',
      detail: `NAK for PSN ${nakRel} (expected ${ev.psn}) ${us(latency)} after our first request past the gap; ${naks} NAK${naks === 1 ? '' : 's'} for the gap (one allowed)`,
      clause,
    }),
  ];
}

/** The first PSN the DUT had no acknowledgement for when it resent at `at`: one past the highest we acknowledged before. */
function firstUnacked(v: QpView, at: number): number {
  let high: number | null = null;
  for (let i = 0; i < at; i++) {
    const r = v.recs[i]!;
    if (r.dir === 'tx' && r.fate === 'delivered' && acknowledges(r) && (high === null || psnDiff(r.psn, high) > 0)) high = r.psn;
  }
  return high === null ? v.start : psnAdd(high, 1);
}

/**
 * The record before `resend` at or after which the DUT's local ACK timer started, whichever way a
 * DUT keeps it: one that restarts it on an acknowledgement that makes progress (rxe's completer)
 * started it no earlier than our last such acknowledgement (an ACK, a READ response, or a sequence
 * NAK for the PSNs before its own); one that starts it at a send started it no earlier than the
 * first send of the first PSN that acknowledgement left outstanding. The earlier of the two, else
 * the DUT's first request; -1 when there is neither.
 */
function timerStartLowerBound(v: QpView, resend: number, rttNs: number): number {
  // Only acknowledgements that reached the DUT before it resent: sent a round trip before we got the resend.
  const { at, high } = lastProgress(v, resend, v.recs[resend]!.timeNs - rttNs);
  const firstRequest = v.recs.findIndex((r, i) => i < resend && r.dir === 'rx' && isRequest(r.opcode));
  if (at < 0) return firstRequest;
  const outstanding = psnAdd(high ?? v.start, 1);
  const firstSend = v.recs.findIndex((r, i) => i < resend && r.dir === 'rx' && isRequest(r.opcode) && r.psn === outstanding);
  return firstSend < 0 ? at : Math.min(at, firstSend);
}

/**
 * Our last acknowledgement before record `before` that moved the DUT's acknowledged PSN forward
 * (`at`, -1 for none), the PSN acknowledged through then (`high`), and whether it was a sequence NAK.
 */
function lastProgress(v: QpView, before: number, sentBy = Number.POSITIVE_INFINITY): { at: number; high: number | null; byNak: boolean } {
  let high: number | null = null;
  let at = -1;
  let byNak = false;
  for (let i = 0; i < before; i++) {
    const r = v.recs[i]!;
    if (r.dir !== 'tx' || r.fate !== 'delivered' || r.timeNs > sentBy) continue;
    // A sequence NAK acknowledges every PSN before its own (IBTA vol. 1 §9.7.5.2.2; rxe_comp.c check_ack(): "a nak implicitly acks all packets with psns before").
    const through = acknowledges(r) ? r.psn : isSeqNak(r) ? psnAdd(r.psn, -1) : null;
    if (through !== null && (high === null || psnDiff(through, high) > 0)) {
      high = through;
      at = i;
      byNak = !acknowledges(r);
    }
  }
  return { at, high, byNak };
}

function timeoutFigure(ctx: MeasureContext, ev: ProbeEvent, v: QpView, resend: number): Figure {
  const clause = 'IBTA vol. 1 §9.7.6.1.3';
  const T = localAckTimeoutNs(ctx.scenario.traffic.minRetransmitTimeout);
  const r = v.recs[resend]!;
  // The DUT's timer ran from one of its frames since its last progress: the last of them bounds the figure from below.
  let last = resend - 1;
  while (last >= 0 && v.recs[last]!.dir !== 'rx') last--;
  const measured = last < 0 ? null : r.timeNs - v.recs[last]!.timeNs;
  const want = rel(v, firstUnacked(v, resend));
  const got = rel(v, r.psn);
  // Early only when the resend came less than the timeout after the earliest moment the DUT's timer
  // can have started: our last acknowledgement that moved its acknowledged PSN (it restarts the timer
  // when it arrives, or stops it and the next send starts it: IBTA vol. 1 §9.7.6.1.3; rxe_comp.c
  // reset_retry_timer()), else its first request. The DUT's last frame is no such moment: the timer
  // may have run since an earlier one, and a correct DUT then resends sooner after that last frame.
  const start = timerStartLowerBound(v, resend, ctx.pathRttNs ?? 0);
  const since = start < 0 ? null : r.timeNs - v.recs[start]!.timeNs;
  const inTime = since !== null && since >= T - (ctx.errorNs ?? 0);
  return figure(ev, FigureKind.TIMEOUT_RETRANSMIT, {
    measuredNs: measured,
    dutNs: null,
    configured: T,
    value: got,
    verdict: inTime && got === want ? 'pass' : 'fail',
    detail: `resent from PSN ${got} (first unacknowledged ${want}) ${measured === null ? '?' : us(measured)} after its last frame${since !== null && since !== measured ? `, ${us(since)} after its timer could first have started` : ''}; timeout ${ctx.scenario.traffic.minRetransmitTimeout} is ${us(T)}${inTime ? '' : ': earlier than the timeout'}`,
    clause,
  });
}

/**
 * retry_cnt counts tries without progress: an acknowledgement (an ACK, a READ response, or a
 * sequence NAK for the PSNs before its own) that moves the DUT's acknowledged PSN forward gives it
 * its retries back (IBTA vol. 1 §9.7.6.1.3; rxe resets retry_cnt on every
 * ACK that moves comp.psn). So the resends counted are those after our last such acknowledgement.
 */
function retryCount(ctx: MeasureContext, ev: ProbeEvent, v: QpView): Figure {
  const P = psnAdd(v.start, ev.psn);
  const { at: lastProgressAt, high, byNak } = lastProgress(v, v.recs.length);
  const all = v.recs.map((r, i) => ({ r, i })).filter(({ r }) => r.dir === 'rx' && r.psn === P && isRequest(r.opcode));
  const firstEver = all[0]?.i ?? -1;
  const mtu = ctx.scenario.traffic.mtu;
  // A try sent before the DUT took our last ACK (its timer fired while the ACK was on its way, live)
  // comes in a go-back-N burst that starts at a PSN the ACK covered: it is not after the progress,
  // even where we polled the burst's last frames after sending the ACK (the ACK answered its first).
  const after = all.filter(({ i }) => {
    if (i <= lastProgressAt) return false;
    const start = v.recs[burstStart(v.recs, i, mtu)]!;
    return !(high !== null && start.psn !== P && psnDiff(start.psn, high) <= 0);
  });
  // After a NAK that made progress, the first send of the PSN is the go-back-N it asked for, not a try without progress.
  const tries = after.filter(({ i }) => i !== firstEver).slice(byNak ? 1 : 0);
  const resends = tries.length;
  const total = Math.max(0, all.length - 1);
  const want = ctx.scenario.traffic.maxRetransmitRetry;
  // Each try is the local ACK timer firing: it resends from its first unacknowledged PSN and re-arms
  // the timer as it does (rxe_comp.c: the timeout path restarts the retransmit timer; so does this
  // stack's completer), so the timer's period is the gap between the first frames of two tries'
  // bursts (the figure). The PSN's first send is not a try: the timer may have started before it,
  // at an earlier frame or at our last ACK, and that gap is shorter than the timeout by right.
  const starts = tries.map(({ i }) => v.recs[burstStart(v.recs, i, mtu)]!.timeNs);
  const gaps = starts.slice(1).map((t, k) => t - starts[k]!);
  const T = localAckTimeoutNs(ctx.scenario.traffic.minRetransmitTimeout);
  // The verdict cannot hold one gap to the timeout: a try that left its sender late (a busy DUT, a
  // timer fired in a later softirq) makes the next gap short with no early timer. What binds every
  // DUT is the chain: its timer first started no earlier than its first request, and each firing
  // re-arms it no earlier than the firing before, so the k-th timer resend of the PSN (k from 1;
  // a go-back-N our sequence NAK asked for is no firing) leaves no earlier than k timeouts after
  // that first request.
  const firstRequest = v.recs.find((r) => r.dir === 'rx' && isRequest(r.opcode))?.timeNs ?? 0;
  const triesSet = new Set(tries.map(({ i }) => i));
  let fired = 0;
  let early = 0;
  let prev = firstEver;
  for (const { i } of all) {
    if (i === firstEver) continue;
    const nakBefore = v.recs.slice(prev + 1, i).some((r) => r.dir === 'tx' && r.fate === 'delivered' && isSeqNak(r));
    prev = i;
    if (nakBefore) continue;
    fired++;
    const at = v.recs[burstStart(v.recs, i, mtu)]!.timeNs;
    if (triesSet.has(i) && at < firstRequest + fired * T - (ctx.errorNs ?? 0)) early++;
  }
  return figure(ev, FigureKind.RETRY_COUNT, {
    measuredNs: gaps.length === 0 ? null : Math.min(...gaps),
    dutNs: null,
    configured: want,
    value: resends,
    verdict: resends === want && early === 0 ? 'pass' : 'fail',
    detail: `PSN ${ev.psn} resent ${resends} time${resends === 1 ? '' : 's'} after the DUT's last progress (retry_cnt ${want}; ${total} in all) before it stopped; shortest gap between those tries ${gaps.length === 0 ? 'n/a' : us(Math.min(...gaps))}${early > 0 ? `; ${early} left sooner than the timer can have fired (the DUT's first request + one timeout per firing)` : ''}`,
    clause: 'IBTA vol. 1 §9.7.6.1.3',
  });
}

/** A DUT frame dropped, or our answer to it withheld or dropped: what recovered it, and how. */
function lossRecovery(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const v = viewOf(ctx, ev.qpn);
  const P = psnAdd(v.start, ev.psn);
  const n = ev.iter === 'all' ? 1 : ev.iter;
  // A seq-nak event's request is dropped before our responder, as a drop's is; our NAK answers it at once.
  const dutFrame = ev.type === EventType.DROP || ev.type === EventType.SEQ_NAK;
  const ours = !dutFrame;
  const lost = nth(v.recs, n, (r) =>
    ours ? r.dir === 'tx' && r.psn === P && isResponse(r.opcode) && (ev.type !== EventType.WITHHOLD_ACK || r.syndrome >= 0) : r.dir === 'rx' && r.psn === P,
  );
  const none = (detail: string): Figure[] => [unmeasured(ev, FigureKind.TIMEOUT_RETRANSMIT, 'IBTA vol. 1 §9.7.6.1.3', detail)];
  if (lost < 0 || v.recs[lost]!.fate !== 'dropped') return none(`the ${ours ? 'answer' : 'DUT frame'} at PSN ${ev.psn} (transmission ${n}) never occurred`);
  const resend = firstResend(v.recs, lost + 1, ctx.scenario.traffic.mtu);
  // A later ACK of ours that acknowledged the PSN told the DUT all it needed: an ACK acknowledges every
  // request up to its PSN (IBTA vol. 1 §9.7.5.1.1, coalesced acknowledgements), so there is nothing to recover.
  const covered =
    resend < 0 && ev.type === EventType.WITHHOLD_ACK
      ? firstFrom(v.recs, lost + 1, (r) => r.dir === 'tx' && r.fate === 'delivered' && acknowledges(r) && psnDiff(r.psn, P) > 0)
      : -1;
  if (covered >= 0) return none(`our ACK of PSN ${rel(v, v.recs[covered]!.psn)} acknowledged PSN ${ev.psn} too: the DUT had nothing to recover`);
  if (resend < 0) {
    return [
      figure(ev, FigureKind.TIMEOUT_RETRANSMIT, {
        measuredNs: null,
        dutNs: null,
        configured: localAckTimeoutNs(ctx.scenario.traffic.minRetransmitTimeout),
        value: null,
        verdict: 'fail',
        detail: `the DUT never resent after the loss at PSN ${ev.psn}`,
        clause: 'IBTA vol. 1 §9.7.6.1.3',
      }),
    ];
  }
  const out: Figure[] = [];
  // What told the DUT: our sequence NAK (a DUT request lost), or a later READ response of ours (one of ours lost).
  const nak = dutFrame ? firstFrom(v.recs, lost + 1, (r) => r.dir === 'tx' && r.fate === 'delivered' && isSeqNak(r)) : -1;
  const later =
    ev.type === EventType.DROP_READ_RESPONSE
      ? firstFrom(v.recs, lost + 1, (r) => r.dir === 'tx' && r.fate === 'delivered' && isResponse(r.opcode) && psnDiff(r.psn, P) > 0)
      : -1;
  const tellAt = nak >= 0 && nak < resend ? nak : later >= 0 && later < resend ? later : -1;
  if (tellAt >= 0) {
    const told = v.recs[tellAt]!;
    const r = v.recs[resend]!;
    const latency = r.timeNs - told.timeNs;
    const want = dutFrame ? rel(v, told.psn) : ev.psn;
    const got = rel(v, r.psn);
    if (dutFrame) {
      const detail = `resent from PSN ${got} (expected ${want}) ${us(latency)} after our NAK for PSN ${want}`;
      out.push(
        figure(ev, FigureKind.NAK_RETRANSMIT, {
          measuredNs: latency,
          dutNs: less(latency, ctx.pathRttNs),
          configured: want,
          value: got,
          verdict: got === want ? 'pass' : 'fail',
          detail,
          clause: 'IBTA vol. 1 §9.7.5.2.6',
        }),
      );
    } else {
      out.push(readRetry(ctx, ev, v, r, latency));
    }
  } else {
    out.push(timeoutFigure(ctx, ev, v, resend));
  }
  if (ev.iter === 'all') out.push(retryCount(ctx, ev, v));
  return out;
}

/**
 * The DUT's new READ request after a lost response: from the missing PSN, for the rest of the
 * message, at the address the missing response would have written (go-back-N from the first
 * missing PSN, IBTA vol. 1 §9.7.5.2.6; rxe `rxe_req.c` req_retry() advances a READ's address and
 * length by the responses already received).
 */
function readRetry(ctx: MeasureContext, ev: ProbeEvent, v: QpView, r: FrameRecord, latency: number): Figure {
  const t = ctx.scenario.traffic;
  const got = rel(v, r.psn);
  // The DUT's READ request whose response PSNs hold the lost one (its first copy): perftest's READs
  // are back to back, rping's come between SENDs and WRITEs (rping-layout.ts).
  const P = psnAdd(v.start, ev.psn);
  const read = v.recs.find(
    (x) => x.dir === 'rx' && x.reth !== null && isReadRequest(x.opcode) && psnDiff(P, x.psn) >= 0 && psnDiff(P, x.psn) <= lastPsnOffset(x, t.mtu),
  );
  const inMsg = read === undefined ? ev.psn % Math.max(1, Math.ceil(t.messageSize / t.mtu)) : psnDiff(P, read.psn);
  const wantLen = (read?.reth?.length ?? t.messageSize) - inMsg * t.mtu;
  const wantVa = read?.reth == null ? null : read.reth.va + BigInt(inMsg * t.mtu);
  const gotLen = r.reth?.length ?? null;
  const gotVa = r.reth?.va ?? null;
  const ok = got === ev.psn && gotLen === wantLen && (wantVa === null || gotVa === wantVa);
  const vaText = gotVa === null ? 'no RETH' : `VA +${wantVa === null ? '?' : (gotVa - (wantVa - BigInt(inMsg * t.mtu))).toString()}`;
  return figure(ev, FigureKind.READ_RETRY, {
    measuredNs: latency,
    dutNs: less(latency, ctx.pathRttNs),
    configured: ev.psn,
    value: got,
    verdict: ok ? 'pass' : 'fail',
    detail: `new READ from PSN ${got} (expected ${ev.psn}), ${vaText} (expected +${inMsg * t.mtu}), length ${gotLen ?? '?'} (expected ${wantLen}), ${us(latency)} after our response past the gap`,
    clause: 'IBTA vol. 1 §9.7.5.2.6',
  });
}

function rnrWait(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const v = viewOf(ctx, ev.qpn);
  const P = psnAdd(v.start, ev.psn);
  const tries = ev.iter === 'all' ? 1 : ev.iter;
  const timerNs = (RNR_TIMER_USEC[ev.timer ?? 0] ?? 0) * 1000;
  const clause = 'IBTA vol. 1 §9.7.5.2.8';
  const out: Figure[] = [];
  for (let k = 1; k <= tries; k++) {
    const nak = nth(v.recs, k, (r) => r.dir === 'tx' && r.psn === P && isRnrNak(r));
    if (nak < 0) {
      out.push(unmeasured(ev, FigureKind.RNR_WAIT, clause, `RNR NAK ${k} for PSN ${ev.psn} was never sent`, timerNs));
      continue;
    }
    const resend = firstFrom(v.recs, nak + 1, (r) => r.dir === 'rx' && isRequest(r.opcode) && psnDiff(r.psn, P) <= 0);
    if (resend < 0) {
      // Tries answered by RNR NAKs use up rnr_retry (7 = forever); then the DUT must stop (IBTA vol. 1 §9.7.5.2.8).
      const rnrRetry = ctx.scenario.traffic.rnrRetry;
      const spent = rnrRetry !== 7 && k > rnrRetry;
      out.push(
        figure(ev, FigureKind.RNR_WAIT, {
          measuredNs: null,
          dutNs: null,
          configured: timerNs,
          value: null,
          verdict: spent ? 'pass' : 'fail',
          detail: spent
            ? `no resend of PSN ${ev.psn} after RNR NAK ${k}: rnr_retry ${rnrRetry} used up, as configured`
            : `no resend of PSN ${ev.psn} after RNR NAK ${k} (rnr_retry ${rnrRetry})`,
          clause,
        }),
      );
      continue;
    }
    const r = v.recs[resend]!;
    const wait = r.timeNs - v.recs[nak]!.timeNs;
    const dut = less(wait, ctx.pathRttNs);
    // The round trip is part of the figure: without it known, only the whole wait can be compared (a DUT early by less than it passes).
    const waited = (dut ?? wait) >= timerNs - (ctx.errorNs ?? 0);
    const got = rel(v, r.psn);
    out.push(
      figure(ev, FigureKind.RNR_WAIT, {
        measuredNs: wait,
        dutNs: dut,
        configured: timerNs,
        value: got,
        verdict: waited && got === ev.psn ? 'pass' : 'fail',
        detail: `RNR NAK ${k} (timer ${ev.timer}, ${us(timerNs)}): resent PSN ${got} ${us(wait)} later${dut === null ? '' : ` (${us(dut)} without the round trip)`}${waited ? '' : ': before the timer ran out'}`,
        clause,
      }),
    );
  }
  return out;
}

/**
 * Our ACK of the PSN held `delay-us`: the DUT's timer, started at its last frame, runs out before
 * the ACK reaches it exactly when the hold plus the round trip exceeds the timeout (the ACK would
 * have left as that frame arrived). Then it must resend, no sooner than the timeout, from the first
 * PSN it had no ACK for; otherwise it must not resend (IBTA vol. 1 §9.7.6.1.3). A hold within the
 * timestamps' error of the timeout is judged either way.
 */
function ackDelay(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const v = viewOf(ctx, ev.qpn);
  const P = psnAdd(v.start, ev.psn);
  const clause = 'IBTA vol. 1 §9.7.6.1.3';
  const timeout = ctx.scenario.traffic.minRetransmitTimeout;
  const T = localAckTimeoutNs(timeout);
  const holdNs = (ev.delayUs ?? 0) * 1000;
  const n = ev.iter === 'all' ? 1 : ev.iter;
  const held = firstFrom(v.recs, 0, (r) => r.dir === 'tx' && r.psn === P && (r.heldNs ?? 0) > 0);
  if (held < 0) return [unmeasured(ev, FigureKind.ACK_DELAY, clause, `our ACK of PSN ${ev.psn} (transmission ${n}) was never sent`, T)];
  const heldAt = v.recs[held]!.timeNs - (v.recs[held]!.heldNs ?? 0);
  let last = -1;
  for (let i = 0; i < v.recs.length && v.recs[i]!.timeNs <= heldAt; i++) if (v.recs[i]!.dir === 'rx') last = i;
  if (last < 0) return [unmeasured(ev, FigureKind.ACK_DELAY, clause, `no DUT frame before our ACK of PSN ${ev.psn}`, T)];
  const rtt = ctx.pathRttNs ?? 0;
  const err = ctx.errorNs ?? 0;
  const late = holdNs + rtt - T;
  const mustFire = late > err;
  const mayFire = late >= -err;
  const resend = firstResend(v.recs, last + 1, ctx.scenario.traffic.mtu);
  const holdText = `our ACK of PSN ${ev.psn} held ${us(holdNs)}${ctx.pathRttNs === null ? '' : `, plus the ${us(rtt)} round trip`}, against timeout ${timeout} (${us(T)})`;
  if (resend < 0)
    return [
      figure(ev, FigureKind.ACK_DELAY, {
        measuredNs: null,
        dutNs: null,
        configured: T,
        value: null,
        verdict: mustFire ? 'fail' : 'pass',
        detail: `${holdText}: no resend${mustFire ? ', but the timer should have run out before the ACK arrived' : ', as the ACK arrived within the timeout'}`,
        clause,
      }),
    ];
  const r = v.recs[resend]!;
  const measured = r.timeNs - v.recs[last]!.timeNs;
  // What the DUT had been acknowledged when it resent: our ACKs that reached it by then.
  let high: number | null = null;
  for (let i = 0; i < resend; i++) {
    const a = v.recs[i]!;
    if (a.dir === 'tx' && a.fate === 'delivered' && acknowledges(a) && a.timeNs <= r.timeNs - rtt && (high === null || psnDiff(a.psn, high) > 0)) high = a.psn;
  }
  const want = high === null ? 0 : rel(v, psnAdd(high, 1));
  const got = rel(v, r.psn);
  // Early only against the earliest moment the DUT's timer can have started (as timeoutFigure):
  // its last frame is no such moment, since the timer may have run since an earlier one.
  const start = timerStartLowerBound(v, resend, rtt);
  const since = start < 0 ? measured : r.timeNs - v.recs[start]!.timeNs;
  const inTime = since >= T - err;
  const ok = mayFire && inTime && got === want;
  return [
    figure(ev, FigureKind.ACK_DELAY, {
      measuredNs: measured,
      dutNs: null,
      configured: T,
      value: got,
      verdict: ok ? 'pass' : 'fail',
      detail: `${holdText}: the timer fired, resent from PSN ${got} (first unacknowledged ${want}) ${us(measured)} after its last frame${since !== measured ? `, ${us(since)} after its timer could first have started` : ''}${
        !mayFire ? ', though the ACK was due before the timeout' : !inTime ? ': earlier than the timeout' : ''
      }`,
      clause,
    }),
  ];
}

/**
 * The CE marks of one QP's ecn events as they happened (our delivered requests the events matched),
 * with whether the DUT owed a CNP for each: a notification point sends one for a CE-marked packet
 * unless it sent one less than np_min_time_between_cnps before (RoCEv2 annex A17.9.2; DCQCN,
 * Zhu et al. SIGCOMM 2015, §3.1: at most one CNP per flow every N µs). Our send times stand for the
 * DUT's receive times: the path adds the same delay to each.
 */
function ceMarks(ctx: MeasureContext, qp: number): { ev: ProbeEvent; at: number; due: boolean }[] {
  const v = viewOf(ctx, qp);
  const marks: { ev: ProbeEvent; at: number; due: boolean }[] = [];
  for (const ev of ctx.scenario.events) {
    if (ev.type !== EventType.ECN || ev.qpn !== qp) continue;
    const P = psnAdd(v.start, ev.psn);
    const sends = v.recs.filter((r) => r.dir === 'tx' && r.fate === 'delivered' && r.psn === P && isRequest(r.opcode));
    const chosen = ev.iter === 'all' ? sends : sends.slice(ev.iter - 1, ev.iter);
    for (const r of chosen) marks.push({ ev, at: r.timeNs, due: false });
  }
  marks.sort((a, b) => a.at - b.at);
  const interval = ctx.scenario.traffic.minTimeBetweenCnps * 1000;
  let last = Number.NEGATIVE_INFINITY;
  for (const m of marks) {
    if (m.at - last >= interval) {
      m.due = true;
      last = m.at;
    }
  }
  return marks;
}

function cnpFigures(ctx: MeasureContext, qp: number): Figure[] {
  const v = viewOf(ctx, qp);
  const marks = ceMarks(ctx, qp);
  const cnps = v.recs.filter((r) => r.dir === 'rx' && isCnp(r));
  const interval = ctx.scenario.traffic.minTimeBetweenCnps * 1000;
  const out: Figure[] = [];
  const genClause = 'RoCEv2 annex A17.9.2';
  let k = 0;
  const seen = new Set<ProbeEvent>();
  for (const m of marks) {
    // One cnpGeneration per event, at its first mark; of a run of marks only the first (cnpSpacing judges the rest).
    if (seen.has(m.ev) || (marks.length >= 2 && m !== marks[0])) {
      if (m.due) k++;
      continue;
    }
    seen.add(m.ev);
    if (!m.due) {
      out.push(
        unmeasured(
          m.ev,
          FigureKind.CNP_GENERATION,
          genClause,
          `no CNP due for the CE mark on PSN ${m.ev.psn}: within the DUT's ${us(interval)} between CNPs of an earlier one`,
        ),
      );
      continue;
    }
    const cnp = cnps[k++];
    if (cnp === undefined || cnp.timeNs < m.at) {
      out.push(
        figure(m.ev, FigureKind.CNP_GENERATION, {
          measuredNs: null,
          dutNs: null,
          configured: interval,
          value: null,
          verdict: 'fail',
          detail: `no CNP for the CE mark on PSN ${m.ev.psn}, though none came in the ${us(interval)} before it`,
          clause: genClause,
        }),
      );
      continue;
    }
    const latency = cnp.timeNs - m.at;
    out.push(
      figure(m.ev, FigureKind.CNP_GENERATION, {
        measuredNs: latency,
        dutNs: less(latency, ctx.pathRttNs),
        configured: interval,
        value: cnps.indexOf(cnp) + 1,
        verdict: 'pass',
        detail: `CNP ${cnps.indexOf(cnp) + 1} ${us(latency)} after our CE-marked PSN ${m.ev.psn}`,
        clause: genClause,
      }),
    );
  }
  if (marks.length >= 2) {
    const ev = marks[marks.length - 1]!.ev;
    const want = marks.filter((m) => m.due).length;
    const gaps = cnps.slice(1).map((c, i) => c.timeNs - cnps[i]!.timeNs);
    const minGap = gaps.length === 0 ? null : Math.min(...gaps);
    const err = ctx.errorNs ?? 0;
    const spaced = minGap === null || minGap >= interval - err;
    out.push(
      figure(ev, FigureKind.CNP_SPACING, {
        measuredNs: minGap,
        dutNs: null,
        configured: interval,
        value: cnps.length,
        verdict: spaced && cnps.length === want ? 'pass' : 'fail',
        detail: `${cnps.length} CNP${cnps.length === 1 ? '' : 's'} for ${marks.length} CE marks (${want} due at one per ${us(interval)}); shortest gap ${minGap === null ? 'n/a' : us(minGap)}${spaced ? '' : ': shorter than the interval'}`,
        clause: 'RoCEv2 annex A17.9.2; DCQCN (Zhu et al., SIGCOMM 2015) §3.1',
      }),
    );
  }
  return out;
}

/** The DUT responder's answer to the second copy of our request at the event's PSN. */
function duplicateResponse(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const v = viewOf(ctx, ev.qpn);
  const P = psnAdd(v.start, ev.psn);
  const t = ctx.scenario.traffic;
  const atomic = t.verb === ProbeVerb.ATOMIC;
  // A READ by the copy's opcode: rping's server sends READs, SENDs and WRITEs on one QP.
  const read = v.recs.some((r) => r.dir === 'tx' && r.psn === P && isReadRequest(r.opcode));
  const clause = read ? 'rxe `rxe_resp.c` duplicate_request() (a duplicate READ is executed again)' : atomic ? ATOMIC_REPLAY_CLAUSE : 'IBTA vol. 1 C9-105';
  const copies = v.recs.map((r, i) => ({ r, i })).filter(({ r }) => r.dir === 'tx' && r.fate === 'delivered' && r.psn === P && isRequest(r.opcode));
  const dup = copies[1];
  if (dup === undefined) return [unmeasured(ev, FigureKind.DUPLICATE_RESPONSE, clause, `PSN ${ev.psn} was not sent twice`)];
  if (atomic) return [duplicateAtomic(ctx, ev, v, copies[0]!.i, dup.i)];
  // What we had sent by then: the DUT's answer to the copy covers no further.
  let high = P;
  for (let i = 0; i <= dup.i; i++) {
    const r = v.recs[i]!;
    if (r.dir === 'tx' && isRequest(r.opcode) && psnDiff(psnAdd(r.psn, lastPsnOffset(r, t.mtu)), high) > 0) high = psnAdd(r.psn, lastPsnOffset(r, t.mtu));
  }
  if (read) {
    const n = dup.r.reth === null ? 1 : Math.max(1, Math.ceil(dup.r.reth.length / t.mtu));
    // Each response PSN of the READ twice after the first copy: the original's and the replay's.
    const seen = new Map<number, number>();
    let first: FrameRecord | undefined;
    for (const r of v.recs.slice(copies[0]!.i + 1)) {
      if (r.dir !== 'rx' || !isResponse(r.opcode) || psnDiff(r.psn, P) < 0 || psnDiff(r.psn, P) >= n) continue;
      const k = (seen.get(r.psn) ?? 0) + 1;
      seen.set(r.psn, k);
      if (k === 2 && first === undefined) first = r;
    }
    const replayed = [...seen.values()].filter((k) => k >= 2).length;
    const latency = first === undefined ? null : first.timeNs - dup.r.timeNs;
    return [
      figure(ev, FigureKind.DUPLICATE_RESPONSE, {
        measuredNs: latency,
        dutNs: latency === null ? null : less(latency, ctx.pathRttNs),
        configured: ev.psn,
        // The replay's first PSN (the count of PSNs replayed is in the detail).
        value: first === undefined ? null : rel(v, first.psn),
        verdict: replayed === n && first !== undefined && first.psn === P ? 'pass' : 'fail',
        detail: `the duplicate READ at PSN ${ev.psn} drew ${replayed} of its ${n} response PSNs again${latency === null ? '' : `, the first ${us(latency)} after it (PSN ${rel(v, first!.psn)})`}`,
        clause,
      }),
    ];
  }
  const ans = firstFrom(v.recs, dup.i + 1, (r) => r.dir === 'rx' && isResponse(r.opcode));
  if (ans < 0)
    return [
      figure(ev, FigureKind.DUPLICATE_RESPONSE, {
        measuredNs: null,
        dutNs: null,
        configured: ev.psn,
        value: null,
        verdict: 'fail',
        detail: `no answer to the duplicate at PSN ${ev.psn}`,
        clause,
      }),
    ];
  const a = v.recs[ans]!;
  const latency = a.timeNs - dup.r.timeNs;
  const ok = acknowledges(a) && psnDiff(a.psn, P) >= 0 && psnDiff(a.psn, high) <= 0;
  return [
    figure(ev, FigureKind.DUPLICATE_RESPONSE, {
      measuredNs: latency,
      dutNs: less(latency, ctx.pathRttNs),
      configured: ev.psn,
      value: rel(v, a.psn),
      verdict: ok ? 'pass' : 'fail',
      detail: `the duplicate at PSN ${ev.psn} answered by ${isSeqNak(a) ? 'a sequence NAK' : acknowledges(a) ? 'an ACK' : 'a NAK'} of PSN ${rel(v, a.psn)} ${us(latency)} later (an ACK of PSN ${ev.psn}..${rel(v, high)} expected)`,
      clause,
    }),
  ];
}

/**
 * Where the rule for a duplicate atomic is read from. The responder keeps each executed atomic's
 * original value in its responder resources (max_dest_rd_atomic of them) and answers a duplicate
 * from there: rxe's duplicate_request() finds the resource by PSN and atomic_reply() with
 * res->replay set sends the saved orig_val without touching memory; a duplicate whose resource is
 * gone is dropped (class D).
 */
const ATOMIC_REPLAY_CLAUSE = 'rxe `rxe_resp.c` duplicate_request(), atomic_reply() (a duplicate atomic answered from the saved resource, not executed again)';

const hex = (x: bigint): string => `0x${x.toString(16)}`;
const isAtomicAck = (r: FrameRecord): boolean => r.opcode === Opcode.RC_ATOMIC_ACKNOWLEDGE;

/** The word an atomic request leaves behind when it finds `before` there: a fetch-and-add adds modulo 2^64, a compare-and-swap swaps on equality. */
function atomicResult(r: FrameRecord, before: bigint): bigint | null {
  const a = r.atomic;
  if (a === undefined) return null;
  if (r.opcode === Opcode.RC_FETCH_ADD) return BigInt.asUintN(64, before + a.swapAdd);
  if (r.opcode === Opcode.RC_COMPARE_SWAP) return before === a.compare ? a.swapAdd : before;
  return null;
}

/**
 * The DUT responder's answer to the copy of our atomic at PSN P (records `first` and `dup` in the
 * QP's view): the copy's ATOMIC ACKNOWLEDGE must carry the original value the first answer
 * carried (the saved result, not a second execution), and the next atomic on the same word must
 * find it changed once: V + add after a fetch-and-add that returned V, not V + 2·add. The figure's
 * time runs from the copy to the DUT's answer to it; its value is that answer's PSN.
 */
function duplicateAtomic(ctx: MeasureContext, ev: ProbeEvent, v: QpView, first: number, dup: number): Figure {
  const P = psnAdd(v.start, ev.psn);
  const req = v.recs[dup]!;
  const fail = (detail: string, measuredNs: number | null = null, value: number | null = null): Figure =>
    figure(ev, FigureKind.DUPLICATE_RESPONSE, {
      measuredNs,
      dutNs: measuredNs === null ? null : less(measuredNs, ctx.pathRttNs),
      configured: ev.psn,
      value,
      verdict: 'fail',
      detail,
      clause: ATOMIC_REPLAY_CLAUSE,
    });
  // The answers at P in order: the original's, then the copy's (the copy left after the original).
  const answers = v.recs.map((r, i) => ({ r, i })).filter(({ r, i }) => i > first && r.dir === 'rx' && r.psn === P && isResponse(r.opcode));
  const a1 = answers[0];
  if (a1 === undefined || !isAtomicAck(a1.r) || a1.r.origData === undefined)
    return fail(
      `the atomic at PSN ${ev.psn} drew no ATOMIC ACKNOWLEDGE${a1 === undefined ? '' : ` (its first answer: opcode ${OPCODES[a1.r.opcode]?.name ?? a1.r.opcode})`}`,
    );
  const a2 = answers.find(({ i }) => i > a1.i && i > dup);
  if (a2 === undefined) return fail(`no answer to the duplicate atomic at PSN ${ev.psn}: its saved result should have been sent again`);
  const latency = a2.r.timeNs - req.timeNs;
  const V = a1.r.origData;
  if (!isAtomicAck(a2.r) || a2.r.origData === undefined)
    return fail(
      `the duplicate atomic at PSN ${ev.psn} answered by ${isSeqNak(a2.r) ? 'a sequence NAK' : `opcode ${OPCODES[a2.r.opcode]?.name ?? a2.r.opcode}`} ${us(latency)} later, not an ATOMIC ACKNOWLEDGE with the original value ${hex(V)}`,
      latency,
      rel(v, a2.r.psn),
    );
  const replayed = a2.r.origData;
  const again = `the duplicate atomic at PSN ${ev.psn} answered ${us(latency)} later with original value ${hex(replayed)} (the first answer: ${hex(V)})`;
  if (replayed !== V) return fail(`${again}: executed again, not answered from its saved result`, latency, rel(v, a2.r.psn));
  // Executed once: the next of our atomics on the same word (by PSN) finds the word the first execution left.
  const va = req.atomic?.va;
  const next = v.recs
    .filter((r) => r.dir === 'tx' && r.fate === 'delivered' && r.atomic !== undefined && r.atomic.va === va && psnDiff(r.psn, P) > 0)
    .sort((x, y) => psnDiff(x.psn, y.psn))[0];
  const want = atomicResult(req, V);
  let once = 'no later atomic on its word to show how many times it ran';
  let ok = true;
  if (next !== undefined && want !== null) {
    const ans = v.recs.find((r) => r.dir === 'rx' && r.psn === next.psn && isAtomicAck(r) && r.origData !== undefined);
    if (ans?.origData === undefined) {
      once = `the next atomic on its word (PSN ${rel(v, next.psn)}) drew no ATOMIC ACKNOWLEDGE to show how many times it ran`;
    } else {
      ok = ans.origData === want;
      const twice = atomicResult(req, want);
      once = `the next atomic on its word (PSN ${rel(v, next.psn)}) found ${hex(ans.origData)}, ${
        ok ? 'executed once' : `not the ${hex(want)} one execution leaves${twice !== null && ans.origData === twice ? ': executed twice' : ''}`
      }`;
    }
  }
  return figure(ev, FigureKind.DUPLICATE_RESPONSE, {
    measuredNs: latency,
    dutNs: less(latency, ctx.pathRttNs),
    configured: ev.psn,
    value: rel(v, a2.r.psn),
    verdict: ok ? 'pass' : 'fail',
    detail: `${again}; ${once}`,
    clause: ATOMIC_REPLAY_CLAUSE,
  });
}

/** The figures of every event the run applied. */
const mbps = (r: number): string => `${r.toFixed(r >= 100 ? 0 : 2)} Mb/s`;
const span = (b: { lo: number; hi: number | null }, unit: (n: number) => string): string =>
  b.hi === null ? `> ${unit(b.lo)}` : `${unit(b.lo)}..${unit(b.hi)}`;

/**
 * The DUT's reaction to our CNPs on QP `ev.qpn`: its rate from its frames' gaps (on a live driver,
 * over windows of four times the timestamps' error, at least 100 µs), the cut after our first CNP,
 * and the recovery after the last cut, read as DCQCN (dcqcn-estimate.ts). With `dcqcn:` in the
 * scenario (what the DUT was configured with), the reading is judged against it: the first cut
 * against rp_initial_alpha_value (the paper's R_C(1 − α/2), bounded by rp_min_dec_fac), the
 * increases against rp_time_reset and rp_byte_reset. Without it, a cut passes and no cut is `none`:
 * the annex leaves the reaction point's algorithm to the implementation, and rxe has none.
 */
function rateFigures(ctx: MeasureContext, ev: ProbeEvent): Figure[] {
  const clause = 'RoCEv2 annex A17.9; DCQCN (Zhu et al., SIGCOMM 2015) §3.2';
  const v = viewOf(ctx, ev.qpn);
  const frames = v.recs.filter((r) => r.dir === 'rx' && isRequest(r.opcode)).map((r) => ({ timeNs: r.timeNs, len: r.len }));
  const cnps = v.recs.filter((r) => r.dir === 'tx' && isCnp(r) && r.fate === 'delivered').map((r) => r.timeNs);
  const first = cnps[0];
  if (first === undefined) return [unmeasured(ev, FigureKind.RATE_CUT, clause, `no CNP was sent: the DUT's request at PSN ${ev.psn} never came`)];
  const errorNs = ctx.errorNs ?? 0;
  if (errorNs > 0) return [liveRateCut(ev, frames, cnps, errorNs, clause)];
  const levels = pacedLevels(frames);
  const est = estimateDcqcn(frames, levels, first, errorNs);
  if (est === null) return [unmeasured(ev, FigureKind.RATE_CUT, clause, 'no frames of the DUT before our first CNP: no rate to compare with')];
  const k0 = levels.filter((l) => l.startNs <= first).length - 1;
  const before = levels[k0]!.mbps;
  const rate: RateFigure = {
    beforeMbps: before,
    cnpsNs: cnps,
    levels: levels.slice(k0, k0 + 200).map((l) => ({ atNs: l.startNs, mbps: l.mbps })),
    untilNs: levels[Math.min(levels.length, k0 + 200) - 1]!.endNs,
    estimate: est,
  };
  const cut = est.decreases[0];
  const n = cnps.length;
  if (cut === undefined)
    return [
      figure(ev, FigureKind.RATE_CUT, {
        measuredNs: null,
        dutNs: null,
        configured: null,
        value: null,
        verdict: 'none',
        detail: `the DUT's rate stayed at ${mbps(before)} after our ${n} CNP(s): no reaction point (rxe has none), or one at its floor`,
        clause,
        rate,
      }),
    ];
  const cfg = Object.keys(ctx.scenario.dcqcn).length > 0 ? { ...RP_DEFAULTS, ...ctx.scenario.dcqcn } : null;
  // DCQCN's first cut: α = rp_initial_alpha_value/1024, R_C·α/2^(rp_gd−10) taken off, at most 100 − rp_min_dec_fac %.
  const wantRatio =
    cfg === null || cfg.rpRateToSetOnFirstCnp > 0 ? null : 1 - Math.min(cfg.rpInitialAlphaValue / 1024 / 2 ** (cfg.rpGd - 10), (100 - cfg.rpMinDecFac) / 100);
  const ratio = cut.toMbps / cut.fromMbps;
  const cutOk = wantRatio === null || Math.abs(ratio - wantRatio) <= 0.01;
  const reaction = cut.atNs - first;
  const figs: Figure[] = [
    figure(ev, FigureKind.RATE_CUT, {
      measuredNs: reaction,
      dutNs: less(reaction, ctx.pathRttNs),
      configured: wantRatio === null ? null : Math.round(wantRatio * 10000) / 100,
      value: Math.round(ratio * 10000) / 100,
      verdict: cutOk ? 'pass' : 'fail',
      detail: `${mbps(cut.fromMbps)} → ${mbps(cut.toMbps)} (${(ratio * 100).toFixed(2)} %, α ${cut.alpha.toFixed(4)}) ${us(reaction)} after our first CNP; ${
        est.decreases.length
      } cut(s) for ${n} CNP(s)${wantRatio === null ? '' : `; configured: ${(wantRatio * 100).toFixed(2)} %`}`,
      clause,
      rate,
    }),
  ];
  const tUs = (ns: number): string => `${(ns / 1000).toFixed(1)} µs`;
  const bytesText = (b: number): string => `${Math.round(b)} B`;
  const fit =
    est.fits === 0
      ? 'no DCQCN timer and byte counter fit its increases as read (two changes inside one frame gap read as one)'
      : `rp_time_reset ${est.timeResetNs === null ? '?' : span(est.timeResetNs, tUs)}, rp_byte_reset ${est.byteReset === null ? '?' : span(est.byteReset, bytesText)} (${est.timerSteps} increase(s) by the timer, ${est.byteSteps} by the byte counter${est.fits > 1 ? `, of ${est.fits} fitting readings` : ''})${
          est.targetMbps === null ? '' : `; target rate ${mbps(est.targetMbps)}`
        }`;
  const within = (b: { lo: number; hi: number | null } | null, x: number): boolean => b !== null && x >= b.lo && (b.hi === null || x <= b.hi);
  // No reading fits (two changes inside one frame gap, e.g. a timer step as a CNP arrives, look like
  // one): nothing to judge the configuration by.
  const paramsOk = cfg === null || est.fits === 0 || (within(est.timeResetNs, cfg.rpTimeReset * 1000) && within(est.byteReset, cfg.rpByteReset));
  const last = est.decreases[est.decreases.length - 1]!;
  const recovered = est.releasedAfterNs;
  figs.push(
    figure(ev, FigureKind.RATE_RECOVERY, {
      measuredNs: recovered,
      dutNs: null,
      configured: cfg === null ? null : cfg.rpTimeReset * 1000,
      value: est.increases,
      verdict: !paramsOk ? 'fail' : est.fits === 0 || (recovered === null && cfg === null) ? 'none' : 'pass',
      detail: `${
        recovered === null ? `still below ${mbps(before)} at the end of the run` : `back to ${mbps(before)} ${us(recovered)} after the last cut`
      } (${last.toMbps.toFixed(0)} Mb/s), ${est.increases} increase(s); ${fit}${
        cfg === null ? '' : `; configured: rp_time_reset ${cfg.rpTimeReset} µs, rp_byte_reset ${cfg.rpByteReset} B`
      }`,
      clause,
      rate,
    }),
  );
  return figs;
}

/**
 * A live driver's `rateCut`: its timestamps are late by up to `errorNs` and come in bursts, so no
 * gap says anything; the rate is compared over windows of four times that error (at least 100 µs)
 * before our first CNP and over three windows (or the CNPs' span and one more) after it. A cut is one beyond the rate's own
 * variation; none is `none` (no reaction point, or one that recovered within a window). The DCQCN
 * reading needs single steps, which these timestamps cannot place: `rateRecovery` is not given.
 */
function liveRateCut(ev: ProbeEvent, frames: readonly { timeNs: number; len: number }[], cnps: readonly number[], errorNs: number, clause: string): Figure {
  const first = cnps[0]!;
  const windowNs = Math.max(100_000, 4 * errorNs);
  const w = windowCut(frames, first, windowNs, Math.max(3 * windowNs, (cnps[cnps.length - 1] ?? first) - first + windowNs));
  if (w === null)
    return unmeasured(
      ev,
      FigureKind.RATE_CUT,
      clause,
      `the DUT did not send for two windows of ${us(windowNs)} before our first CNP and one after it: no rate to compare`,
    );
  const text = `median ${mbps(w.beforeMbps)} (lower quartile ${mbps(w.lowerQuartileMbps)}) over ${w.windowsBefore} windows of ${us(windowNs)} before our first CNP, ${mbps(w.afterMbps)} over ${w.windowsAfter} after (${cnps.length} CNP(s))`;
  return figure(ev, FigureKind.RATE_CUT, {
    measuredNs: null,
    dutNs: null,
    configured: null,
    value: Math.round((w.afterMbps / w.beforeMbps) * 10000) / 100,
    verdict: w.cut ? 'pass' : 'none',
    detail: w.cut
      ? `the rate fell: ${text}`
      : `no cut beyond the rate's own variation: ${text}; no reaction point (rxe has none), or one that recovered within a window`,
    clause,
  });
}

export function measure(ctx: MeasureContext): Figure[] {
  const out: Figure[] = [];
  const cnpQps = new Set<number>();
  const rateQps = new Set<number>();
  for (const ev of ctx.scenario.events) {
    switch (ev.type) {
      case EventType.DUPLICATE:
        out.push(...duplicateResponse(ctx, ev));
        break;
      case EventType.ECN:
        // The CNP figures of a QP, once, at its first ecn event.
        if (!cnpQps.has(ev.qpn)) {
          cnpQps.add(ev.qpn);
          out.push(...cnpFigures(ctx, ev.qpn));
        }
        break;
      case EventType.SKIP:
        out.push(...nakGeneration(ctx, ev));
        break;
      case EventType.DROP:
        // A DUT responder's lost ACK or READ response is recovered by our own requester: nothing of the DUT's to measure.
        if (ctx.scenario.dut.role === 'requester') out.push(...lossRecovery(ctx, ev));
        break;
      case EventType.WITHHOLD_ACK:
      case EventType.DROP_READ_RESPONSE:
      case EventType.SEQ_NAK:
        out.push(...lossRecovery(ctx, ev));
        break;
      case EventType.DELAY_ACK:
        out.push(...ackDelay(ctx, ev));
        break;
      case EventType.RNR_NAK:
        out.push(...rnrWait(ctx, ev));
        break;
      case EventType.CNP:
        // The rate figures of a QP, once, at its first cnp event.
        if (!rateQps.has(ev.qpn)) {
          rateQps.add(ev.qpn);
          out.push(...rateFigures(ctx, ev));
        }
        break;
      default:
        break;
    }
  }
  return out;
}
