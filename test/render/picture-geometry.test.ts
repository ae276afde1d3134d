/**
 * The pictures read as drawn: the ladder's SVG parsed back to its arrows and texts, every text's
 * box (the renderer's own width estimate, textBox and TEXT_FONTS) held clear of every arrow line and
 * arrowhead; the title once; each arrow's frame number beside its start; a long conversation drawn
 * from its first episode, or the one asked for. The PSN plot's SVG parsed back to its plot areas and
 * markers: every marker inside its panel's axes, at the extremes of the data too; CE marks, CNPs and
 * timeout resends where roce decode and roce analyze put those frames. Both pictures write µs.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildTimeline, episodeStartFrame, LEAD_PACKETS } from '../../analysis/timeline';
import { buildPsnSeries } from '../../analysis/psn-series';
import { analyzeCapture, analyzeFile } from '../../analysis/analyzer';
import { HEAD_PX, ladderSvg, TEXT_FONTS, type TextBox, textBox } from '../../analysis/render/ladder-svg';
import { ladderHtml } from '../../analysis/render/ladder-html';
import { plotSvg } from '../../analysis/render/plot-svg';
import { plotHtml } from '../../analysis/render/plot-html';
import { lossyRunCapture } from '../support/make-analysis-examples';
import { roce } from '../support/cli';
import { xmlProblems } from './well-formed';
import { ack, capture, Op, req, Syn } from '../analysis/frames';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');
const FILES = [
  ...fs.readdirSync(CAPTURES).filter((f) => /\.pcap(ng)?$/.test(f)),
  ...fs
    .readdirSync(path.join(CAPTURES, 'rxe'))
    .filter((f) => f.endsWith('.pcap'))
    .map((f) => `rxe/${f}`),
].sort();
const LOSSY = lossyRunCapture();

type Seg = [number, number, number, number];
const unescapeHtml = (s: string): string =>
  s
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
const num = (attrs: string, name: string): number => Number(new RegExp(`\\b${name}="([-\\d.]+)"`).exec(attrs)?.[1] ?? NaN);

/** The arrows of a ladder: each line, and its head as the triangle's three sides (HEAD_PX long and wide, its tip at the line's end). */
function arrowSegments(svg: string): Seg[] {
  const out: Seg[] = [];
  for (const m of svg.matchAll(/<line class="arrow"([^>]*)\/>/g)) {
    const a = m[1]!;
    const [x1, y1, x2, y2] = [num(a, 'x1'), num(a, 'y1'), num(a, 'x2'), num(a, 'y2')];
    out.push([x1, y1, x2, y2]);
    const len = Math.hypot(x2 - x1, y2 - y1);
    const [ux, uy] = [(x2 - x1) / len, (y2 - y1) / len];
    const [bx, by] = [x2 - ux * HEAD_PX, y2 - uy * HEAD_PX];
    const [px, py] = [(-uy * HEAD_PX) / 2, (ux * HEAD_PX) / 2];
    out.push([x2, y2, bx + px, by + py], [x2, y2, bx - px, by - py], [bx + px, by + py, bx - px, by - py]);
  }
  return out;
}

/** Every text of a ladder with its box, estimated as the renderer estimates it. */
function textBoxes(svg: string): { cls: string; text: string; box: TextBox }[] {
  return [...svg.matchAll(/<text class="([a-z]+)"([^>]*)>([^<]*)<\/text>/g)].map((m) => {
    const cls = m[1]!;
    const font = TEXT_FONTS[cls];
    if (font === undefined) throw new Error(`a text of class ${cls} has no font in TEXT_FONTS`);
    const text = unescapeHtml(m[3]!);
    const anchor = (/text-anchor="(start|middle|end)"/.exec(m[2]!)?.[1] ?? 'start') as 'start' | 'middle' | 'end';
    return { cls, text, box: textBox(text, num(m[2]!, 'x'), num(m[2]!, 'y'), anchor, font.px, font.family) };
  });
}

/** Whether a segment meets a box (Liang–Barsky clipping). */
function meets([x1, y1, x2, y2]: Seg, b: TextBox): boolean {
  let t0 = 0;
  let t1 = 1;
  const dx = x2 - x1;
  const dy = y2 - y1;
  for (const [p, q] of [
    [-dx, x1 - b.x0],
    [dx, b.x1 - x1],
    [-dy, y1 - b.y0],
    [dy, b.y1 - y1],
  ] as const) {
    if (p === 0) {
      if (q < 0) return false;
    } else {
      const r = q / p;
      if (p < 0) t0 = Math.max(t0, r);
      else t1 = Math.min(t1, r);
    }
  }
  return t0 <= t1;
}

function overlaps(svg: string): string[] {
  const segs = arrowSegments(svg);
  expect(segs.length).toBeGreaterThan(0);
  const bad: string[] = [];
  for (const t of textBoxes(svg))
    for (const s of segs) if (meets(s, t.box)) bad.push(`${t.cls} "${t.text}" meets the arrow ${s.map((v) => v.toFixed(1)).join(',')}`);
  return bad;
}

describe('ladder: labels clear of arrows, title once, frame numbers beside the arrows', () => {
  test.each(FILES)('captures/%s: no text box meets an arrow line or head', (file) => {
    const t = buildTimeline(path.join(CAPTURES, file));
    expect(overlaps(ladderSvg(t))).toEqual([]);
  });

  test('a long simulated run with losses, around each of its first episodes: no text box meets an arrow', () => {
    const first = analyzeCapture(LOSSY);
    expect(first.episodes.length).toBeGreaterThan(5);
    for (const e of first.episodes.slice(0, 6)) expect(overlaps(ladderSvg(buildTimeline(LOSSY, { focus: { episode: e.id }, maxFrames: 120 })))).toEqual([]);
  });

  test('the geometry test catches a label drawn over its arrow', () => {
    const svg = ladderSvg(buildTimeline(path.join(CAPTURES, 'rc-conversation.pcap')));
    // The label's baseline moved onto its arrow's y: the test must see it.
    const moved = svg.replace(
      /(<line class="arrow" x1="\d+" y1="([\d.]+)"[^>]*\/>\n<text class="lbl" x="[\d.]+" y=")[\d.]+"/,
      (_m, head: string, y: string) => `${head}${Number(y) + 7}"`,
    );
    expect(moved).not.toBe(svg);
    expect(overlaps(moved).length).toBeGreaterThan(0);
  });

  test('each arrow has its frame number beside its start, and a time on the left', () => {
    const svg = ladderSvg(buildTimeline(path.join(CAPTURES, 'rc-conversation.pcap')));
    const pkts = [...svg.matchAll(/<g class="pkt [a-z]+" data-frame="(\d+)"[\s\S]*?<\/g>/g)];
    expect(pkts).toHaveLength(44);
    for (const [g, frame] of pkts) {
      const fr = /<text class="fr" x="([\d.]+)" y="([\d.]+)"[^>]*>(\d+)<\/text>/.exec(g)!;
      const line = /<line class="arrow" x1="([\d.]+)" y1="([\d.]+)"/.exec(g)!;
      expect(fr[3]).toBe(frame);
      expect(Math.abs(Number(fr[1]) - Number(line[1]))).toBeLessThanOrEqual(10);
      expect(Math.abs(Number(fr[2]) - Number(line[2]))).toBeLessThanOrEqual(5);
    }
  });

  test("the title appears once: in the SVG alone, and as the HTML page's heading only", () => {
    const t = buildTimeline(path.join(CAPTURES, 'rc-conversation.pcap'));
    const svg = ladderSvg(t, 'THE TITLE');
    expect(svg.match(/THE TITLE/g)).toHaveLength(1);
    const html = ladderHtml(t, 'THE TITLE');
    const body = html.slice(html.indexOf('<body>'));
    expect(body.match(/THE TITLE/g)).toHaveLength(1);
    expect(body).toContain('<h1>THE TITLE</h1>');
    expect(body).not.toContain('class="title"');
    expect(body).toContain('<p class="win">frames 1-44: the whole conversation (44 packets)</p>');
  });
});

describe('ladder: the window drawn', () => {
  const first = analyzeCapture(LOSSY);

  test('a conversation longer than the drawing starts a few packets before its first episode, and says so', () => {
    const t = buildTimeline(LOSSY, { maxFrames: 100 });
    const eps = first.episodes.filter((e) => e.conversation === t.conversation);
    const ep = [...eps].sort((x, y) => episodeStartFrame(x) - episodeStartFrame(y))[0]!;
    expect(t.window.reason).toBe('episode');
    expect(t.window.episode?.id).toBe(ep.id);
    expect(t.window.before).toBeGreaterThan(0);
    const frames = t.items.map((i) => i.frame);
    const at = frames.indexOf(episodeStartFrame(ep));
    expect(at).toBe(LEAD_PACKETS);
    expect(t.window.episodeIds).toEqual(eps.map((e) => e.id));
    const svg = ladderSvg(t);
    expect(svg).toContain(`frames ${frames[0]}-${frames[frames.length - 1]}: around episode #${ep.id} (`);
    expect(svg).toContain('the conversation&#39;s first loss-recovery episode');
    expect(svg).toContain('draw one with --episode N');
  });

  test('the episode asked for, in its own conversation', () => {
    const ep = first.episodes[first.episodes.length - 1]!;
    const t = buildTimeline(LOSSY, { focus: { episode: ep.id } });
    expect(t.conversation).toBe(ep.conversation);
    expect(t.items.map((i) => i.frame)).toContain(episodeStartFrame(ep));
    expect(t.window).toMatchObject({ reason: 'episode', asked: true });
    expect(ladderSvg(t)).toContain(`around episode #${ep.id} (`);
    expect(() => buildTimeline(LOSSY, { focus: { episode: first.episodes.length + 1 } })).toThrow(
      `no episode #${first.episodes.length + 1}: the capture has episodes #1 to #${first.episodes.length}`,
    );
    const other = first.conversations.find((c) => c.id !== ep.conversation)!.id;
    expect(() => buildTimeline(LOSSY, { conversation: other, focus: { episode: ep.id } })).toThrow(`episode #${ep.id} is in conversation #${ep.conversation}`);
  });

  test('an error frame before any episode: the drawing starts there', () => {
    const steps = [];
    for (let i = 0; i < 30; i++) steps.push(req(i * 10, Op.SEND_ONLY, 100 + i, { len: 8 }), ack(i * 10 + 5, 100 + i));
    steps.push(req(400, Op.SEND_ONLY, 130, { len: 8 }), ack(405, 130, Syn.NAK_ACC));
    for (let i = 0; i < 10; i++) steps.push(req(500 + i * 10, Op.SEND_ONLY, 131 + i, { len: 8 }), ack(505 + i * 10, 131 + i));
    const t = buildTimeline(capture(steps), { maxFrames: 20 });
    expect(t.window.reason).toBe('error');
    expect(t.window.error).toEqual({ frame: 62, flag: 'nakRemAccess' });
    expect(t.items[LEAD_PACKETS]?.frame).toBe(62);
    expect(ladderSvg(t)).toContain('from the conversation&#39;s first error frame, 62 (nakRemAccess)');
  });

  test('a frame range wins: drawn from its start', () => {
    const t = buildTimeline(LOSSY, { firstFrame: 300, maxFrames: 50 });
    expect(t.window.reason).toBe('start');
    expect(t.window.before).toBe(0);
    expect(t.items[0]!.frame).toBeGreaterThanOrEqual(300);
    expect(ladderSvg(t)).toContain('the first 50 packets of the frames or times asked for');
  });
});

describe('roce ladder --episode, --frames, --time-window', () => {
  let dir = '';
  let pcap = '';
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-pictures-'));
    pcap = path.join(dir, 'demo.pcap');
    const r = await roce('demo', '--loss', '2%', '--bytes', '1M', '--trace', '0', '--pcap', pcap);
    expect(r.code).toBe(0);
  }, 60_000);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test("a long demo capture: drawn from its busiest conversation's first episode; --episode N draws N", async () => {
    const json = JSON.parse((await roce('analyze', '--json', pcap)).out) as {
      conversations: { id: number; frames: number }[];
      episodes: { id: number; conversation: number }[];
    };
    const busiest = [...json.conversations].sort((x, y) => y.frames - x.frames || x.id - y.id)[0]!;
    expect(busiest.frames).toBeGreaterThan(400);
    const firstEp = json.episodes.filter((e) => e.conversation === busiest.id);
    const r = await roce('ladder', '-o', '-', pcap);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/<text class="win"[^>]*>frames \d+-\d+: around episode #\d+ \((NAK|RNR NAK|timeout|implied NAK), PSN \d+/);
    expect(firstEp.map((e) => `#${e.id}`)).toContain(/around episode (#\d+)/.exec(r.out)?.[1]);
    expect(r.err).toMatch(/^roce ladder: drew frames \d+-\d+: around episode/);
    const last = json.episodes[json.episodes.length - 1]!;
    const e = await roce('ladder', '-o', '-', '--episode', String(last.id), pcap);
    expect(e.code).toBe(0);
    expect(e.out).toContain(`around episode #${last.id} (`);
    expect(e.out).toContain('as asked');
    const bad = await roce('ladder', '-o', '-', '--episode', '99999', pcap);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('no episode #99999');
    const both = await roce('ladder', '-o', '-', '--episode', '1', '--from', '10', pcap);
    expect(both.code).toBe(2);
    expect(both.err).toContain('--episode picks the stretch to draw: not with --from or --to');
  }, 60_000);

  test('--frames and --time-window win over the episode', async () => {
    const f = await roce('ladder', '-o', '-', '--frames', '1000-', pcap);
    expect(f.code).toBe(0);
    const frames = [...f.out.matchAll(/data-frame="(\d+)"/g)].map((m) => Number(m[1]));
    expect(Math.min(...frames)).toBeGreaterThanOrEqual(1000);
    expect(f.out).toMatch(
      /frames \d+-\d+: (the first \d+ packets of the frames or times asked for|every packet of the conversation in the frames or times asked for)/,
    );
    const w = await roce('ladder', '-o', '-', '--time-window', '100us-', pcap);
    expect(w.code).toBe(0);
    expect(w.out).toMatch(/asked for/);
  }, 60_000);
});

/** The markers of each panel of a plot, with their boxes, and the panel's plot area from its axes. */
function plotPanels(svg: string): { area: TextBox; marks: { what: string; box: TextBox }[] }[] {
  return [...svg.matchAll(/<g class="panel"[\s\S]*?<\/g>/g)].map(([g]) => {
    const axes = [...g.matchAll(/<line class="ax"([^>]*)\/>/g)].map((m) => m[1]!);
    const v = axes[0]!;
    const hz = axes[1]!;
    const area = { x0: num(v, 'x1'), y0: num(v, 'y1'), x1: num(hz, 'x2'), y1: num(hz, 'y1') };
    const marks: { what: string; box: TextBox }[] = [];
    const pts = (xs: number[], ys: number[], pad: number): TextBox => ({
      x0: Math.min(...xs) - pad,
      x1: Math.max(...xs) + pad,
      y0: Math.min(...ys) - pad,
      y1: Math.max(...ys) + pad,
    });
    for (const m of g.matchAll(/<(line|circle|path|rect) class="(new|retx|ack|resp|nak|rnr|ce|cnp|tmo|ackl)"([^>]*?)\/?>/g)) {
      const [, tag, cls, a] = m as unknown as [string, string, string, string];
      const what = `${tag}.${cls}${a.slice(0, 60)}`;
      if (tag === 'line') marks.push({ what, box: pts([num(a, 'x1'), num(a, 'x2')], [num(a, 'y1'), num(a, 'y2')], 1) });
      else if (tag === 'circle') marks.push({ what, box: pts([num(a, 'cx')], [num(a, 'cy')], num(a, 'r') + 1) });
      else if (tag === 'rect')
        marks.push({ what, box: { x0: num(a, 'x') - 1, y0: num(a, 'y') - 1, x1: num(a, 'x') + num(a, 'width') + 1, y1: num(a, 'y') + num(a, 'height') + 1 } });
      else {
        // Path data: M absolute, then l, h, v relative, H, V absolute, z.
        const d = /\bd="([^"]*)"/.exec(a)![1]!;
        const xs: number[] = [];
        const ys: number[] = [];
        let x = 0;
        let y = 0;
        for (const c of d.matchAll(/([MLlHhVvz])([-\d.,\s]*)/g)) {
          const n = (c[2] ?? '')
            .split(/[\s,]+/)
            .filter((s) => s !== '')
            .map(Number);
          switch (c[1]) {
            case 'M':
            case 'L':
              [x, y] = [n[0]!, n[1]!];
              break;
            case 'l':
              [x, y] = [x + n[0]!, y + n[1]!];
              break;
            case 'h':
              x += n[0]!;
              break;
            case 'v':
              y += n[0]!;
              break;
            case 'H':
              x = n[0]!;
              break;
            case 'V':
              y = n[0]!;
              break;
          }
          xs.push(x);
          ys.push(y);
        }
        marks.push({ what, box: pts(xs, ys, 1.2) });
      }
    }
    return { area, marks };
  });
}

function outside(svg: string): string[] {
  const panels = plotPanels(svg);
  const bad: string[] = [];
  for (const p of panels)
    for (const m of p.marks) if (m.box.x0 < p.area.x0 || m.box.x1 > p.area.x1 || m.box.y0 < p.area.y0 || m.box.y1 > p.area.y1) bad.push(m.what);
  return bad;
}

describe('PSN plot: markers inside the axes, CE, CNP and timeout marks, HTML', () => {
  test.each(FILES)("captures/%s: every marker inside its panel's plot area", (file) => {
    const svg = plotSvg(buildPsnSeries(path.join(CAPTURES, file)).series);
    expect(xmlProblems(svg)).toEqual([]);
    for (const p of plotPanels(svg)) expect(p.marks.length).toBeGreaterThan(0);
    expect(outside(svg)).toEqual([]);
  });

  test('data at the extremes: the first request at the lowest PSN, a NAK last at the lowest PSN, an RNR NAK at the highest', () => {
    const steps = [
      req(0, Op.SEND_ONLY, 10, { len: 8, ecnCe: true }),
      req(1, Op.SEND_ONLY, 11, { len: 8 }),
      req(2, Op.SEND_ONLY, 12, { len: 8 }),
      ack(3, 12, Syn.rnr(1)),
      ack(4, 10, Syn.NAK_SEQ),
    ];
    const { series } = buildPsnSeries(capture(steps));
    expect(series[0]!.points.map((p) => p.kind)).toEqual(['new', 'new', 'new', 'rnr', 'nak']);
    const svg = plotSvg(series);
    expect(outside(svg)).toEqual([]);
    // The check sees a marker drawn on the axis.
    expect(outside(svg.replace(/<path class="nak" d="M[\d.]+,/, '<path class="nak" d="M70,'))).toHaveLength(1);
  });

  test('CE marks on the frames roce decode reads ECN CE in, CNPs on its CNP frames', async () => {
    const file = path.join(CAPTURES, 'rc-conversation.pcap');
    const json = (await roce('decode', '--json', file)).out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { frame: number; ecn?: number; opcodeName?: string });
    const ceFrames = json.filter((f) => f.ecn === 3).map((f) => f.frame);
    const cnpFrames = json.filter((f) => f.opcodeName === 'CNP').map((f) => f.frame);
    expect(ceFrames.length).toBeGreaterThan(0);
    expect(cnpFrames.length).toBeGreaterThan(0);
    const svg = plotSvg(buildPsnSeries(file).series);
    expect([...svg.matchAll(/<circle class="ce" data-frame="(\d+)"/g)].map((m) => Number(m[1]))).toEqual(ceFrames);
    expect([...svg.matchAll(/<path class="cnp" data-frame="(\d+)"/g)].map((m) => Number(m[1]))).toEqual(cnpFrames);
    for (const k of ['ECN CE', 'CNP', 'ACK timeout resend']) expect(svg).toContain(`<text class="lg" x="9" y="7">${k}</text>`);
  });

  test('timeout resends where roce analyze finds its timeout episodes', () => {
    const withTimeouts = FILES.map((f) => path.join(CAPTURES, f)).filter((f) => analyzeFile(f).episodes.some((e) => e.trigger === 'timeout'));
    expect(withTimeouts.length).toBeGreaterThan(0);
    for (const f of withTimeouts) {
      const want = analyzeFile(f)
        .episodes.filter((e) => e.trigger === 'timeout')
        .map((e) => e.firstRetransmitFrame)
        .sort((x, y) => x - y);
      const svg = plotSvg(buildPsnSeries(f).series);
      expect([...svg.matchAll(/<rect class="tmo" data-frame="(\d+)"/g)].map((m) => Number(m[1])).sort((x, y) => x - y)).toEqual(want);
    }
  });

  test('as HTML: the SVG inline, the title once, a readout', async () => {
    const { series } = buildPsnSeries(path.join(CAPTURES, 'rc-conversation.pcap'));
    const html = plotHtml(series, 'THE TITLE');
    expect(html).toMatch(/^<!DOCTYPE html>/);
    const body = html.slice(html.indexOf('<body>'));
    expect(body.match(/THE TITLE/g)).toHaveLength(1);
    const svg = /<svg[\s\S]*<\/svg>\n/.exec(html)![0];
    expect(xmlProblems(svg)).toEqual([]);
    expect(svg).toBe(plotSvg(series, 'THE TITLE', { header: false }));
    expect(html.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, '')).not.toMatch(/https?:|src=|<link/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-plot-'));
    try {
      const out = path.join(dir, 'x.html');
      const r = await roce('plot', '-o', out, path.join(CAPTURES, 'rc-conversation.pcap'));
      expect(r.code).toBe(0);
      expect(fs.readFileSync(out, 'utf8')).toBe(plotHtml(series, 'PSN over time: rc-conversation.pcap'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('units: µs, never us', () => {
  test("the ladder, the plot and roce analyze's text write µs", async () => {
    const file = path.join(CAPTURES, 'rc-conversation.pcap');
    const texts = [
      ladderSvg(buildTimeline(file)),
      ladderHtml(buildTimeline(file)),
      plotSvg(buildPsnSeries(file).series),
      (await roce('analyze', '-m', file)).out,
      (await roce('ladder', '-o', '-', '--max', '5', file)).err,
    ];
    for (const t of texts) expect(t.match(/\d us\b/g)).toBeNull();
    expect(texts.slice(0, 4).every((t) => t.includes(' µs'))).toBe(true);
  });
});
