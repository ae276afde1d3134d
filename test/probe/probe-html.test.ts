/**
 * `roce probe --html`: the page, parsed into elements, holds the text report's table and details
 * and, for each figure, a section with its ladder (an SVG drawn by the project's ladder renderer)
 * in which the event's frame is marked: the frame the event acted on, at the event's PSN, with the
 * event's type and line; a frame the event kept off the wire has no frame number and is crossed
 * out; the DUT's reaction is drawn. The page loads nothing from outside.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { psnAdd } from '../../base/psn';
import { decodeFrame } from '../../packets/decode';
import { BUNDLED_SCENARIOS, bundledScenario } from '../../apps/probe/bundled-scenarios';
import { runInMemory } from '../../apps/probe/memory-runner';
import { ProbeCapture } from '../../apps/probe/probe-capture';
import { probeHtml } from '../../apps/probe/probe-html';
import { figureRows } from '../../apps/probe/probe-report';
import { EventType, parseScenario } from '../../apps/probe/scenario';
import { xmlProblems } from '../render/well-formed';

interface El {
  name: string;
  attrs: Record<string, string>;
  children: El[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };
const unescapeXml = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ENTITIES[e]!);

/** The page's elements as a tree (the page is written well-formed: every element closed). */
function parse(html: string): El {
  const root: El = { name: '#root', attrs: {}, children: [], text: '' };
  const stack = [root];
  const re = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"]*")*)\s*(\/?)>|<!DOCTYPE[^>]*>|<!--[\s\S]*?-->/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(html)) !== null) {
    stack[stack.length - 1]!.text += unescapeXml(html.slice(last, m.index));
    last = re.lastIndex;
    if (m[2] === undefined) continue;
    if (m[1] === '/') {
      const top = stack.pop();
      if (top?.name !== m[2]) throw new Error(`</${m[2]}> closes <${top?.name}>`);
      stack[stack.length - 1]!.text += top.text;
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (m[3] ?? '').matchAll(/([\w:-]+)="([^"]*)"/g)) attrs[a[1]!] = unescapeXml(a[2]!);
    const el: El = { name: m[2], attrs, children: [], text: '' };
    stack[stack.length - 1]!.children.push(el);
    if (m[4] !== '/') stack.push(el);
  }
  expect(stack).toHaveLength(1);
  return root;
}

function all(el: El, pred: (e: El) => boolean): El[] {
  const out: El[] = [];
  const walk = (e: El): void => {
    if (pred(e)) out.push(e);
    e.children.forEach(walk);
  };
  walk(el);
  return out;
}
const hasClass = (e: El, c: string): boolean => (e.attrs.class ?? '').split(' ').includes(c);
/** A packet group's field from its tooltip (`PSN: 12`). */
const field = (g: El, name: string): string | undefined => new RegExp(`^${name}: (.*)$`, 'm').exec(g.attrs['data-tip'] ?? '')?.[1];

function report(name: string): { html: string; doc: El; result: ReturnType<typeof runInMemory>; start: number; scenario: ReturnType<typeof parseScenario> } {
  const scenario = parseScenario(bundledScenario(name)!.yaml);
  const capture = new ProbeCapture();
  const result = runInMemory(scenario, { onWire: capture.onWire });
  const html = probeHtml({ result, scenario, capture, source: `bundled ${name}` });
  const doc = parse(html);
  // The requester's first request opens the run: its PSN is relative PSN 0.
  const first = decodeFrame(capture.frames[0]!.frame, undefined, { verifyIcrc: false });
  if (!first.roce || first.bth === null) throw new Error('the capture does not open with a RoCE frame');
  return { html, doc, result, start: first.bth.psn, scenario };
}

test.each(BUNDLED_SCENARIOS.map((b) => b.name))('%s: the table, the details, and each figure with its ladder, the event marked', (name) => {
  const { html, doc, result, start, scenario } = report(name);
  expect(xmlProblems(html.replace(/^<!DOCTYPE html>\n/, ''))).toEqual([]);
  // Self-contained: nothing loaded from elsewhere (the SVG namespace is a name, not a fetch).
  expect(all(doc, (e) => e.name === 'script' || e.name === 'link' || e.name === 'img' || 'src' in e.attrs)).toEqual([]);
  expect(html.replaceAll('xmlns="http://www.w3.org/2000/svg"', '')).not.toMatch(/https?:/);

  // The table: the text report's rows, cell for cell.
  const rows = all(doc, (e) => e.name === 'tr').map((tr) => tr.children.map((c) => c.text));
  expect(rows).toEqual(figureRows(result));
  const details = all(doc, (e) => e.name === 'li').map((li) => li.text);
  expect(details).toEqual(result.figures.map((f) => `${f.kind} (line ${f.eventLine}): ${f.detail}`));

  const sections = all(doc, (e) => e.name === 'section' && hasClass(e, 'figure'));
  expect(sections).toHaveLength(result.figures.length);
  result.figures.forEach((f, i) => {
    const s = sections[i]!;
    expect(s.attrs).toMatchObject({
      id: `figure-${i + 1}`,
      'data-kind': f.kind,
      'data-qp': String(f.qp),
      'data-psn': String(f.psn),
      'data-event-line': String(f.eventLine),
    });
    expect(all(s, (e) => e.name === 'h2')[0]!.text).toContain(f.verdict);
    const svgs = all(s, (e) => e.name === 'svg');
    expect(svgs).toHaveLength(1);
    if (f.rate !== undefined) {
      // A rate figure draws the DUT's rate, not a ladder: a step line through every level, our CNPs as markers.
      expect(svgs[0]!.attrs.class).toBe('chart');
      const line = all(svgs[0]!, (e) => e.name === 'path' && e.attrs['data-name'] === "DUT's rate");
      expect(line).toHaveLength(1);
      expect((line[0]!.attrs.d ?? '').split(/[ML]/).filter((x) => x !== '')).toHaveLength(2 * f.rate.levels.length);
      expect(all(svgs[0]!, (e) => e.name === 'path' && e.attrs['data-kind'] === 'our CNPs')).toHaveLength(f.rate.cnpsNs.length);
      return;
    }
    const pkts = all(svgs[0]!, (e) => e.name === 'g' && hasClass(e, 'pkt'));
    const ev = scenario.events.find((x) => x.line === f.eventLine)!;
    const marked = pkts.filter((g) => hasClass(g, 'marked'));
    const mine = marked.filter((g) => g.attrs['data-mark'] === `${ev.type}, line ${ev.line}`);
    // The frame of the figure's event, at the event's PSN, marked with it.
    expect(mine.length).toBeGreaterThan(0);
    for (const g of mine) expect(Number(field(g, 'PSN'))).toBe(psnAdd(start, ev.psn));
    // Every marked frame names an event of the scenario.
    for (const g of marked) expect(scenario.events.map((x) => `${x.type}, line ${x.line}`)).toContain(g.attrs['data-mark']);
    // Its mark is drawn: the band and the note.
    for (const g of mine) {
      expect(all(g, (e) => e.name === 'rect' && hasClass(e, 'markband'))).toHaveLength(1);
      expect(all(g, (e) => e.name === 'text' && hasClass(e, 'marklbl'))[0]!.text).toBe(`${ev.type}, line ${ev.line}`);
    }
    const offWire = ev.type === EventType.SKIP || ev.type === EventType.WITHHOLD_ACK || ev.type === EventType.DROP_READ_RESPONSE;
    if (offWire) {
      // Not in the capture: no frame number, crossed out, said so.
      for (const g of mine) {
        expect(g.attrs['data-frame']).toBe('0');
        expect(all(g, (e) => e.name === 'text' && hasClass(e, 'fr'))).toEqual([]);
        expect(all(g, (e) => e.name === 'path' && hasClass(e, 'lost'))).toHaveLength(1);
        expect(all(g, (e) => e.name === 'text' && hasClass(e, 'lbl'))[0]!.text).toMatch(/\(not sent\)$/);
      }
    } else {
      for (const g of mine) expect(Number(g.attrs['data-frame'])).toBeGreaterThan(0);
    }
    const note = all(s, (e) => e.name === 'p' && hasClass(e, 'ladder-note'))[0]!.text;
    if (f.kind === 'cnpGeneration' || f.kind === 'cnpSpacing') {
      expect(note).toMatch(/the DUT's CNPs are not drawn/);
      return;
    }
    if (f.kind === 'ackDelay' && f.value === null) {
      // An ACK held within the timeout: the DUT rightly did nothing, and the ladder says so.
      expect(note).toMatch(/no reaction of the DUT to draw/);
      return;
    }
    // The DUT's reaction the note names is drawn, after the event.
    const reaction = /the DUT's reaction at frame (\d+)/.exec(note)?.[1];
    expect(reaction).toBeDefined();
    const frames = pkts.map((g) => g.attrs['data-frame']);
    expect(frames).toContain(reaction);
    // A held ACK leaves after the resend its hold provoked; every other reaction follows its event.
    if (f.kind === 'ackDelay') expect(frames.indexOf(reaction)).toBeLessThan(pkts.indexOf(mine[0]!));
    else expect(frames.indexOf(reaction)).toBeGreaterThan(pkts.indexOf(mine[0]!));
  });
});

test('rnr-wait: each rnrWait figure draws its own RNR NAK and the resend after it', () => {
  const { doc } = report('rnr-wait');
  const sections = all(doc, (e) => e.name === 'section' && hasClass(e, 'figure'));
  const naks = sections.map((s) => all(s, (e) => e.name === 'g' && hasClass(e, 'marked')).map((g) => Number(g.attrs['data-frame'])));
  expect(naks).toHaveLength(2);
  // The second figure's window starts past the first NAK: its NAK is a later frame.
  expect(Math.min(...naks[1]!)).toBeGreaterThan(Math.min(...naks[0]!));
});

test('roce probe --html FILE writes the page, --pcap FILE the capture and a line naming its capture point; an unwritable FILE is a one-line error, status 2', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-probe-html-'));
  try {
    const file = path.join(dir, 'nak.html');
    const o = memoryOutput();
    expect(await run(['probe', '--scenario', 'nak-retransmit', '--html', file], o)).toBe(0);
    expect(o.out).toMatch(/^nakRetransmit +0 +4 /m);
    const doc = parse(fs.readFileSync(file, 'utf8'));
    expect(all(doc, (e) => e.name === 'section')).toHaveLength(1);
    const withPcap = memoryOutput();
    const pcap = path.join(dir, 'nak.pcap');
    expect(await run(['probe', '--scenario', 'nak-retransmit', '--pcap', pcap], withPcap)).toBe(0);
    expect(withPcap.out).toMatch(
      new RegExp(
        `^capture: ${pcap.replace(/[.\\/]/g, '\\$&')}, 30 frames as the DUT's NIC sent and received them \\(times: the figures'\\); roce analyze --capture-point host:198\\.18\\.0\\.2 `,
        'm',
      ),
    );
    expect(fs.statSync(pcap).size).toBeGreaterThan(24);
    const bad = memoryOutput();
    expect(await run(['probe', '--scenario', 'nak-retransmit', '--html', dir], bad)).toBe(2);
    expect(bad.err).toBe(`roce probe: cannot write ${dir}: is a directory\n`);
    const badPcap = memoryOutput();
    expect(await run(['probe', '--scenario', 'nak-retransmit', '--pcap', path.join(dir, 'no', 'x.pcap')], badPcap)).toBe(2);
    expect(badPcap.err).toMatch(/^roce probe: cannot write .*x\.pcap: /);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
