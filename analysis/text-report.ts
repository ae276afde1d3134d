/**
 * The human-readable report of `roce analyze`: a summary first (capture,
 * conversations, expert flags, loss recovery, rule violations), then the
 * details asked for (episodes, violations, messages, flagged frames).
 */
import type { AnalysisDocument, FlowJson } from './document';
import type { AnalysisStop } from './analyzer';
import { FLAG_NAMES } from './flags';
import { psnDiff } from '../base/psn';
import { recoveryText } from '../base/recovery-trigger';
import { TextList } from '../base/json-pieces';
import type { Episode, FrameResult, Message, Violation } from './types';
import { decimalsOf, secondsText, spanTime } from '../base/exact-time';
import type { RxeBehaviour } from './rxe-behaviours';

/** The document the text report reads: the JSON document, whose long lists may come as their lines (`messageLine` and the like, made earlier). */
/** What the report and `roce analyze` say of an analysis that ended before its capture. */
export function analysisStopText(s: AnalysisStop): string {
  return (
    `stopped at frame ${s.frame}: it would start conversation ${s.limit + 1}, past the limit of ${s.limit} (--max-conversations). ` +
    'A capture whose PSNs jump at nearly every frame (not RoCE flows, or a corrupted capture) starts one per frame'
  );
}

export type TextReportDocument = Omit<AnalysisDocument, 'messages' | 'episodes' | 'violations' | 'frames'> & {
  messages: readonly Message[] | TextList;
  episodes: readonly Episode[] | TextList;
  violations: readonly Violation[] | TextList;
  frames: readonly FrameResult[] | TextList;
};

/** Which lists the text report prints in full besides its summary (`roce analyze --episodes`, `-m`, `-f`; `-v` all). */
export interface ReportOptions {
  episodes?: boolean;
  violations?: boolean;
  messages?: boolean;
  frames?: boolean;
}

/** A time that is not whole nanoseconds, in µs or ms with 3 decimals. */
const roughUs = (ns: number): string => (ns >= 1e6 ? `${(ns / 1e6).toFixed(3)} ms` : `${(ns / 1000).toFixed(3)} µs`);

/**
 * A figure made of capture times (a completion time, a latency, a mean of them: whole nanoseconds)
 * in µs, ms or s, to the nanosecond: 3 decimals, more when the nanoseconds are not zero.
 */
const us = (ns: number | null): string => (ns === null ? '-' : spanText(ns, 0));

/**
 * A span of capture time (whole nanoseconds, as the capture's times are) in µs below a millisecond,
 * in ms below a second, else in seconds, with 3 decimals and as many more as a capture of `digits`
 * decimals has: `2.960 ms` from a µs capture, `2.960423 ms` from a ns one. A digit that is not zero
 * is never cut.
 */
export function spanText(ns: number, digits: number): string {
  if (!Number.isSafeInteger(ns)) return roughUs(ns);
  const size = Math.abs(ns);
  const [unit, scaleDigits] = size >= 1e9 ? ['s', 9] : size >= 1e6 ? ['ms', 6] : ['µs', 3];
  const scale = 10 ** scaleDigits;
  const whole = Math.floor(size / scale);
  let frac = String(size - whole * scale).padStart(scaleDigits, '0');
  const keep = Math.max(3, digits - (9 - scaleDigits));
  if (keep >= frac.length) frac = frac.padEnd(keep, '0');
  else if (/^0*$/.test(frac.slice(keep))) frac = frac.slice(0, keep);
  return `${ns < 0 ? '-' : ''}${whole}.${frac} ${unit}`;
}

/** The decimals of the capture a document was made from: those of its `startTime`. */
export function documentDigits(d: Pick<AnalysisDocument, 'startTime'>): number {
  return decimalsOf(d.startTime);
}
const qp = (q: number | null): string => (q === null ? '?' : `0x${q.toString(16).padStart(6, '0')}`);

function flowLine(d: TextReportDocument, f: FlowJson, conv: AnalysisDocument['conversations'][number]): string[] {
  const req = f.requester === 'a' ? conv.a : conv.b;
  const rsp = f.requester === 'a' ? conv.b : conv.a;
  const gbps = (bytes: number): string => (conv.durationNs > 0 ? `${((bytes * 8) / conv.durationNs).toFixed(3)} Gbit/s` : '-');
  const flagged = FLAG_NAMES.filter((n) => f.flags[n] > 0 && n !== 'retransmission')
    .map((n) => `${n} ${f.flags[n]}`)
    .join(', ');
  const out = [
    `    ${req.ip} QP ${qp(req.qpn)} → ${rsp.ip} QP ${qp(rsp.qpn)}: ${f.requests} requests (${f.retransmissions} resent), ${f.responses} responses, ${f.messages} messages, goodput ${gbps(f.goodputBytes)}`,
  ];
  const extra: string[] = [];
  if (f.acks > 0) extra.push(`AckReq/ACK ${f.ackCoalescingRatio}`);
  if (f.completion.count > 0) extra.push(`completion mean ${us(f.completion.meanNs)} max ${us(f.completion.maxNs)}`);
  if (f.readLatency.count > 0) extra.push(`READ latency mean ${us(f.readLatency.meanNs)}`);
  if (f.atomicLatency.count > 0) extra.push(`atomic latency mean ${us(f.atomicLatency.meanNs)}`);
  if (f.lossBeforeCapture) extra.push('requests not captured (lost before the capture point or by the capture): requester rules not checked');
  if (f.captureGaps > 0) extra.push(`${f.captureGaps} capture gap(s), ${f.unseenPsns} request(s) the responder got are not in the capture`);
  if (f.startedMidway) extra.push('the capture joined this flow after it began');
  if (extra.length > 0) out.push(`      ${extra.join('; ')}`);
  if (flagged) out.push(`      flags: ${flagged}`);
  void d;
  return out;
}

const ICRC_TEXT: Readonly<Record<AnalysisDocument['captureQuality']['icrc'], string>> = {
  preserved: 'ICRC preserved',
  notPreserved: 'ICRC likely not preserved by the capture tool (most frames fail the check; analyse with --ignore-icrc)',
  notChecked: 'ICRC not checked',
  notCaptured: 'ICRC not captured',
  none: 'no ICRC',
};

/** "capture quality: ..." — frames captured vs implied, truncated frames, ICRC, where the capture started. */
function qualityLine(d: TextReportDocument): string {
  const q = d.captureQuality;
  const parts = [
    `${q.framesCaptured} RoCE frames captured, ${q.framesImplied} more implied by the responses${q.captureGaps > 0 ? ` (${q.captureGaps} capture gap(s))` : ''}`,
  ];
  parts.push(`${q.truncated} truncated by the capture`);
  if (q.responsesBeforeRequests > 0)
    parts.push(`${q.responsesBeforeRequests} response(s) captured before their request (the two directions recorded out of order)`);
  parts.push(ICRC_TEXT[q.icrc]);
  parts.push(
    q.start === 'midConversation'
      ? `started mid-conversation (${q.flowsJoinedMidway} flow(s) joined after they began)`
      : 'started at the start of its conversations',
  );
  return `capture quality: ${parts.join('; ')}`;
}

const hex = (n: number | null, w: number): string => (n === null ? '?' : `0x${n.toString(16).padStart(w, '0')}`);

/** Lines of one RDMA CM connection: who, what service, QPNs and start PSNs, timing, retries, MRA, REJ, disconnection, state. */
function cmLines(c: AnalysisDocument['cmConnections'][number]): string[] {
  const svc = c.serviceId === null ? 'service ?' : `svc 0x${c.serviceId}${c.portSpace !== null ? ` (${c.portSpace} port ${c.port})` : ''}`;
  const end = (e: typeof c.active): string =>
    `${e.ip} comm ${hex(e.commId, 8)}${c.transport === 'SIDR' ? '' : ` QPN ${hex(e.qpn, 6)} PSN ${e.startPsn ?? '?'}`}`;
  const head = `  #${c.id} ${c.transport ?? '?'} ${end(c.active)} → ${end(c.passive)}, ${svc}: ${c.state}${c.conversation !== null ? `, conversation #${c.conversation}` : ''}${c.rolesKnown ? '' : ' (REQ not captured: roles guessed)'}`;
  const parts: string[] = [];
  const req = c.transport === 'SIDR' ? 'SIDR_REQ' : 'REQ';
  const rep = c.transport === 'SIDR' ? 'SIDR_REP' : 'REP';
  if (c.reqToRepNs !== null) parts.push(`${req}→${rep} ${us(c.reqToRepNs)}`);
  if (c.repToRtuNs !== null) parts.push(`REP→RTU ${us(c.repToRtuNs)}`);
  if (c.repToFirstPacketNs !== null) parts.push(`REP→first packet ${us(c.repToFirstPacketNs)}${c.repToRtuNs === null ? ' (no RTU captured)' : ''}`);
  if (c.establishedBy !== null) parts.push(`established by the ${c.establishedBy === 'RTU' ? 'RTU' : 'first packet on its QPs'}`);
  if (c.dreqToDrepNs !== null) parts.push(`DREQ→DREP ${us(c.dreqToDrepNs)}${c.disconnectedBy !== null ? ` (DREQ by the ${c.disconnectedBy} side)` : ''}`);
  const counts = Object.entries(c.messages)
    .filter(([, n]) => n !== undefined)
    .map(([name, n]) => `${name}×${n?.count}`)
    .join(' ');
  if (counts !== '') parts.push(counts);
  const r = c.retries;
  const retried = [
    ['REQ', r.req],
    ['REP', r.rep],
    ['DREQ', r.dreq],
    ['SIDR_REQ', r.sidrReq],
  ]
    .filter(([, n]) => (n as number) > 0)
    .map(([m, n]) => `${m} ${n}`);
  if (retried.length > 0) parts.push(`retries: ${retried.join(', ')}`);
  for (const m of c.mras) parts.push(`MRA of the ${m.messageMraed} by the ${m.from} side (service timeout ${m.serviceTimeout}: ${us(m.serviceTimeoutNs)})`);
  if (c.rej !== null)
    parts.push(`REJ of the ${c.rej.messageRejected} by the ${c.rej.from} side: reason ${c.rej.reason} ${c.rej.reasonName} (${c.rej.reasonText})`);
  if (c.sidr !== null)
    parts.push(
      `SIDR_REP status ${c.sidr.status} (${c.sidr.statusText})${c.sidr.status === 0 ? ` QPN ${hex(c.sidr.qpn, 6)} Q_Key ${hex(c.sidr.qkey, 8)}` : ''}`,
    );
  return parts.length > 0 ? [head, `      ${parts.join('; ')}`] : [head];
}

/** A loss-recovery episode on one line: what triggered it, what was resent, how it ended. */
export function episodeText(ep: Episode): string {
  const range = psnDiff(ep.resentLastPsn, ep.resentFirstPsn) + 1;
  return (
    `#${ep.id} conv ${ep.conversation} ${ep.trigger.padEnd(10)} gap at PSN ${ep.gapPsn}` +
    `${ep.triggerFrame !== null ? ` trigger frame ${ep.triggerFrame}` : ''}, first resend frame ${ep.firstRetransmitFrame}` +
    ` after ${us(ep.retransmitDelayNs)}, ${ep.resentPackets} resent (PSN ${ep.resentFirstPsn}..${ep.resentLastPsn}, ${range} PSNs)` +
    `${ep.nakGenerationNs !== null ? `, NAK generated in ${us(ep.nakGenerationNs)}` : ''}` +
    `${ep.recoveryNs !== null ? `, recovered in ${us(ep.recoveryNs)}` : ep.supersededBy !== null ? `, superseded by #${ep.supersededBy}` : ', not recovered in the capture'}`
  );
}

/** A go-back-N rule violation on one line: the rule, where, and what was seen. */
export function violationText(v: Violation): string {
  return `${v.rule} (conv ${v.conversation}, frames ${v.frames.join(', ')}): ${v.message}`;
}

/** Lines are gathered up to this many before `write` is called. */
const LINES_PER_WRITE = 4096;

/** The report as text (ends with a newline). */
export function textReport(d: AnalysisDocument, o: ReportOptions = {}): string {
  const pieces: string[] = [];
  writeTextReport(d, o, (t) => pieces.push(t));
  return pieces.join('');
}

/** An episode's line in the text report's list of them. */
export function episodeLine(ep: Episode): string {
  return `  ${episodeText(ep)}`;
}

/** An rxe behaviour on one line: the kind, where, what was seen, and the rxe source that does it. */
export function rxeBehaviourText(b: RxeBehaviour): string {
  return `${b.behaviour} (${b.by}, conv ${b.conversation}, frames ${b.frames.join(', ')}): ${b.message} [IBTA ${b.ibta}; ${b.source}]`;
}

/** An rxe behaviour's line in the text report's list of them. */
export function rxeBehaviourLine(b: RxeBehaviour): string {
  return `  ${rxeBehaviourText(b)}`;
}

function rxeTotal(counts: Readonly<Record<string, number>>): number {
  return Object.values(counts).reduce((a, n) => a + n, 0);
}

/** A violation's line in the text report's list of them. */
export function violationLine(v: Violation): string {
  return `  ${violationText(v)}`;
}

/** A message's line in the text report's list of them (-m). */
export function messageLine(m: Message): string {
  return (
    `  conv ${m.conversation}${m.requester} ${m.op.padEnd(12)} ${String(m.size).padStart(8)} B PSN ${m.firstPsn}..${m.lastPsn ?? '?'} frames ${m.firstFrame}-${m.lastFrame} ` +
    `${m.status}${m.error !== null ? ` (${m.error})` : ''} completion ${us(m.completionNs)}${m.responseLatencyNs !== null ? ` response ${us(m.responseLatencyNs)}` : ''}`
  );
}

/**
 * A flagged frame's line in the text report's list of them (-f): its time since the first frame in
 * seconds, with the `digits` decimals of the capture's timestamps (as `roce decode` prints it).
 */
export function frameLine(f: FrameResult, digits: number): string {
  const time = `${secondsText(spanTime(f.timeNs, digits))} s`;
  return `  ${String(f.frame).padStart(6)} ${time.padStart(14)} conv ${f.conversation ?? '-'} ${f.opcode} PSN ${f.psn} ${f.flags.join(',')}`;
}

/**
 * The flagged frames' lines, from their JSON texts (a spooled list's, made before the capture's
 * decimals were known), for a capture of `digits` decimals.
 */
export function frameLinesFromJson(json: TextList, digits: number): TextList {
  return new TextList(function* () {
    for (const text of json.texts()) yield frameLine(JSON.parse(text) as FrameResult, digits);
  }, json.length);
}

/**
 * The report as text, through `write` a few thousand lines at a time: with every message of a
 * long capture listed (-m) it is longer than the longest string V8 can hold. Once `stopped` says
 * so (checked after each write: the reader has gone), nothing more is made.
 */
export function writeTextReport(d: TextReportDocument, o: ReportOptions, write: (text: string) => void, stopped: () => boolean = () => false): void {
  let lines: string[] = [];
  let halted = false;
  const out = {
    push(...more: string[]): void {
      if (halted) return;
      for (const l of more) lines.push(l);
      if (lines.length >= LINES_PER_WRITE) {
        write(`${lines.join('\n')}\n`);
        lines = [];
        halted = stopped();
      }
    },
  };
  const fc = d.frameCounts;
  const digits = documentDigits(d);
  out.push(`${d.file}: ${fc.total} frames, ${fc.roce} RoCE (${fc.icrcBad} bad ICRC, ${fc.malformed} malformed), ${spanText(d.durationNs, digits)}`);
  const s = d.summary;
  const e = s.episodes;
  out.push(
    `${s.conversations} conversation(s), ${s.messages} message(s), ${s.retransmissions} retransmission(s), ` +
      `${recoveryText(e)}, ` +
      `${s.violations} rule violation(s)` +
      (rxeTotal(s.rxeBehaviours) > 0 ? `, ${rxeTotal(s.rxeBehaviours)} rxe behaviour(s) (not violations)` : ''),
  );
  const flags = FLAG_NAMES.filter((n) => s.flags[n] > 0).map((n) => `${n} ${s.flags[n]}`);
  out.push(`flags: ${flags.length > 0 ? flags.join(', ') : 'none'}`);
  out.push(qualityLine(d));
  if (d.capturePoint.startsWith('host:')) {
    out.push(
      `capture point: the NIC of ${d.capturePoint.slice(5)}: each flow is judged on the side that host plays; its peer's frames are as the network delivered them, so the peer's rules are not checked`,
    );
  }
  if (d.rulesNotChecked.length > 0) {
    out.push(
      `capture point: frames as sent, dropped after it: a NAK or ACK here may not have reached the requester, so ${d.rulesNotChecked.join(', ')} are not checked and episode triggers are what the responder sent`,
    );
  }
  out.push('');
  out.push('conversations:');
  for (const c of d.conversations) {
    if (halted) return;
    out.push(
      `  #${c.id} ${c.type} ${c.a.ip} QP ${qp(c.a.qpn)} ↔ ${c.b.ip} QP ${qp(c.b.qpn)}: frames ${c.firstFrame}-${c.lastFrame} (${c.frames}), ${spanText(c.durationNs, digits)}${c.cnps > 0 ? `, ${c.cnps} CNP` : ''}` +
        `${c.cmConnection !== null ? `, CM connection #${c.cmConnection}` : ''}${c.cmEndedFrame !== null ? `, ended by the CM at frame ${c.cmEndedFrame}` : ''}${c.closedBy !== null ? `, QPN reused by #${c.closedBy}` : ''}`,
    );
    for (const f of c.flows) out.push(...flowLine(d, f, c));
    for (const g of c.congestion) {
      const e = c[g.requester];
      const st = (x: { p50Us: number; minUs: number; maxUs: number } | null): string => (x === null ? '-' : `${x.p50Us} µs (${x.minUs}..${x.maxUs})`);
      const rate = g.meanGbpsBefore !== null && g.meanGbpsAfter !== null ? `, rate ${g.meanGbpsBefore} → ${g.meanGbpsAfter} Gb/s around a CNP (mean)` : '';
      out.push(
        `    congestion at ${e.ip} QP ${qp(e.qpn)}: ${g.ceMarked} CE-marked requests, ${g.cnps} CNPs, CE to CNP ${st(g.ceToCnp)}, CNP interval ${st(g.cnpInterval)}${rate}`,
      );
    }
  }
  if (d.cmConnections.length > 0) {
    out.push('', 'RDMA CM connections:');
    for (const c of d.cmConnections) out.push(...cmLines(c));
  }
  if (d.diagnosis !== undefined && d.diagnosis.length > 0) {
    out.push('', 'diagnosis:');
    for (const g of d.diagnosis) {
      out.push(`  ${g.cause} (frames ${g.frames.join(', ')}): ${g.explanation}`);
      if (g.consistentWith !== undefined) out.push(`    consistent with: ${g.consistentWith.join(', ')}`);
      out.push(`    fix: ${g.fix}`);
    }
  }
  // A list's lines: made here, or made earlier (TextList).
  const list = <T>(title: string, items: readonly T[] | TextList, line: (item: T) => string): void => {
    if (items.length === 0) return;
    out.push('', title);
    if (items instanceof TextList) {
      for (const l of items.texts()) {
        if (halted) return;
        out.push(l);
      }
      return;
    }
    for (const x of items) {
      if (halted) return;
      out.push(line(x));
    }
  };
  if (o.episodes === true) list('loss-recovery episodes:', d.episodes, episodeLine);
  if (o.violations ?? true) list('rule violations:', d.violations, violationLine);
  if (o.violations ?? true) list('rxe behaviour (rxe’s own, cited to its source; not counted as violations):', d.rxeBehaviours, rxeBehaviourLine);
  if (o.messages === true) list('messages:', d.messages, messageLine);
  if (o.frames === true) list('frames:', d.frames, (f: FrameResult) => frameLine(f, digits));
  if (d.captureError !== null) out.push('', `capture: ${d.captureError}`);
  if (d.stopped !== null) out.push('', `analysis: ${analysisStopText(d.stopped)}`);
  if (lines.length > 0 && !halted) write(`${lines.join('\n')}\n`);
}
