/**
 * `roce probe --html`: the report as one self-contained HTML page: the text report's header,
 * table and details, and for each figure a ladder (analysis/render/ladder-svg.ts) of its critical
 * frames: the frame the event acted on, the DUT's reaction, and a few around, the event's frames
 * marked. No scripts, fonts or files outside the page.
 *
 * The ladders are drawn from the run's capture (probe-capture.ts) as `roce analyze` reads it at the
 * DUT's NIC, so their flags (retransmission, NAK, RNR wait) are the analyzer's. A frame an event
 * kept off the wire (a skipped request, a withheld ACK, a dropped READ response) is not in the
 * capture: it is drawn where it would have been, crossed out, with no frame number.
 */
import type { CapturePoint } from '../../analysis/analyzer';
import { NO_FRAME, ladderSvg, xmlEscape } from '../../analysis/render/ladder-svg';
import { chartSvg } from '../../analysis/render/chart-svg';
import { type Timeline, type TimelineItem, buildTimeline } from '../../analysis/timeline';
import type { Side } from '../../analysis/types';
import { psnAdd } from '../../base/psn';
import { describeSyndrome } from '../../packets/aeth';
import { decodeFrame } from '../../packets/decode';
import { OPCODES, OpFlag, opcodeName } from '../../packets/opcodes';
import type { Figure } from './measurements';
import type { ProbeCapture, WireFrame } from './probe-capture';
import { NO_FIGURES, dutCompletionsText, figureRows, probeHeader } from './probe-report';
import type { ProbeResult } from './probe-result';
import { Ecn, ecnAt } from '../../packets/ecn';
import { DutRole, EventType, type ProbeEvent, type ProbeScenario } from './scenario';

/** Frames drawn before a figure's event and after the DUT's reaction. */
export const LADDER_LEAD = 3;
export const LADDER_TRAIL = 3;
/** The most frames one figure's ladder draws. */
export const LADDER_MAX = 60;

const CSS = `
body{font-family:sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:18px;margin:0 0 6px}
h2{font-size:15px;margin:22px 0 4px}
p{margin:2px 0 6px;font-size:13px}
p.head{font-family:monospace;font-size:12px;color:#444}
table.figures{border-collapse:collapse;font:12px monospace;margin:8px 0}
table.figures th,table.figures td{border:1px solid #bbb;padding:3px 8px;text-align:left}
table.figures th{background:#eee}
tr.pass td.verdict,section.pass h2 .verdict{color:#1e6b3f;font-weight:bold}
tr.fail td.verdict,section.fail h2 .verdict{color:#b01010;font-weight:bold}
tr.none td.verdict,section.none h2 .verdict{color:#777}
ul.details{font-size:13px;padding-left:20px}
section.figure{border-top:1px solid #ccc;margin-top:14px}
p.ladder-note{color:#555}
`;

/** What a figure's ladder is drawn from: the conversation of its QP as a timeline, and which side is which. */
interface QpLadder {
  timeline: Timeline;
  dutSide: Side;
  ourSide: Side;
  /** The requester's first PSN: relative PSN 0. */
  start: number;
}

const shortOp = (name: string): string =>
  name
    .replace(/^(RC|UC|UD|XRC|RD)_/, '')
    .replace('RDMA_', '')
    .replace('_WITH_IMMEDIATE', '_IMM')
    .replace('_WITH_INVALIDATE', '_INV');

/** A frame an event kept off the wire as a ladder item: where it would have been, crossed out. */
function offWireItem(w: WireFrame, t0: number, from: Side): TimelineItem | null {
  const d = decodeFrame(w.frame, undefined, { verifyIcrc: false });
  if (!d.roce || d.bth === null) return null;
  const name = opcodeName(d.bth.opcode);
  const aeth = d.aeth === null ? '' : ` · ${describeSyndrome(d.aeth.syndrome).replace(' credits=unlimited', '')}`;
  return {
    frame: NO_FRAME,
    timeNs: w.timeNs - t0,
    from,
    opcode: name,
    psn: d.bth.psn,
    label: `${shortOp(name)} PSN ${d.bth.psn}${d.bth.ackReq ? ' A' : ''}${aeth} (not sent)`,
    flags: [],
    fields: [
      ['frame', 'none: kept off the wire by the event'],
      ['opcode', name],
      ['DestQP', `0x${d.bth.destQp.toString(16).padStart(6, '0')}`],
      ['PSN', String(d.bth.psn)],
    ],
    lost: true,
  };
}

/** The conversation of QP `qp` (the runner starts QP 0's traffic first, so QP i's conversation is the (i+1)-th), with the frames kept off the wire put in place. */
function qpLadder(scenario: ProbeScenario, capture: ProbeCapture, pcap: Uint8Array, qp: number, capturePoint: CapturePoint, dutIp: string): QpLadder {
  const t = buildTimeline(pcap, { conversation: qp + 1, maxFrames: Number.MAX_SAFE_INTEGER, focus: 'start' }, { capturePoint });
  const dutSide: Side = t.a.ip === dutIp ? 'a' : 'b';
  const ourSide: Side = dutSide === 'a' ? 'b' : 'a';
  const dutQpn = dutSide === 'a' ? t.a.qpn : t.b.qpn;
  const t0 = capture.frames[0]?.timeNs ?? 0;
  const items: TimelineItem[] = [];
  const off = capture.offWire.filter((w) => {
    const d = decodeFrame(w.frame, undefined, { verifyIcrc: false });
    return d.roce && d.bth !== null && d.bth.destQp === dutQpn;
  });
  let k = 0;
  for (const it of t.items) {
    while (k < off.length && off[k]!.after < it.frame) {
      const x = offWireItem(off[k++]!, t0, ourSide);
      if (x !== null) items.push(x);
    }
    items.push(it);
  }
  for (; k < off.length; k++) {
    const x = offWireItem(off[k]!, t0, ourSide);
    if (x !== null) items.push(x);
  }
  const requester = scenario.dut.role === DutRole.REQUESTER ? dutSide : ourSide;
  const first = items.find((it) => it.from === requester && it.frame !== NO_FRAME) ?? items[0];
  return { timeline: { ...t, items }, dutSide, ourSide, start: first?.psn ?? 0 };
}

/** The names of request opcodes (what a `skip` keeps off the wire). */
const REQUEST_NAMES: ReadonlySet<string> = new Set(OPCODES.flatMap((o) => (o !== undefined && (o.flags & OpFlag.REQ) !== 0 ? [o.name] : [])));
const isRequestOp = (name: string): boolean => REQUEST_NAMES.has(name);

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** The event that acted on `it`, if any: a frame kept off the wire, a DUT frame dropped, or our RNR NAK. */
function eventOf(it: TimelineItem, q: QpLadder, capture: ProbeCapture, events: readonly ProbeEvent[]): ProbeEvent | undefined {
  const at = (e: ProbeEvent): boolean => psnAdd(q.start, e.psn) === it.psn;
  if (it.frame === NO_FRAME) {
    const type = isRequestOp(it.opcode) ? EventType.SKIP : /READ_RESPONSE/.test(it.opcode) ? EventType.DROP_READ_RESPONSE : EventType.WITHHOLD_ACK;
    return events.find((e) => e.type === type && at(e));
  }
  // A DUT frame thrown away on arrival: a drop's, or a seq-nak's (which our NAK answered).
  if (it.from === q.dutSide && capture.frames[it.frame - 1]?.dropped === true)
    return events.find((e) => (e.type === EventType.DROP || e.type === EventType.SEQ_NAK) && at(e));
  const w = capture.frames[it.frame - 1];
  // The second of two identical copies of our request in a row: a duplicate event's.
  const prev = capture.frames[it.frame - 2];
  if (it.from === q.ourSide && w !== undefined && prev !== undefined && isRequestOp(it.opcode) && sameBytes(w.frame, prev.frame))
    return events.find((e) => e.type === EventType.DUPLICATE && at(e));
  // Our request with CE set (an ecn event; the memory link and a live run's frames are untagged: IP at byte 14).
  if (it.from === q.ourSide && w !== undefined && isRequestOp(it.opcode) && ecnAt(w.frame, 14) === Ecn.CE)
    return events.find((e) => e.type === EventType.ECN && at(e));
  if (it.from === q.ourSide && (capture.frames[it.frame - 1]?.heldNs ?? 0) > 0) return events.find((e) => e.type === EventType.DELAY_ACK && at(e));
  if (it.from === q.ourSide && it.flags.includes('rnrNak')) return events.find((e) => e.type === EventType.RNR_NAK && at(e));
  return undefined;
}

/** What the event did to the frame, for the mark beside it (short: it sits right of the ladder). */
function markText(e: ProbeEvent): string {
  return `${e.type}, line ${e.line}`;
}

/** The index of the DUT's reaction the figure measures, at or after `from`, or -1. */
function reactionOf(f: Figure, items: readonly TimelineItem[], q: QpLadder, from: number): number {
  const P = psnAdd(q.start, f.psn);
  const dut = (it: TimelineItem): boolean => it.from === q.dutSide;
  if (f.kind === 'retryCount') {
    for (let i = items.length - 1; i >= from; i--) if (dut(items[i]!) && items[i]!.psn === P) return i;
    return -1;
  }
  // The DUT's answer to a duplicate: its first frame after the copy.
  if (f.kind === 'duplicateResponse') {
    for (let i = from; i < items.length; i++) if (dut(items[i]!) && items[i]!.frame !== NO_FRAME) return i;
    return -1;
  }
  const want = f.kind === 'nakGeneration' ? 'nakSeqErr' : 'retransmission';
  for (let i = from; i < items.length; i++) if (dut(items[i]!) && items[i]!.flags.includes(want)) return i;
  return -1;
}

/** One figure's ladder: its event's frame, the DUT's reaction, a few around; the events' frames marked. */
function figureLadder(f: Figure, nth: number, q: QpLadder, capture: ProbeCapture, events: readonly ProbeEvent[]): { svg: string; note: string } {
  const all = q.timeline.items;
  const acted = all.map((it) => eventOf(it, q, capture, events));
  // The figure's event: the nth frame its event acted on (an rnrWait figure per RNR NAK).
  let e = -1;
  for (let i = 0, k = 0; i < all.length; i++) if (acted[i]?.line === f.eventLine && k++ === nth) e = i;
  if (e < 0) e = acted.findIndex((x) => x?.line === f.eventLine);
  // A held ACK leaves after the resend it provoked (the DUT's timer ran out while it was held): that resend is the QP's first.
  const r = e < 0 ? -1 : reactionOf(f, all, q, f.kind === 'ackDelay' ? 0 : e + 1);
  const lo = Math.max(0, Math.min(e < 0 ? 0 : e, r < 0 ? Number.MAX_SAFE_INTEGER : r) - LADDER_LEAD);
  const hi = Math.min(all.length, Math.max(e, r) + LADDER_TRAIL + 1, lo + LADDER_MAX);
  const items = all.slice(lo, hi);
  const marks = new Map<number, string>();
  items.forEach((_, i) => {
    const ev = acted[lo + i];
    if (ev !== undefined) marks.set(i, markText(ev));
  });
  const frames = new Set(items.map((it) => it.frame));
  const t: Timeline = {
    ...q.timeline,
    items,
    rnrWaits: q.timeline.rnrWaits.filter((w) => frames.has(w.fromFrame) && frames.has(w.toFrame)),
    truncated: all.length - hi,
    window: { reason: 'start', episode: null, asked: false, error: null, before: lo, episodeIds: [], filtered: true },
  };
  const svg = ladderSvg(t, { header: false, marks });
  const numbered = items.filter((it) => it.frame !== NO_FRAME).map((it) => it.frame);
  const range = numbered.length === 0 ? 'no captured frame' : `frames ${Math.min(...numbered)}-${Math.max(...numbered)}`;
  const what = [
    e < 0 ? 'the event acted on no frame of this QP' : `the event's frame${marks.size > 1 ? 's' : ''} marked`,
    // roce analyze keeps CNPs out of a QP's conversation (they are counted apart), so its ladder has none to draw.
    f.kind === 'cnpGeneration' || f.kind === 'cnpSpacing'
      ? "the DUT's CNPs are not drawn (roce analyze keeps them out of the QP's conversation)"
      : r < 0
        ? 'no reaction of the DUT to draw'
        : `the DUT's reaction at ${all[r]!.frame === NO_FRAME ? 'an unsent frame' : `frame ${all[r]!.frame}`}`,
  ];
  return { svg, note: `${range} of the capture (conversation #${q.timeline.conversation}); ${what.join('; ')}` };
}

/**
 * A rate figure's picture: the DUT's rate level by level (a step line; each level's rate from its
 * frames' gaps, rate-levels.ts), our CNPs as triangles, and the rate before them dashed, from the
 * level in effect at our first CNP on (time 0).
 */
function rateChart(f: Figure): { svg: string; note: string } {
  const r = f.rate!;
  const t0 = r.levels[0]?.atNs ?? 0;
  const us = (ns: number): number => (ns - t0) / 1000;
  const points: [number, number][] = [];
  r.levels.forEach((l, k) => {
    const next = r.levels[k + 1]?.atNs ?? r.untilNs;
    points.push([us(l.atNs), l.mbps], [us(next), l.mbps]);
  });
  const end = us(r.untilNs);
  const svg = chartSvg(
    [
      {
        title: `the DUT's send rate on QP ${f.qp}`,
        yLabel: 'Mb/s',
        lines: [
          { name: "DUT's rate", points },
          {
            name: 'before our CNPs',
            points: [
              [0, r.beforeMbps],
              [end, r.beforeMbps],
            ],
            dashed: true,
          },
        ],
        markers: [{ name: 'our CNPs', timesUs: r.cnpsNs.map(us), shape: 'triangle' }],
      },
    ],
    `${f.kind}: ${f.verdict}`,
  );
  return { svg, note: `${r.levels.length} rate levels from ${(t0 / 1000).toFixed(3)} µs of the run (time 0 here); ${r.cnpsNs.length} CNP(s) marked` };
}

/** What the HTML report is made of: the run, its scenario and its capture (at the DUT's NIC). */
export interface ProbeHtmlInput {
  result: ProbeResult;
  scenario: ProbeScenario;
  capture: ProbeCapture;
  /** Where the scenario came from (a file, or `bundled NAME`). */
  source: string;
}

/** The report as a self-contained HTML page. */
export function probeHtml({ result: r, scenario, capture, source }: ProbeHtmlInput): string {
  const out: string[] = [];
  const esc = xmlEscape;
  const title = `roce probe: ${r.scenario}`;
  out.push(
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8"/>',
    `<title>${esc(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head>',
    '<body>',
  );
  out.push(`<h1>${esc(title)}</h1>`, `<p>${esc(source)}</p>`);
  for (const line of probeHeader(r)) out.push(`<p class="head">${esc(line)}</p>`);
  if (r.figures.length === 0) out.push(`<p>${esc(NO_FIGURES)}</p>`);
  else {
    const [head, ...rows] = figureRows(r);
    out.push('<table class="figures">', `<tr>${head!.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`);
    rows.forEach((row, i) => {
      const f = r.figures[i]!;
      const cells = row.map((c, k) =>
        k === 0 ? `<td><a href="#figure-${i + 1}">${esc(c)}</a></td>` : `<td${k === 7 ? ' class="verdict"' : ''}>${esc(c)}</td>`,
      );
      out.push(`<tr class="${f.verdict}">${cells.join('')}</tr>`);
    });
    out.push('</table>', '<ul class="details">');
    for (const f of r.figures) out.push(`<li>${esc(`${f.kind} (line ${f.eventLine}): ${f.detail}`)}</li>`);
    out.push('</ul>');
  }
  const dut = dutCompletionsText(r);
  if (dut !== null) out.push(`<p>${esc(`DUT's work completions: ${dut}`)}</p>`);

  const dutIp = capture.dutAddress();
  if (r.figures.length > 0 && dutIp !== null) {
    const pcap = capture.pcap();
    const capturePoint: CapturePoint = `host:${dutIp}`;
    const ladders = new Map<number, QpLadder>();
    const seen = new Map<string, number>();
    r.figures.forEach((f, i) => {
      let q = ladders.get(f.qp);
      if (q === undefined) {
        q = qpLadder(scenario, capture, pcap, f.qp, capturePoint, dutIp);
        ladders.set(f.qp, q);
      }
      const key = `${f.eventLine}/${f.kind}`;
      const nth = seen.get(key) ?? 0;
      seen.set(key, nth + 1);
      const { svg, note } = f.rate !== undefined ? rateChart(f) : figureLadder(f, nth, q, capture, scenario.events);
      out.push(
        `<section class="figure ${f.verdict}" id="figure-${i + 1}" data-kind="${f.kind}" data-qp="${f.qp}" data-psn="${f.psn}" data-event-line="${f.eventLine}">`,
        `<h2>${esc(`${i + 1}. ${f.kind}, QP ${f.qp}, PSN ${f.psn} (line ${f.eventLine}): `)}<span class="verdict">${esc(f.verdict)}</span></h2>`,
        `<p>${esc(f.detail)} (${esc(f.clause)})</p>`,
        `<p class="ladder-note">${esc(note)}</p>`,
        svg.trimEnd(),
        '</section>',
      );
    });
  }
  out.push('</body>', '</html>');
  return `${out.join('\n')}\n`;
}
