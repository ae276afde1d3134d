/**
 * A sequence (ladder) diagram of one conversation as a self-contained SVG:
 * the two endpoints as vertical lines, one arrow per packet labelled with
 * opcode, PSN and AETH, time going down. Lost transmissions carry a cross,
 * NAKs, RNR NAKs, retransmissions and bad frames have their own colours, RNR
 * waits are shaded bands.
 *
 * The time axis is true within each stretch of traffic: y grows linearly
 * with time, with two exceptions that are marked: gaps shorter than
 * MIN_ROW_PX at that scale are widened to it so labels stay readable, and an
 * idle gap longer than 20 median gaps (or than MAX_GAP_PX at that scale) is
 * cut to BREAK_PX with a zig-zag and its length written on it. The time of
 * every packet is on the left, its frame number beside the arrow's start.
 *
 * Every label stands clear of every arrow: an arrow's label sits above it,
 * its baseline placed from the label's estimated width (labelBox) so that
 * its box ends LABEL_GAP_PX above the arrow where the two overlap in x, and
 * MIN_ROW_PX leaves room for it under the arrow before. The header says
 * which stretch of the conversation is drawn and why (ladder-window.ts).
 * A caller may mark items (what an injected event did to them: `roce probe --html`) and draw items
 * that are not in the capture (frame NO_FRAME: a frame kept off the wire, where it would have been).
 * Output depends only on the input (no dates, no random ids).
 */
import type { Timeline, TimelineItem } from '../timeline';
import { spanText } from '../text-report';
import { windowOthersParts, windowShownText } from './ladder-window';

/** Rows at least this far apart: an arrow's slant, its label above it and a gap each side. */
export const MIN_ROW_PX = 32;
/** An idle gap cut short takes this much: the arrow before, the zig-zag and its words, the next label. */
export const BREAK_PX = 52;
/** Pixels per median inter-packet gap. */
const MEDIAN_ROW_PX = 36;
/** A gap that would take more than this at the chosen scale is cut instead. */
const MAX_GAP_PX = 200;
const WIDTH = 1040;
const X_TIME = 100;
export const X_A = 300;
export const X_B = 820;
/** Room above the first arrow: the title, the window's lines (three at most), the endpoints; without the header, the endpoints. */
const TOP = 152;
const TOP_BARE = 72;
/** How far an arrow falls from its start to its end (its flight, not to scale). */
export const SLANT = 10;

/** Font sizes (px) of the texts drawn among the arrows: arrow labels, frame numbers, gap and wait notes. */
export const LABEL_FONT_PX = 11;
const FRAME_FONT_PX = 10;
const NOTE_FONT_PX = 10;
/** The width of a character as a fraction of the font size, a little over what Chromium measures with DejaVu (monospace 0.602 em a glyph; sans-serif at its widest common glyphs, bold digits). */
const CHAR_EM = { monospace: 0.62, 'sans-serif': 0.66 } as const;

/** The font of each class of text the ladder draws, as its style sets it: what textBox estimates from. */
export const TEXT_FONTS: Readonly<Record<string, { px: number; family: keyof typeof CHAR_EM }>> = {
  title: { px: 15, family: 'sans-serif' },
  win: { px: 12, family: 'sans-serif' },
  eplabel: { px: 13, family: 'sans-serif' },
  tm: { px: 10, family: 'monospace' },
  fr: { px: FRAME_FONT_PX, family: 'monospace' },
  lbl: { px: LABEL_FONT_PX, family: 'monospace' },
  waitlbl: { px: NOTE_FONT_PX, family: 'sans-serif' },
  marklbl: { px: NOTE_FONT_PX, family: 'sans-serif' },
  brklbl: { px: NOTE_FONT_PX, family: 'sans-serif' },
};
/** Clearance between a label's box and the nearest arrow. */
export const LABEL_GAP_PX = 3;

/** A text's box as the renderer estimates it: `x0..x1` wide, `y0..y1` high (y grows down). */
export interface TextBox {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

/**
 * The box of a text drawn at (x, baseline) with this anchor, font size and family: the width from
 * the family's character width, the height one font size above the baseline and a third below
 * (descenders, and the accents of a µ).
 */
export function textBox(text: string, x: number, baseline: number, anchor: 'start' | 'middle' | 'end', fontPx: number, family: keyof typeof CHAR_EM): TextBox {
  const w = [...text].length * fontPx * CHAR_EM[family];
  const x0 = anchor === 'start' ? x : anchor === 'end' ? x - w : x - w / 2;
  return { x0, x1: x0 + w, y0: baseline - fontPx, y1: baseline + fontPx / 3 };
}

/**
 * The baseline of the label of an arrow from (x1, y) to (x2, y + SLANT), centred between the
 * endpoints: its box ends LABEL_GAP_PX above the arrow's highest point under it.
 */
export function labelBaseline(text: string, x1: number, x2: number, y: number): number {
  const box = textBox(text, (X_A + X_B) / 2, 0, 'middle', LABEL_FONT_PX, 'monospace');
  const lo = Math.max(Math.min(x1, x2), box.x0);
  const hi = Math.min(Math.max(x1, x2), box.x1);
  // The arrow falls from x1 to x2: its highest point under the label is the end nearer x1.
  const near = Math.abs(lo - x1) < Math.abs(hi - x1) ? lo : hi;
  const yAt = y + (SLANT * (near - x1)) / (x2 - x1);
  return yAt - LABEL_GAP_PX - box.y1;
}

export function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

export const fmt = (n: number): string => (Math.round(n * 10) / 10).toString();

/** A time in µs or ms with 3 decimals: for figures that are not capture times (a timer, an axis tick). */
export function usText(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(3)} ms`;
  return `${(ns / 1000).toFixed(3)} µs`;
}

/** The drawing class of an item: what colour and dash it gets. */
export function kindOf(it: TimelineItem): string {
  const f = new Set(it.flags);
  if (f.has('icrcBad') || f.has('malformed')) return 'bad';
  if (f.has('rnrNak')) return 'rnr';
  if (f.has('nakSeqErr') || f.has('nakInvReq') || f.has('nakRemAccess') || f.has('nakRemOp')) return 'nak';
  if (f.has('cnp')) return 'cnp';
  if (f.has('retransmission') || f.has('duplicateFrame')) return 'retx';
  return /ACKNOWLEDGE|READ_RESPONSE/.test(it.opcode) ? 'resp' : 'req';
}

export interface LadderLayout {
  /** y of each item, in item order. */
  ys: number[];
  /** Compressed idle gaps: where and how long. */
  breaks: { y: number; ns: number }[];
  height: number;
  /** Pixels per ns in the linear stretches. */
  scale: number;
}

/** Places the items on the time axis, the first `top` px down (room for the header and the endpoints' names). */
export function layoutLadder(items: readonly TimelineItem[], top = TOP): LadderLayout {
  const gaps: number[] = [];
  for (let i = 1; i < items.length; i++) gaps.push(Math.max(0, items[i]!.timeNs - items[i - 1]!.timeNs));
  const positive = gaps.filter((g) => g > 0).sort((x, y) => x - y);
  const median = positive[Math.floor(positive.length / 2)] ?? 1000;
  const scale = MEDIAN_ROW_PX / Math.max(1, median);
  const breakNs = Math.max(20 * median, 1000);
  const ys: number[] = [];
  const breaks: { y: number; ns: number }[] = [];
  let y = top + 24;
  items.forEach((_, i) => {
    if (i > 0) {
      const g = gaps[i - 1] ?? 0;
      if (g > breakNs || g * scale > MAX_GAP_PX) {
        // The zig-zag below the arrow before, its words under it, clear of the next label.
        breaks.push({ y: y + SLANT + 12, ns: g });
        y += BREAK_PX;
      } else y += Math.max(MIN_ROW_PX, g * scale);
    }
    ys.push(y);
  });
  return { ys, breaks, height: Math.ceil(y + SLANT + 60), scale };
}

const STYLE = `
.ep{stroke:#444;stroke-width:2}
.eplabel{font:600 13px sans-serif;fill:#222}
.tm{font:10px monospace;fill:#666}
.title{font:bold 15px sans-serif;fill:#000}
.lbl{font:${LABEL_FONT_PX}px monospace;fill:#111}
.fr{font:${FRAME_FONT_PX}px monospace;fill:#555}
.pkt line{stroke-width:1.6}
.req line{stroke:#1f5fbf}.req .lbl{fill:#1f3f7f}
.resp line{stroke:#2e8b57}.resp .lbl{fill:#1e6b3f}
.retx line{stroke:#d62728;stroke-dasharray:6 3}.retx .lbl{fill:#b01010}
.nak line{stroke:#ff7f0e;stroke-width:2.6}.nak .lbl{fill:#c05800;font-weight:bold}
.rnr line{stroke:#9467bd;stroke-width:2.6}.rnr .lbl{fill:#6a3d9a;font-weight:bold}
.cnp line{stroke:#8c564b;stroke-dasharray:2 2}
.bad line{stroke:#000;stroke-dasharray:1 3}
.lost{stroke:#d62728;stroke-width:3}
.wait{fill:#9467bd;fill-opacity:.15}
.waitlbl{font:${NOTE_FONT_PX}px sans-serif;fill:#6a3d9a}
.brk{stroke:#999;fill:none}
.brklbl{font:italic ${NOTE_FONT_PX}px sans-serif;fill:#777}
.win{font:12px sans-serif;fill:#333}
.pkt:hover line{stroke-width:4}
`;

/** The style of marked items, added only to a ladder that has them. */
const MARK_STYLE = `.markband{fill:#ffd700;fill-opacity:.3}
.marklbl{font:bold ${NOTE_FONT_PX}px sans-serif;fill:#8a5a00}
`;

/** An arrowhead's length and width in px, whatever the line's width: small enough to stay clear of the next row's label. */
export const HEAD_PX = 8;

function marker(id: string, color: string): string {
  return `<marker id="${id}" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="${HEAD_PX}" markerHeight="${HEAD_PX}" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="${color}"/></marker>`;
}

const MARKERS: Readonly<Record<string, string>> = {
  req: '#1f5fbf',
  resp: '#2e8b57',
  retx: '#d62728',
  nak: '#ff7f0e',
  rnr: '#9467bd',
  cnp: '#8c564b',
  bad: '#000000',
};

/** The tooltip text of an item: one "name: value" per line. */
export function tipText(it: TimelineItem): string {
  return it.fields.map(([k, v]) => `${k}: ${v}`).join('\n');
}

/** How a ladder is drawn: its title and whether the SVG carries the header (a page around it may show the header itself). */
export interface LadderOptions {
  /** The title (default: the conversation). */
  title?: string;
  /** Draw the title and the window's description in the SVG (default true). */
  header?: boolean;
  /**
   * Items to mark, by index in the timeline's items, each with a short note (what an injected
   * event did to it): a band behind its row, the note beside it, class `marked` and `data-mark`.
   */
  marks?: ReadonlyMap<number, string>;
}

/** An item whose frame number is this is not in the capture (a frame kept off the wire, drawn where it would have been): no number is written. */
export const NO_FRAME = 0;

/** The lines an RNR wait's note takes beside its shaded band. */
function waitLines(w: Timeline['rnrWaits'][number], digits: number): string[] {
  return [`RNR wait ${spanText(w.endNs - w.startNs, digits)}`, ...(w.timerNs !== null ? [`(timer ${usText(w.timerNs)})`] : [])];
}

/** The ladder as a standalone SVG document; `title` (a string) as in LadderOptions. */
export function ladderSvg(t: Timeline, options: LadderOptions | string = {}): string {
  const o: LadderOptions = typeof options === 'string' ? { title: options } : options;
  const top = o.header === false ? TOP_BARE : TOP;
  const lay = layoutLadder(t.items, top);
  const h = lay.height;
  const ep = (e: Timeline['a']): string => `${e.ip} QP ${e.qpn === null ? '?' : `0x${e.qpn.toString(16).padStart(6, '0')}`}`;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="ladder" width="${WIDTH}" height="${h}" viewBox="0 0 ${WIDTH} ${h}" font-family="sans-serif">`);
  out.push(`<style>${STYLE}${o.marks !== undefined && o.marks.size > 0 ? MARK_STYLE : ''}</style>`);
  out.push(
    `<defs>${Object.entries(MARKERS)
      .map(([k, c]) => marker(`ah-${k}`, c))
      .join('')}</defs>`,
  );
  out.push(`<rect width="${WIDTH}" height="${h}" fill="#fff"/>`);
  if (o.header !== false) {
    const head = o.title !== undefined && o.title !== '' ? o.title : `conversation #${t.conversation} (${t.type})`;
    out.push(`<text class="title" x="${WIDTH / 2}" y="22" text-anchor="middle">${xmlEscape(head)}</text>`);
    out.push(`<text class="win" x="${WIDTH / 2}" y="42" text-anchor="middle">${xmlEscape(windowShownText(t))}</text>`);
    windowOthersParts(t).forEach((line, k) => out.push(`<text class="win" x="${WIDTH / 2}" y="${60 + k * 16}" text-anchor="middle">${xmlEscape(line)}</text>`));
  }
  out.push(`<text class="eplabel" x="${X_A}" y="${top - 30}" text-anchor="middle">${xmlEscape(ep(t.a))}</text>`);
  out.push(`<text class="eplabel" x="${X_B}" y="${top - 30}" text-anchor="middle">${xmlEscape(ep(t.b))}</text>`);
  out.push(`<text class="tm" x="${X_TIME}" y="${top - 10}" text-anchor="end">time</text>`);
  out.push(`<text class="fr" x="${X_A - 8}" y="${top - 10}" text-anchor="end">frame</text>`);
  out.push(`<text class="fr" x="${X_B + 8}" y="${top - 10}" text-anchor="start">frame</text>`);
  out.push(`<line class="ep" x1="${X_A}" y1="${top - 20}" x2="${X_A}" y2="${h - 30}"/>`);
  out.push(`<line class="ep" x1="${X_B}" y1="${top - 20}" x2="${X_B}" y2="${h - 30}"/>`);
  const byFrame = new Map(t.items.map((it, i) => [it.frame, i]));
  for (const w of t.rnrWaits) {
    const i0 = byFrame.get(w.fromFrame);
    const i1 = byFrame.get(w.toFrame);
    if (i0 === undefined || i1 === undefined) continue;
    const y0 = lay.ys[i0]! + SLANT;
    const y1 = lay.ys[i1]!;
    const x = w.side === 'a' ? X_A : X_B;
    out.push(`<rect class="wait" x="${x - 14}" y="${fmt(y0)}" width="28" height="${fmt(Math.max(2, y1 - y0))}"/>`);
    // Outside the frame numbers, one line under the other.
    const lx = w.side === 'a' ? x - 56 : x + 56;
    const lines = waitLines(w, t.digits);
    lines.forEach((line, k) => {
      const by = (y0 + y1) / 2 + 3 + (k - (lines.length - 1) / 2) * (NOTE_FONT_PX + 2);
      out.push(`<text class="waitlbl" x="${lx}" y="${fmt(by)}" text-anchor="${w.side === 'a' ? 'end' : 'start'}">${xmlEscape(line)}</text>`);
    });
  }
  for (const b of lay.breaks) {
    const y = b.y;
    out.push(`<path class="brk" d="M${X_A - 40},${fmt(y - 4)} l10,8 l10,-8 l10,8 M${X_B - 30},${fmt(y - 4)} l10,8 l10,-8 l10,8"/>`);
    out.push(`<text class="brklbl" x="${(X_A + X_B) / 2}" y="${fmt(y + 4)}" text-anchor="middle">… ${spanText(b.ns, t.digits)} without packets …</text>`);
  }
  t.items.forEach((it, i) => {
    const y = lay.ys[i]!;
    const kind = kindOf(it);
    const x1 = it.from === 'a' ? X_A : X_B;
    const x2 = it.from === 'a' ? X_B : X_A;
    const y2 = y + SLANT;
    const tip = tipText(it);
    const mark = o.marks?.get(i);
    out.push(
      `<g class="pkt ${kind}${mark === undefined ? '' : ' marked'}" data-frame="${it.frame}"${mark === undefined ? '' : ` data-mark="${xmlEscape(mark)}"`} data-tip="${xmlEscape(tip)}">`,
    );
    out.push(`<title>${xmlEscape(tip)}</title>`);
    if (mark !== undefined) {
      // Behind the row's label and arrow; the note right of B's frame numbers.
      out.push(
        `<rect class="markband" x="${X_TIME + 8}" y="${fmt(y - MIN_ROW_PX / 2)}" width="${WIDTH - X_TIME - 16}" height="${fmt(MIN_ROW_PX / 2 + SLANT + 4)}"/>`,
      );
      out.push(`<text class="marklbl" x="${X_B + 48}" y="${fmt(y + 3)}" text-anchor="start">${xmlEscape(mark)}</text>`);
    }
    out.push(`<text class="tm" x="${X_TIME}" y="${fmt(y + 3)}" text-anchor="end">${xmlEscape(spanText(it.timeNs, t.digits))}</text>`);
    if (it.frame !== NO_FRAME)
      out.push(
        `<text class="fr" x="${it.from === 'a' ? X_A - 8 : X_B + 8}" y="${fmt(y + 3)}" text-anchor="${it.from === 'a' ? 'end' : 'start'}">${it.frame}</text>`,
      );
    out.push(`<line class="arrow" x1="${x1}" y1="${fmt(y)}" x2="${x2}" y2="${fmt(y2)}" marker-end="url(#ah-${kind})"/>`);
    const flags = it.flags.filter((f) => f !== 'retransmission' || kind !== 'retx');
    const text = `${it.label}${kind === 'retx' ? ' (resent)' : ''}${flags.length > 0 ? ` [${flags.join(' ')}]` : ''}`;
    out.push(`<text class="lbl" x="${(X_A + X_B) / 2}" y="${fmt(labelBaseline(text, x1, x2, y))}" text-anchor="middle">${xmlEscape(text)}</text>`);
    if (it.lost) {
      const cx = x1 + (x2 - x1) * 0.8;
      const cy = y + SLANT * 0.8;
      out.push(
        `<path class="lost" d="M${fmt(cx - 6)},${fmt(cy - 6)}l12,12M${fmt(cx + 6)},${fmt(cy - 6)}l-12,12"><title>lost: resent in a loss-recovery episode</title></path>`,
      );
    }
    out.push('</g>');
  });
  const left = t.window.before + t.truncated;
  if (left > 0) {
    out.push(
      `<text class="brklbl" x="${WIDTH / 2}" y="${h - 12}" text-anchor="middle">${left} more packet(s) of the conversation not drawn (${t.window.before} before, ${t.truncated} after)</text>`,
    );
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
