/**
 * The pictures and the text report print capture times with every digit the file has: roce ladder's
 * time column, tooltips, gaps and RNR waits, roce plot's point and CE/CNP tooltips, roce analyze's
 * spans, completion times and latencies. Each time printed is read back to nanoseconds and held to
 * the frame's time as roce decode --json gives it (timeRelativeNs), for a nanosecond capture and a
 * microsecond one; the tooltip's time is roce decode's `-t rel` column, digit for digit.
 */
import * as path from 'node:path';
import { roce } from '../support/cli';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');
const FILES = [
  ['nanoseconds', path.join(CAPTURES, 'rc-conversation.pcap'), 9],
  ['microseconds', path.join(CAPTURES, 'rc-conversation-usec-be.pcap'), 6],
] as const;

/** A span as the report and the pictures print it ("1.412902 ms", "0.000 µs", "2.5 s") in nanoseconds, exactly. */
function nsOf(text: string): number {
  const m = /^(-?)(\d+)\.(\d+) (µs|ms|s)$/.exec(text.trim());
  if (m === null) throw new Error(`not a span: ${JSON.stringify(text)}`);
  const scale = { µs: 3, ms: 6, s: 9 }[m[4] as 'µs'];
  const frac = m[3] ?? '';
  expect(frac.length).toBeLessThanOrEqual(scale);
  const ns = Number(m[2]) * 10 ** scale + Number(frac.padEnd(scale, '0'));
  return m[1] === '-' ? -ns : ns;
}

const unescapeHtml = (s: string): string =>
  s
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

describe.each(FILES)('a capture in %s', (_name, file, digits) => {
  /** Frame number → [decode's relative time in ns, decode's `-t rel` text]. */
  const times = new Map<number, [number, string]>();
  beforeAll(async () => {
    const json = await roce('decode', '--json', file);
    const text = await roce('decode', file);
    expect(json.code).toBe(0);
    for (const line of json.out.trim().split('\n')) {
      const f = JSON.parse(line) as { frame: number; timeRelativeNs: number };
      times.set(f.frame, [f.timeRelativeNs, '']);
    }
    for (const line of text.out.trim().split('\n')) {
      const [n, rel] = line.trim().split(/\s+/);
      const t = times.get(Number(n));
      if (t !== undefined) t[1] = rel ?? '';
    }
    // The file's digits, and times that a rounding to the µs would change (for the ns capture).
    expect([...times.values()].every(([, rel]) => rel.split('.')[1]?.length === digits)).toBe(true);
    if (digits === 9) expect([...times.values()].some(([ns]) => ns % 1000 !== 0)).toBe(true);
  });

  test("roce ladder: each packet's time, on the left and in its tooltip, is the frame's", async () => {
    for (const conv of ['1', '2', '3']) {
      const r = await roce('ladder', '-o', '-', '--conversation', conv, file);
      expect(r.code).toBe(0);
      const packets = [
        ...r.out.matchAll(/<g class="pkt [^"]*" data-frame="(\d+)" data-tip="([^"]*)">\n<title>[^<]*<\/title>\n<text class="tm"[^>]*>([^<]*)<\/text>/g),
      ];
      expect(packets.length).toBeGreaterThan(0);
      for (const [, frame, tip, left] of packets) {
        const [ns, rel] = times.get(Number(frame)) ?? [NaN, ''];
        expect({ frame, left: nsOf(left ?? '') }).toEqual({ frame, left: ns });
        expect({ frame, tip: /\ntime: (\S+) s\n/.exec(unescapeHtml(tip ?? ''))?.[1] }).toEqual({ frame, tip: rel });
      }
    }
  });

  test('roce ladder: an idle gap and an RNR wait are the spans between their frames', async () => {
    const r = await roce('ladder', '-o', '-', '--conversation', '1', file);
    const frames = [...r.out.matchAll(/data-frame="(\d+)"/g)].map((m) => Number(m[1]));
    const at = frames.map((f) => times.get(f)?.[0] ?? NaN);
    const gaps = [...r.out.matchAll(/… ([^<]*) without packets …/g)].map((m) => nsOf(m[1] ?? ''));
    expect(gaps.length).toBeGreaterThan(0);
    const between = new Set(at.slice(1).map((t, i) => t - (at[i] ?? 0)));
    for (const g of gaps) expect(between.has(g)).toBe(true);
    const waits = [...r.out.matchAll(/RNR wait ([^<(]*?)(?: \(timer [^)]*\))?<\/text>/g)].map((m) => nsOf(m[1] ?? ''));
    expect(waits).toHaveLength(1);
    expect([...new Set(at.flatMap((a) => at.map((b) => b - a)))]).toContain(waits[0]);
  });

  test("roce plot: each point's tooltip time is its frame's", async () => {
    const r = await roce('plot', '-o', '-', file);
    expect(r.code).toBe(0);
    const tips = [...r.out.matchAll(/<title>frame (\d+), PSN \d+, ([^<]*)<\/title>/g)];
    expect(tips.length).toBeGreaterThan(40);
    for (const [, frame, t] of tips) expect({ frame, ns: nsOf(t ?? '') }).toEqual({ frame, ns: times.get(Number(frame))?.[0] });
  });

  test("roce plot --rate: the CE mark and the CNP are at their frames' times", async () => {
    const r = await roce('plot', '--rate', '-o', '-', file);
    expect(r.code).toBe(0);
    const marks = [...r.out.matchAll(/<title>(CE-marked request|CNP) at ([^<]*)<\/title>/g)].map((m) => nsOf(m[2] ?? ''));
    expect(marks).toHaveLength(2);
    const all = new Set([...times.values()].map(([ns]) => ns));
    for (const ns of marks) expect(all.has(ns)).toBe(true);
  });

  test("roce analyze: completion times in the text are the JSON's nanoseconds, every digit", async () => {
    const text = await roce('analyze', '-m', file);
    const json = JSON.parse((await roce('analyze', '--json', file)).out) as { messages: { firstFrame: number; completionNs: number | null }[] };
    const printed = [...text.out.matchAll(/^ {2}conv .* frames (\d+)-\d+ .*completion (\S+ (?:µs|ms|s))/gm)].map((m) => [Number(m[1]), nsOf(m[2] ?? '')]);
    expect(printed.length).toBeGreaterThan(10);
    const byFirst = new Map(json.messages.map((m) => [m.firstFrame, m.completionNs]));
    for (const [first, ns] of printed) expect({ first, ns }).toEqual({ first, ns: byFirst.get(first ?? 0) });
  });
});
