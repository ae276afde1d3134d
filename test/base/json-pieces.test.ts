/**
 * base/json-pieces.ts: the pieces, joined, are JSON.stringify's text, for the shapes JSON.stringify
 * treats specially (left-out properties, nulls in arrays, toJSON, nested arrays, non-objects), for
 * every bundled capture's analysis document, and no piece is much longer than the limit. Once told
 * to stop (the reader has gone), both it and the text report make nothing more.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TextList, writeJsonPieces } from '../../base/json-pieces';
import { ProgrammingError } from '../../base/programming-error';
import { analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { writeTextReport } from '../../analysis/text-report';

const CAPS = path.resolve(__dirname, '..', '..', 'captures');

function pieces(v: unknown): string[] {
  const out: string[] = [];
  writeJsonPieces(v, (t) => out.push(t));
  return out;
}

describe('writeJsonPieces', () => {
  test('joined, the pieces are JSON.stringify of the value', () => {
    const fn = (): number => 1;
    const values: unknown[] = [
      { a: 1, b: undefined, c: fn, d: [1, undefined, fn, null, 'x', [2, [3]]], e: { f: [] }, g: [], 10: 'ten', 2: 'two' },
      { t: new Date(0), when: { toJSON: () => 'custom' }, list: [new Date(1), { toJSON: () => undefined }] },
      [1, 'two', { three: [3] }, undefined],
      [],
      {},
      'text "quoted" \u2028',
      42,
      null,
      true,
      { nested: { deep: [{ x: [1, 2] }] }, big: Array.from({ length: 5000 }, (_, i) => ({ i, s: 'y'.repeat(i % 50) })) },
    ];
    for (const v of values) expect(pieces(v).join('')).toBe(JSON.stringify(v));
    expect(pieces(undefined)).toEqual([]);
  });

  test('every bundled capture: the analysis document, piece by piece, is the same text', () => {
    for (const f of fs.readdirSync(CAPS).filter((n) => /\.pcap(ng)?$/.test(n))) {
      const doc = analysisDocument(analyzeFile(path.join(CAPS, f), { allFrames: true }), f);
      expect(pieces(doc).join('')).toBe(JSON.stringify(doc));
    }
  });

  test('a long array goes out in pieces of about 1 MiB, none holding the whole', () => {
    const items = Array.from({ length: 40_000 }, (_, i) => ({ frame: i, flags: ['retransmission', 'nakSeqErr'], note: 'z'.repeat(80) }));
    const p = pieces({ head: 1, items, tail: 'end' });
    expect(p.length).toBeGreaterThan(3);
    for (const x of p) expect(x.length).toBeLessThan((1 << 20) + 1000);
    expect(p.join('')).toBe(JSON.stringify({ head: 1, items, tail: 'end' }));
  });

  test('a TextList is written as the array of its texts, at any depth, and only by writeJsonPieces', () => {
    const items = Array.from({ length: 30_000 }, (_, i) => ({ frame: i, note: 'q'.repeat(i % 40), u: 'é€' }));
    const asTexts = (xs: readonly unknown[]): TextList => new TextList(() => xs.map((x) => JSON.stringify(x)), xs.length);
    const cases: [unknown, unknown][] = [
      [asTexts(items), items],
      [
        { a: 1, list: asTexts(items), empty: asTexts([]), z: null },
        { a: 1, list: items, empty: [], z: null },
      ],
      [
        { event: 'report', report: { head: [1], inner: { list: asTexts(items.slice(0, 10)) }, tail: undefined } },
        { event: 'report', report: { head: [1], inner: { list: items.slice(0, 10) } } },
      ],
    ];
    for (const [withTexts, plain] of cases) expect(pieces(withTexts).join('')).toBe(JSON.stringify(plain));
    expect(() => JSON.stringify({ x: asTexts([1]) })).toThrow(ProgrammingError);
  });

  test('objects that are not plain go out as JSON.stringify writes them', () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    const v = { boxed: new Number(3), text: new String('s'), p: new Point(1, 2), nested: { m: new Map([[1, 2]]), bare: Object.create(null) as object } };
    expect(pieces(v).join('')).toBe(JSON.stringify(v));
  });

  test('stopped after the first piece: nothing more is written, and what was is the start of the text', () => {
    const items = Array.from({ length: 40_000 }, (_, i) => ({ frame: i, note: 'z'.repeat(80) }));
    const out: string[] = [];
    writeJsonPieces(
      { items },
      (t) => out.push(t),
      () => out.length > 0,
    );
    expect(out).toHaveLength(1);
    expect(JSON.stringify({ items }).startsWith(out[0] as string)).toBe(true);
  });
});

test('writeTextReport stopped after its first write: nothing more is made', () => {
  const doc = analysisDocument(analyzeFile(path.join(CAPS, 'rc-conversation.pcap'), { allFrames: true }), 'rc');
  // Listed many times over, the frames need several writes (4 096 lines each).
  const long = { ...doc, frames: Array.from({ length: Math.ceil((3 * 4096) / Math.max(1, doc.frames.length)) }, () => doc.frames).flat() };
  const all: string[] = [];
  writeTextReport(long, { frames: true }, (t) => all.push(t));
  expect(all.length).toBeGreaterThan(1);
  const first: string[] = [];
  writeTextReport(
    long,
    { frames: true },
    (t) => first.push(t),
    () => first.length > 0,
  );
  expect(first).toEqual([all[0]]);
});
