/**
 * AnalyzerOptions.spool: messages, episodes and frames written to spools as they are found (as
 * JSON, or as their lines of the text report) give the same report as the lists kept in memory,
 * text for text, on every bundled capture (and the shared
 * public ones when present), with and without every frame. Frames whose flags change after they
 * are seen (outOfSequence taken back by a capture gap, or kept past the pending limit) go to the
 * spool with their final flags.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type AnalysisResult, type AnalyzerOptions, analyzeCapture, analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { JsonTextList, writeJsonPieces } from '../../base/json-pieces';
import { TextLines, episodeLine, frameLine, messageLine, writeTextReport } from '../../analysis/text-report';
import { SortedSpool } from '../../base/sorted-spool';
import { memoryStore } from '../support/memory-spool-store';
import { Op, Syn, ack, capture, req } from './frames';

const CAPS = path.resolve(__dirname, '..', '..', 'captures');
const SHARED = path.resolve(__dirname, '..', '..', '..', 'shared', 'captures', 'public');

function captureFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return captureFiles(p);
    return /\.(pcap|pcapng|cap)$/.test(e.name) ? [p] : [];
  });
}

/**
 * The report from an analysis with spools (small runs, so that most lists take several) and from
 * one without: the JSON text, and the text report listing everything.
 */
function bothWays(run: (opts: AnalyzerOptions) => AnalysisResult, allFrames: boolean): { spooled: string; kept: string; spooledText: string; keptText: string; counts: number[] } {
  const store = memoryStore();
  const make = (): SortedSpool => new SortedSpool(store, { runBytes: 512, readBytes: 100 });
  const as = <T>(s: SortedSpool, text: (x: T) => string) => (key: number, x: T) => s.push(key, text(x));
  const json = { messages: make(), episodes: make(), frames: make() };
  const r = run({ allFrames, spool: { messages: as(json.messages, JSON.stringify), episodes: as(json.episodes, JSON.stringify), frames: as(json.frames, JSON.stringify) } });
  expect(r.messages).toEqual([]);
  expect(r.episodes).toEqual([]);
  expect(r.frameResults).toEqual([]);
  const texts = (s: SortedSpool): JsonTextList => new JsonTextList(() => s.lines(), s.length);
  const doc = { ...analysisDocument(r, 'x'), messages: texts(json.messages), episodes: texts(json.episodes), frames: texts(json.frames) };
  const out: string[] = [];
  writeJsonPieces(doc, (t) => out.push(t));
  const keptDoc = analysisDocument(run({ allFrames }), 'x');
  // The text report, its lists spooled as their lines.
  const lines = { messages: make(), episodes: make(), frames: make() };
  const rt = run({ allFrames, spool: { messages: as(lines.messages, messageLine), episodes: as(lines.episodes, episodeLine), frames: as(lines.frames, frameLine) } });
  const asLines = (s: SortedSpool): TextLines => new TextLines(() => s.lines(), s.length);
  const all = { episodes: true, messages: true, frames: true };
  const text = (d: Parameters<typeof writeTextReport>[0]): string => {
    const parts: string[] = [];
    writeTextReport(d, all, (t) => parts.push(t));
    return parts.join('');
  };
  return {
    spooled: out.join(''),
    kept: JSON.stringify(keptDoc),
    spooledText: text({ ...analysisDocument(rt, 'x'), messages: asLines(lines.messages), episodes: asLines(lines.episodes), frames: asLines(lines.frames) }),
    keptText: text(keptDoc),
    counts: [json.messages.length, json.episodes.length, json.frames.length],
  };
}

/** Where two texts first differ, with some of each around it; null when they are the same. */
function firstDifference(a: string, b: string): { index: number; a: string; b: string } | null {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return { index: i, a: a.slice(Math.max(0, i - 150), i + 150), b: b.slice(Math.max(0, i - 150), i + 150) };
}

describe('spooled lists', () => {
  const files = [...captureFiles(CAPS), ...captureFiles(SHARED)];

  test.each([false, true])('every capture, allFrames %s: the same report', (allFrames) => {
    expect(files.length).toBeGreaterThan(10);
    let listed = 0;
    for (const f of files) {
      const { spooled, kept, spooledText, keptText, counts } = bothWays((o) => analyzeFile(f, o), allFrames);
      expect({ f, at: firstDifference(spooled, kept) }).toEqual({ f, at: null });
      expect({ f, at: firstDifference(spooledText, keptText) }).toEqual({ f, at: null });
      listed += counts.reduce((a, b) => a + b, 0);
    }
    expect(listed).toBeGreaterThan(200);
  });

  test('a frame whose outOfSequence a capture gap takes back: spooled with its final flags, or not at all', () => {
    const file = capture([req(0, Op.SEND_ONLY, 100, { len: 8 }), req(1, Op.SEND_ONLY, 102, { len: 8 }), req(2, Op.SEND_ONLY, 103, { len: 8 }), ack(3, 103)]);
    for (const allFrames of [false, true]) {
      const { spooled, kept, spooledText, keptText } = bothWays((o) => analyzeCapture(file, o), allFrames);
      expect(spooled).toBe(kept);
      expect(spooledText).toBe(keptText);
      const frames = (JSON.parse(spooled) as { frames: { frame: number; flags: string[] }[] }).frames;
      expect(frames.find((x) => x.frame === 2)?.flags).toEqual(['notCaptured']);
      expect(frames.find((x) => x.frame === 3)).toEqual(allFrames ? expect.objectContaining({ flags: [] }) : undefined);
    }
  });

  test('more frames pending than the analyzer holds, some taken back at the end: the same report', () => {
    // A hole at PSN 101, then 70 000 requests each flagged outOfSequence until an ACK covers the
    // hole; the oldest pending ones are let go (their flag stays) before the ACK takes the rest back.
    const steps = [req(0, Op.SEND_ONLY, 100, { len: 8 })];
    for (let i = 0; i < 70_000; i++) steps.push(req(1 + i, Op.SEND_ONLY, 102 + i, { len: 8 }));
    steps.push(ack(70_001, 102 + 69_999));
    const file = capture(steps);
    const { spooled, kept, spooledText, keptText } = bothWays((o) => analyzeCapture(file, o), false);
    expect(spooled).toBe(kept);
    expect(spooledText).toBe(keptText);
    const doc = JSON.parse(spooled) as { frames: unknown[]; summary: { flags: { outOfSequence: number } } };
    expect(doc.summary.flags.outOfSequence).toBeGreaterThan(0);
    expect(doc.frames.length).toBeGreaterThan(1000);
  });

  test('a NAKed hole stays flagged to the end', () => {
    const file = capture([req(0, Op.SEND_ONLY, 100, { len: 8 }), req(1, Op.SEND_ONLY, 102, { len: 8 }), ack(2, 101, Syn.NAK_SEQ), req(9, Op.SEND_ONLY, 101, { len: 8 }), req(10, Op.SEND_ONLY, 102, { len: 8 }), ack(11, 102)]);
    const { spooled, kept, spooledText, keptText } = bothWays((o) => analyzeCapture(file, o), false);
    expect(spooled).toBe(kept);
    expect(spooledText).toBe(keptText);
    expect(spooled).toContain('"outOfSequence"');
  });
});
