/**
 * Line charts over time for the congestion pictures: one panel per quantity (a flow's
 * rate, a switch queue), each with lines (solid or dashed) and markers at instants (CE marks as
 * ticks under the axis, CNPs as triangles). One self-contained, deterministic SVG; every line
 * point and marker carries a <title> with its value, which a browser shows on hover.
 */
import { fmt, xmlEscape } from './ladder-svg';
import { spanText } from '../text-report';
import { niceStep } from './plot-svg';

export interface ChartLine {
  name: string;
  /** [time µs, value]. */
  points: readonly (readonly [number, number])[];
  dashed?: boolean;
}

export interface ChartMarkers {
  name: string;
  /** Instants, µs. */
  timesUs: readonly number[];
  shape: 'tick' | 'triangle';
  /**
   * For instants that are capture times (whole nanoseconds): the capture's decimals, and the
   * tooltips print them with every digit the file has. Without it they are rounded to 0.1 µs.
   */
  digits?: number;
}

export interface ChartPanel {
  title: string;
  yLabel: string;
  lines: readonly ChartLine[];
  markers?: readonly ChartMarkers[];
}

const W = 960;
const PANEL_H = 300;
const ML = 80;
const MR = 160;
const MT = 36;
const MB = 46;
const COLORS = ['#1f5fbf', '#d62728', '#2e8b57', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'];
const MARK_COLORS = { tick: '#ff7f0e', triangle: '#d62728' } as const;
/** Markers drawn per panel at most (the rest are counted in the legend). */
const MAX_MARKERS = 4000;

const STYLE = `
.ax{stroke:#333;stroke-width:1}
.grid{stroke:#e4e4e4;stroke-width:1}
.tk{font:10px monospace;fill:#555}
.ttl{font:600 13px sans-serif;fill:#222}
.lg{font:11px sans-serif;fill:#333}
.ln{fill:none;stroke-width:1.6}
.pt{fill-opacity:0;stroke:none}
`;

function panelSvg(p: ChartPanel, top: number, t1: number): string {
  const out: string[] = [];
  const ph = PANEL_H - MT - MB;
  const pw = W - ML - MR;
  const yMax = Math.max(1e-9, ...p.lines.flatMap((l) => l.points.map(([, v]) => v))) * 1.05;
  const x = (t: number): number => ML + (t / Math.max(1e-9, t1)) * pw;
  const y = (v: number): number => top + MT + ph - (v / yMax) * ph;
  out.push(`<g class="panel" data-title="${xmlEscape(p.title)}">`);
  out.push(`<text class="ttl" x="${ML}" y="${top + 22}">${xmlEscape(p.title)}</text>`);
  const ts = niceStep(t1);
  for (let t = 0; t <= t1 + 1e-9; t += ts) {
    out.push(`<line class="grid" x1="${fmt(x(t))}" y1="${top + MT}" x2="${fmt(x(t))}" y2="${top + MT + ph}"/>`);
    out.push(`<text class="tk" x="${fmt(x(t))}" y="${top + MT + ph + 14}" text-anchor="middle">${fmt(t)} µs</text>`);
  }
  const vs = niceStep(yMax, 5);
  for (let v = 0; v <= yMax; v += vs) {
    out.push(`<line class="grid" x1="${ML}" y1="${fmt(y(v))}" x2="${ML + pw}" y2="${fmt(y(v))}"/>`);
    out.push(`<text class="tk" x="${ML - 6}" y="${fmt(y(v) + 3)}" text-anchor="end">${fmt(v)}</text>`);
  }
  out.push(`<line class="ax" x1="${ML}" y1="${top + MT}" x2="${ML}" y2="${top + MT + ph}"/>`);
  out.push(`<line class="ax" x1="${ML}" y1="${top + MT + ph}" x2="${ML + pw}" y2="${top + MT + ph}"/>`);
  out.push(`<text class="tk" transform="translate(${ML - 56},${top + MT + ph / 2}) rotate(-90)" text-anchor="middle">${xmlEscape(p.yLabel)}</text>`);
  let ly = top + MT + 4;
  p.lines.forEach((l, i) => {
    const color = COLORS[i % COLORS.length] as string;
    if (l.points.length > 0) {
      const d = l.points.map(([t, v], k) => `${k === 0 ? 'M' : 'L'}${fmt(x(t))},${fmt(y(v))}`).join('');
      out.push(`<path class="ln line" data-name="${xmlEscape(l.name)}" d="${d}" stroke="${color}"${l.dashed === true ? ' stroke-dasharray="5,3"' : ''}/>`);
      for (const [t, v] of l.points)
        out.push(`<circle class="pt" cx="${fmt(x(t))}" cy="${fmt(y(v))}" r="3"><title>${xmlEscape(l.name)}: ${fmt(v)} at ${fmt(t)} µs</title></circle>`);
    }
    out.push(
      `<line x1="${ML + pw + 12}" y1="${ly}" x2="${ML + pw + 32}" y2="${ly}" stroke="${color}" stroke-width="2"${l.dashed === true ? ' stroke-dasharray="5,3"' : ''}/>`,
    );
    out.push(`<text class="lg" x="${ML + pw + 36}" y="${ly + 4}">${xmlEscape(l.name)}</text>`);
    ly += 16;
  });
  for (const m of p.markers ?? []) {
    const color = MARK_COLORS[m.shape];
    const drawn = m.timesUs.slice(0, MAX_MARKERS);
    for (const t of drawn) {
      const xx = fmt(x(t));
      const tip = `<title>${xmlEscape(m.name)} at ${m.digits === undefined ? `${fmt(t)} µs` : spanText(Math.round(t * 1000), m.digits)}</title>`;
      if (m.shape === 'tick')
        out.push(
          `<line class="mark" data-kind="${xmlEscape(m.name)}" x1="${xx}" y1="${top + MT + ph}" x2="${xx}" y2="${top + MT + ph - 6}" stroke="${color}" stroke-width="1.5">${tip}</line>`,
        );
      else out.push(`<path class="mark" data-kind="${xmlEscape(m.name)}" d="M${xx},${top + MT + 2}l4,7h-8z" fill="${color}">${tip}</path>`);
    }
    const glyph =
      m.shape === 'tick'
        ? `<line x1="${ML + pw + 22}" y1="${ly - 4}" x2="${ML + pw + 22}" y2="${ly + 4}" stroke="${color}" stroke-width="2"/>`
        : `<path d="M${ML + pw + 22},${ly - 4}l4,7h-8z" fill="${color}"/>`;
    out.push(glyph);
    out.push(
      `<text class="lg" x="${ML + pw + 36}" y="${ly + 4}">${xmlEscape(m.name)} (${m.timesUs.length}${m.timesUs.length > drawn.length ? `, ${drawn.length} drawn` : ''})</text>`,
    );
    ly += 16;
  }
  out.push('</g>');
  return out.join('\n');
}

/** The panels stacked in one SVG document, on one time axis from 0 to the last instant. */
export function chartSvg(panels: readonly ChartPanel[], title: string): string {
  const t1 = Math.max(1, ...panels.flatMap((p) => [...p.lines.flatMap((l) => l.points.map(([t]) => t)), ...(p.markers ?? []).flatMap((m) => m.timesUs)]));
  const h = 40 + Math.max(1, panels.length) * PANEL_H;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="sans-serif">`);
  out.push(`<style>${STYLE}</style>`);
  out.push(`<rect width="${W}" height="${h}" fill="#fff"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${xmlEscape(title)}</text>`);
  if (panels.length === 0) out.push(`<text x="${W / 2}" y="120" text-anchor="middle">nothing to draw</text>`);
  panels.forEach((p, i) => out.push(panelSvg(p, 34 + i * PANEL_H, t1)));
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/** The same chart in a self-contained HTML page: the SVG inline and a readout of the point under the mouse. */
export function chartHtml(panels: readonly ChartPanel[], title: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${xmlEscape(title)}</title>
<style>body{margin:0;font:13px sans-serif}#readout{position:fixed;right:8px;top:8px;background:#fffbe6;border:1px solid #ccc;padding:4px 8px;min-width:12em}</style>
</head><body>
<div id="readout">hover a point or a marker</div>
${chartSvg(panels, title)}<script>
for (const el of document.querySelectorAll('circle.pt, .mark')) {
  el.addEventListener('mouseenter', () => { document.getElementById('readout').textContent = el.querySelector('title').textContent; });
}
</script>
</body></html>
`;
}
