/**
 * AnalyzerOptions.spool: messages, episodes and frames written to spools as they are found (as
 * JSON, or as their lines of the text report) give the same report as the lists kept in memory,
 * text for text, on every bundled capture (and the shared
 * public ones when present), with and without every frame. Frames whose flags change after they
 * are seen (outOfSequence taken back by a capture gap, or kept past the pending limit) go to the
 * spool with their final flags.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type AnalysisResult, type AnalyzerOptions, analyzeCapture, analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { TextList, writeJsonPieces } from '../../base/json-pieces';
import { documentDigits, episodeLine, frameLinesFromJson, messageLine, violationLine, writeTextReport } from '../../analysis/text-report';
import { repeatedCapture } from '../support/repeated-capture';
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
function bothWays(
  run: (opts: AnalyzerOptions) => AnalysisResult,
  allFrames: boolean,
): { spooled: string; kept: string; spooledText: string; keptText: string; counts: number[] } {
  const store = memoryStore();
  const make = (): SortedSpool => new SortedSpool(store, { runBytes: 512, readBytes: 100 });
  const as =
    <T>(s: SortedSpool, text: (x: T) => string) =>
    (key: number, x: T) =>
      s.push(key, text(x));
  const json = { messages: make(), episodes: make(), violations: make(), frames: make(), captureGaps: make() };
  const j = as<unknown>;
  const r = run({
    allFrames,
    spool: {
      messages: j(json.messages, JSON.stringify),
      episodes: j(json.episodes, JSON.stringify),
      violations: j(json.violations, JSON.stringify),
      frames: j(json.frames, JSON.stringify),
      captureGaps: j(json.captureGaps, JSON.stringify),
    },
  });
  for (const list of [r.messages, r.episodes, r.violations, r.frameResults, r.captureGaps]) expect(list).toEqual([]);
  const texts = (s: SortedSpool): TextList => new TextList(() => s.lines(), s.length);
  const doc = {
    ...analysisDocument(r, 'x'),
    messages: texts(json.messages),
    episodes: texts(json.episodes),
    violations: texts(json.violations),
    frames: texts(json.frames),
    captureGaps: texts(json.captureGaps),
  };
  const out: string[] = [];
  writeJsonPieces(doc, (t) => out.push(t));
  const keptDoc = analysisDocument(run({ allFrames }), 'x');
  // The text report, its lists spooled as their lines.
  const lines = { messages: make(), episodes: make(), violations: make(), frames: make() };
  const rt = run({
    allFrames,
    spool: {
      messages: as(lines.messages, messageLine),
      episodes: as(lines.episodes, episodeLine),
      violations: as(lines.violations, violationLine),
      frames: as(lines.frames, JSON.stringify),
    },
  });
  const all = { episodes: true, messages: true, frames: true };
  const text = (d: Parameters<typeof writeTextReport>[0]): string => {
    const parts: string[] = [];
    writeTextReport(d, all, (t) => parts.push(t));
    return parts.join('');
  };
  return {
    spooled: out.join(''),
    kept: JSON.stringify(keptDoc),
    spooledText: text({
      ...analysisDocument(rt, 'x'),
      messages: texts(lines.messages),
      episodes: texts(lines.episodes),
      violations: texts(lines.violations),
      // Flagged frames wait as JSON: their lines need the capture's decimals (cli/analyze-command.ts).
      frames: frameLinesFromJson(texts(lines.frames), documentDigits(analysisDocument(rt, 'x'))),
    }),
    keptText: text(keptDoc),
    counts: [json.messages.length, json.episodes.length, json.violations.length, json.frames.length, json.captureGaps.length],
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
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-spooled-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test.each([false, true])('every capture, allFrames %s: the same report', (allFrames) => {
    // Repeated, the conversation's PSNs come round again: rule violations as well.
    const files = [...captureFiles(CAPS), ...captureFiles(SHARED), repeatedCapture(path.join(CAPS, 'rc-conversation.pcap'), 50, dir)];
    expect(files.length).toBeGreaterThan(10);
    const totals = [0, 0, 0, 0, 0];
    let listed = 0;
    for (const f of files) {
      const { spooled, kept, spooledText, keptText, counts } = bothWays((o) => analyzeFile(f, o), allFrames);
      expect({ f, at: firstDifference(spooled, kept) }).toEqual({ f, at: null });
      expect({ f, at: firstDifference(spooledText, keptText) }).toEqual({ f, at: null });
      listed += counts.reduce((a, b) => a + b, 0);
      counts.forEach((n, i) => (totals[i]! += n));
    }
    expect(listed).toBeGreaterThan(200);
    // Every list was spooled somewhere: messages, episodes, violations, frames, capture gaps.
    for (const n of totals.slice(0, 4)) expect(n).toBeGreaterThan(0);
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
    const file = capture([
      req(0, Op.SEND_ONLY, 100, { len: 8 }),
      req(1, Op.SEND_ONLY, 102, { len: 8 }),
      ack(2, 101, Syn.NAK_SEQ),
      req(9, Op.SEND_ONLY, 101, { len: 8 }),
      req(10, Op.SEND_ONLY, 102, { len: 8 }),
      ack(11, 102),
    ]);
    const { spooled, kept, spooledText, keptText } = bothWays((o) => analyzeCapture(file, o), false);
    expect(spooled).toBe(kept);
    expect(spooledText).toBe(keptText);
    expect(spooled).toContain('"outOfSequence"');
  });
});
