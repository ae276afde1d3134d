/**
 * Frames decoded on one thread and analysed on another (analysis/view-batch.ts): the analysis
 * made from the batches is the one `analyzeFile` makes, on every bundled capture (CM MADs sent
 * whole, TCP SYNs, frames without a BTH, cut frames, bad ICRCs) and on the shared public ones,
 * including when the string numbering starts over.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Analyzer, type AnalyzerOptions, analyzeFile } from '../../analysis/analyzer';
import { streamCaptureFile } from '../../analysis/capture-stream';
import { analysisDocument } from '../../analysis/document';
import { RECORD_SLOTS, RecordKind, VIEW_BATCH_RECORDS, ViewBatchReader, ViewBatchWriter, newViewBatch } from '../../analysis/view-batch';
import type { DecodeOptions } from '../../packets/decode';
import { ProgrammingError } from '../../base/programming-error';
import { noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';
import { repeatedCapture } from '../support/repeated-capture';
import type { ExactTime } from '../../base/exact-time';
import { buildRoceV1Frame, buildRoceV2Frame } from '../../packets/build';
import { PcapWriter } from '../../packets/pcap';

const CAPS = path.resolve(__dirname, '..', '..', 'captures');

/** The captures under `dir`, but not those the interop tests write into captures/interop (absent from a fresh clone). */
function capturesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== 'interop') out.push(...capturesUnder(p));
    else if (/\.(pcap|pcapng|cap)$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

interface Passage {
  kinds: Map<number, number>;
  batches: number;
  restarts: number;
}

/** Analyses `file` through batches made and read on this thread. */
function viaBatches(
  file: string,
  opts: AnalyzerOptions,
  decode: DecodeOptions,
  stringLimit?: number,
): { doc: ReturnType<typeof analysisDocument>; passage: Passage } {
  // The analyzer knows how the frames were decoded (whether ICRCs were checked, for the capture quality).
  const analyzer = new Analyzer({ ...opts, decode });
  const reader = new ViewBatchReader(analyzer, decode);
  const writer = new ViewBatchWriter(decode, stringLimit);
  const passage: Passage = { kinds: new Map(), batches: 0, restarts: 0 };
  const flush = (): void => {
    const b = writer.end();
    passage.batches++;
    if (b.restart) passage.restarts++;
    for (let i = 0; i < b.count; i++) {
      const k = b.slots[i * RECORD_SLOTS] as number;
      passage.kinds.set(k, (passage.kinds.get(k) ?? 0) + 1);
    }
    reader.read(b);
  };
  // Two batches go round, as they would between the threads.
  const pool = [newViewBatch(), newViewBatch()];
  writer.begin(pool[0]!);
  const records = streamCaptureFile(file);
  let t0: bigint | null = null;
  for (;;) {
    const next = records.next();
    if (next.done === true) {
      analyzer.captureError = next.value.error;
      break;
    }
    const r = next.value;
    let start: ExactTime | undefined;
    if (t0 === null) {
      t0 = r.timestampNs;
      start = { sec: r.sec, nsec: r.nsec, digits: r.timeDigits };
    }
    if (writer.full) {
      flush();
      writer.begin(pool[passage.batches % 2]!);
    }
    const d = r.data;
    writer.add(
      r.index,
      Number(r.timestampNs - t0),
      r.linkType,
      r.origLen,
      new DataView(d.buffer),
      new Uint8Array(d.buffer),
      d.byteOffset,
      d.byteOffset + d.byteLength,
      start,
    );
  }
  flush();
  return { doc: analysisDocument(analyzer.finish(), file), passage };
}

describe('view batches', () => {
  const bundled = capturesUnder(CAPS);

  test('every bundled capture: the same analysis as analyzeFile, every record kind used', () => {
    expect(bundled.length).toBeGreaterThanOrEqual(12);
    const kinds = new Set<number>();
    for (const file of bundled) {
      for (const decode of [{}, { verifyIcrc: false }] as DecodeOptions[]) {
        const opts: AnalyzerOptions = { allFrames: true };
        const { doc, passage } = viaBatches(file, opts, decode);
        expect(doc).toEqual(analysisDocument(analyzeFile(file, { ...opts, decode }), file));
        for (const k of passage.kinds.keys()) kinds.add(k);
      }
    }
    expect([...kinds].sort()).toEqual(Object.values(RecordKind).sort());
  });

  test('the diagnosis from batches is the one analyzeFile makes: RoCE version, ECN field and MACs travel with the view', () => {
    // A sends RoCE v1 with Not-ECT requests; B answers with RoCE v2 frames and a CNP (gidTypeMismatch, ecnOneEnd, retryExhausted).
    const eth = (from: 1 | 2) => ({ src: 0x020000000000 + from, dst: 0x020000000000 + (3 - from) });
    const v1 = buildRoceV1Frame({
      eth: eth(1),
      grh: { sgid: '::ffff:198.18.0.1', dgid: '::ffff:198.18.0.2' },
      bth: { opcode: 0x04, destQp: 0x12, psn: 100, ackReq: true },
      payload: new Uint8Array(64),
    });
    const v2 = (opcode: number, extra: object) =>
      buildRoceV2Frame({
        eth: eth(2),
        ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1', ecn: 2 },
        bth: { opcode, destQp: 0x11, psn: 5, ackReq: true },
        ...extra,
      });
    const w = new PcapWriter({ nanosecond: true });
    [v1, v2(0x04, { payload: new Uint8Array(64) }), v1, v2(0x81, { cnp: new Uint8Array(16) }), v1].forEach((f, i) =>
      w.add(f, 1_700_000_000_000_000_000n + BigInt(i) * 1000n),
    );
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-view-batch-'));
    try {
      const file = path.join(dir, 'doctor.pcap');
      fs.writeFileSync(file, w.toBytes());
      const direct = analysisDocument(analyzeFile(file), file);
      expect(direct.diagnosis?.map((d) => d.cause)).toEqual(['gidTypeMismatch', 'retryExhausted']);
      expect(viaBatches(file, {}, {}).doc).toEqual(direct);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the string numbering starting over changes nothing', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-view-batch-'));
    try {
      let restarts = 0;
      for (const name of ['rc-conversation.pcap', 'cm-exchanges.pcap', 'uc-ud-v6-vlan.pcap', 'rxe/rping-req-retries.pcap']) {
        // Long enough for several batches: the numbering starts over only as a batch begins.
        const file = repeatedCapture(path.join(CAPS, name), 3 * VIEW_BATCH_RECORDS, dir);
        const { doc, passage } = viaBatches(file, {}, {}, 2);
        restarts += passage.restarts;
        expect(doc).toEqual(analysisDocument(analyzeFile(file), file));
      }
      expect(restarts).toBeGreaterThanOrEqual(4);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a batch out of order, or a record of no known kind, is a programming error', () => {
    const writer = new ViewBatchWriter({});
    const reader = new ViewBatchReader(new Analyzer(), {});
    const b = newViewBatch();
    writer.begin(b);
    writer.end();
    b.seq = 1;
    expect(() => reader.read(b)).toThrow(ProgrammingError);
    b.seq = 0;
    b.count = 1;
    b.slots[0] = 99;
    expect(() => reader.read(b)).toThrow(/kind 99/);
    expect(() => writer.end()).toThrow(ProgrammingError);
  });

  testUnless(noPublicCaptures)('the shared public captures: the same analysis as analyzeFile', () => {
    const files = capturesUnder(publicCapturesDir() as string);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const { doc } = viaBatches(file, { allFrames: true }, {});
      expect(doc).toEqual(analysisDocument(analyzeFile(file, { allFrames: true }), file));
    }
  });
});
