/**
 * A PSN-versus-time graph per requester flow in the style of tcptrace's
 * time-sequence graph, as one self-contained SVG: first transmissions as
 * blue ticks, retransmissions as red ticks, ACKs as a green step line with
 * dots, READ responses as teal dots, NAKs as orange crosses and RNR NAKs as
 * purple triangles; frames with ECN CE as pink rings, CNPs to the requester
 * as brown down-pointing triangles, the resends of ACK timeouts as black
 * squares, each with a legend entry. One panel per flow, stacked. The data
 * are drawn PAD_PX inside each panel's axes, so that every marker, at the
 * extremes of the data too, lies within the plot area. Deterministic output.
 */
import type { PsnMark, PsnSeries } from '../psn-series';
import { fmt, usText, xmlEscape } from './ladder-svg';
import { spanText } from '../text-report';

const W = 960;
const PANEL_H = 330;
const ML = 80;
const MR = 20;
const MT = 40;
const MB = 46;
/** How far inside the axes the data start: more than any marker's half size. */
export const PAD_PX = 8;
const LEGEND_ROW_PX = 18;

/** Round tick step for a span: 1, 2 or 5 times a power of ten, about `n` ticks. */
export function niceStep(span: number, n = 6): number {
  const raw = Math.max(span, 1e-9) / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

const STYLE = `
.ax{stroke:#333;stroke-width:1}
.grid{stroke:#e4e4e4;stroke-width:1}
.tk{font:10px monospace;fill:#555}
.ttl{font:600 13px sans-serif;fill:#222}
.new{stroke:#1f5fbf;stroke-width:1.5}
.retx{stroke:#d62728;stroke-width:2}
.ackl{stroke:#2e8b57;stroke-width:1.2;fill:none}
.ack{fill:#2e8b57}
.resp{fill:#17becf}
.nak{stroke:#ff7f0e;stroke-width:2.2}
.rnr{fill:#9467bd}
.ce{fill:none;stroke:#e377c2;stroke-width:1.6}
.cnp{fill:#8c564b}
.tmo{fill:none;stroke:#000;stroke-width:1.6}
.lg{font:11px sans-serif;fill:#333}
`;

/** The plot area of a panel whose top is `top`: what every marker stays within. */
export function plotArea(top: number): { x0: number; x1: number; y0: number; y1: number } {
  return { x0: ML, x1: W - MR, y0: top + MT, y1: top + PANEL_H - MB };
}

function markTitle(m: PsnMark, s: PsnSeries): string {
  const what = m.kind === 'ce' ? 'ECN CE' : m.kind === 'cnp' ? 'CNP to the requester' : 'resend after an ACK timeout';
  return `<title>${what}: frame ${m.frame}, ${m.kind === 'cnp' ? `sent PSN up to ${s.basePsn + m.psn}` : `PSN ${s.basePsn + m.psn}`}, ${spanText(m.timeNs, s.digits)}</title>`;
}

function panel(s: PsnSeries, top: number): string {
  const out: string[] = [];
  const pts = s.points;
  const t0 = pts.reduce((m, p) => Math.min(m, p.timeNs), pts[0]?.timeNs ?? 0);
  const t1 = pts.reduce((m, p) => Math.max(m, p.timeNs), t0 + 1);
  const p1 = pts.reduce((m, p) => Math.max(m, p.psn + 1), 1);
  const tw = Math.max(1, t1 - t0);
  const ph = PANEL_H - MT - MB;
  const pw = W - ML - MR;
  const x = (t: number): number => ML + PAD_PX + ((t - t0) / tw) * (pw - 2 * PAD_PX);
  const y = (psn: number): number => top + MT + ph - PAD_PX - (psn / Math.max(1, p1)) * (ph - 2 * PAD_PX);
  out.push(`<g class="panel" data-conversation="${s.conversation}" data-requester="${s.requester}">`);
  out.push(`<text class="ttl" x="${ML}" y="${top + 22}">${xmlEscape(s.title)}${s.truncated > 0 ? ` (${s.truncated} points not drawn)` : ''}</text>`);
  const ts = niceStep(tw);
  for (let t = 0; t <= tw + 1e-9; t += ts) {
    const xx = x(t0 + t);
    out.push(`<line class="grid" x1="${fmt(xx)}" y1="${top + MT}" x2="${fmt(xx)}" y2="${top + MT + ph}"/>`);
    out.push(`<text class="tk" x="${fmt(xx)}" y="${top + MT + ph + 14}" text-anchor="middle">${xmlEscape(usText(t0 + t))}</text>`);
  }
  const ps = Math.max(1, niceStep(p1));
  for (let p = 0; p <= p1; p += ps) {
    const yy = y(p);
    out.push(`<line class="grid" x1="${ML}" y1="${fmt(yy)}" x2="${ML + pw}" y2="${fmt(yy)}"/>`);
    out.push(`<text class="tk" x="${ML - 6}" y="${fmt(yy + 3)}" text-anchor="end">+${p}</text>`);
  }
  out.push(`<line class="ax" x1="${ML}" y1="${top + MT}" x2="${ML}" y2="${top + MT + ph}"/>`);
  out.push(`<line class="ax" x1="${ML}" y1="${top + MT + ph}" x2="${ML + pw}" y2="${top + MT + ph}"/>`);
  out.push(`<text class="tk" x="${ML + pw / 2}" y="${top + MT + ph + 30}" text-anchor="middle">time since the first frame of the capture</text>`);
  out.push(`<text class="tk" transform="translate(${ML - 54},${top + MT + ph / 2}) rotate(-90)" text-anchor="middle">PSN - ${s.basePsn}</text>`);
  // ACK step line: the highest PSN acknowledged so far.
  const acks = pts.filter((p) => p.kind === 'ack' || p.kind === 'resp');
  if (acks.length > 0) {
    let hi = -1;
    const d: string[] = [];
    for (const p of acks) {
      if (p.psn <= hi) continue;
      d.push(`${d.length === 0 ? 'M' : 'H'}${fmt(x(p.timeNs))}${d.length === 0 ? `,${fmt(y(p.psn + 1))}` : ''}`, `V${fmt(y(p.psn + 1))}`);
      hi = p.psn;
    }
    out.push(`<path class="ackl" d="${d.join('')}"/>`);
  }
  for (const p of pts) {
    const xx = fmt(x(p.timeNs));
    const yy = y(p.psn);
    const tip = `<title>frame ${p.frame}, PSN ${s.basePsn + p.psn}, ${spanText(p.timeNs, s.digits)}</title>`;
    switch (p.kind) {
      case 'new':
      case 'retx': {
        const top2 = y(p.psn + 1);
        out.push(`<line class="${p.kind}" x1="${xx}" y1="${fmt(yy)}" x2="${xx}" y2="${fmt(Math.min(top2, yy - 2))}">${tip}</line>`);
        break;
      }
      case 'ack':
        out.push(`<circle class="ack" cx="${xx}" cy="${fmt(y(p.psn + 1))}" r="1.8">${tip}</circle>`);
        break;
      case 'resp':
        out.push(`<circle class="resp" cx="${xx}" cy="${fmt(y(p.psn + 1))}" r="1.8">${tip}</circle>`);
        break;
      case 'nak': {
        const cy = y(p.psn);
        out.push(`<path class="nak" d="M${fmt(x(p.timeNs) - 4)},${fmt(cy - 4)}l8,8M${fmt(x(p.timeNs) + 4)},${fmt(cy - 4)}l-8,8">${tip}</path>`);
        break;
      }
      case 'rnr': {
        const cy = y(p.psn);
        out.push(`<path class="rnr" d="M${xx},${fmt(cy - 5)}l5,9h-10z">${tip}</path>`);
        break;
      }
    }
  }
  for (const m of s.marks) {
    const mx = x(m.timeNs);
    // A CE mark rings its frame's point: a request's tick spans psn..psn+1, an ACK's dot is at psn+1.
    const my =
      m.kind === 'ce'
        ? m.on === 'new' || m.on === 'retx'
          ? y(m.psn + 0.5)
          : m.on === 'nak' || m.on === 'rnr'
            ? y(m.psn)
            : y(m.psn + 1)
        : m.kind === 'cnp'
          ? y(m.psn + 1)
          : y(m.psn);
    const tip = markTitle(m, s);
    if (m.kind === 'ce') out.push(`<circle class="ce" data-frame="${m.frame}" cx="${fmt(mx)}" cy="${fmt(my)}" r="4">${tip}</circle>`);
    else if (m.kind === 'cnp') out.push(`<path class="cnp" data-frame="${m.frame}" d="M${fmt(mx - 5)},${fmt(my - 5)}h10l-5,9z">${tip}</path>`);
    else out.push(`<rect class="tmo" data-frame="${m.frame}" x="${fmt(mx - 4)}" y="${fmt(my - 4)}" width="8" height="8">${tip}</rect>`);
  }
  out.push('</g>');
  return out.join('\n');
}

const LEGEND: readonly [string, string][] = [
  ['request', '<line class="new" x1="0" y1="8" x2="0" y2="-2"/>'],
  ['retransmission', '<line class="retx" x1="0" y1="8" x2="0" y2="-2"/>'],
  ['ACK (line: highest acknowledged)', '<circle class="ack" cx="0" cy="3" r="2.5"/>'],
  ['READ response', '<circle class="resp" cx="0" cy="3" r="2.5"/>'],
  ['NAK', '<path class="nak" d="M-4,-1l8,8M4,-1l-8,8"/>'],
  ['RNR NAK', '<path class="rnr" d="M0,-2l5,9h-10z"/>'],
  ['ECN CE', '<circle class="ce" cx="0" cy="3" r="4"/>'],
  ['CNP', '<path class="cnp" d="M-5,-2h10l-5,9z"/>'],
  ['ACK timeout resend', '<rect class="tmo" x="-4" y="-1" width="8" height="8"/>'],
];

/** A legend entry's width: its glyph, a gap and its words at the legend's 11px. */
const legendWidth = (name: string): number => 30 + name.length * 6.5;

/** How the plot is drawn: whether the SVG carries the title (a page around it may show it instead). */
export interface PlotOptions {
  /** Draw the title in the SVG (default true). */
  header?: boolean;
}

/** The plot as a standalone SVG document (one panel per flow), the legend above the panels. */
export function plotSvg(series: readonly PsnSeries[], title = 'PSN over time', options: PlotOptions = {}): string {
  const rows: [string, string, number][][] = [[]];
  let lx = ML;
  for (const [name, glyph] of LEGEND) {
    if (lx + legendWidth(name) > W - MR && rows[rows.length - 1]!.length > 0) {
      rows.push([]);
      lx = ML;
    }
    rows[rows.length - 1]!.push([name, glyph, lx]);
    lx += legendWidth(name);
  }
  // Without the title the legend moves up into its place.
  const legendY = options.header === false ? 16 : 40;
  const panelsTop = legendY + 10 + (rows.length - 1) * LEGEND_ROW_PX;
  const h = panelsTop + 10 + Math.max(1, series.length) * PANEL_H;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="psn-plot" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="sans-serif">`);
  out.push(`<style>${STYLE}</style>`);
  out.push(`<rect width="${W}" height="${h}" fill="#fff"/>`);
  if (options.header !== false)
    out.push(`<text class="title" x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${xmlEscape(title)}</text>`);
  rows.forEach((row, i) => {
    for (const [name, glyph, gx] of row)
      out.push(
        `<g class="legend" transform="translate(${gx},${legendY + i * LEGEND_ROW_PX})">${glyph}<text class="lg" x="9" y="7">${xmlEscape(name)}</text></g>`,
      );
  });
  if (series.length === 0) out.push(`<text x="${W / 2}" y="${panelsTop + 70}" text-anchor="middle">no RoCE flow in the capture</text>`);
  series.forEach((s, i) => out.push(panel(s, panelsTop + 10 + i * PANEL_H)));
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
