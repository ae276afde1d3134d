/**
 * The conversation limit (`AnalyzerOptions.maxConversations`, `roce analyze --max-conversations`):
 * a capture whose PSNs jump at random starts a conversation at nearly every frame, each holding its
 * counts and figures to the end. The analysis ends at the frame that would start one past the
 * limit, says so in the result, the JSON document, the text report and the exit status, and
 * analyses the frames before it exactly as an analysis without a limit does.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildRoceV2Frame, type RoceV2Spec } from '../../packets/build';
import { PcapWriter, readCapture } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';
import { Rng } from '../../base/rng';
import { ProgrammingError } from '../../base/programming-error';
import { Analyzer, analyzeCapture, analyzeFile, type AnalysisResult } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { analyzeWithWorker } from '../../capture-engine/analyze-workers';
import { analyzeCommand } from '../../cli/analyze-command';
import { memoryOutput } from '../../cli/output';
import { UsageError } from '../../cli/args';

const ROOT = path.resolve(__dirname, '..', '..');
/** The compiled worker (`npm test` builds first). */
const SCRIPT = path.join(ROOT, 'dist', 'capture-engine', 'analyze-worker.js');
const EPOCH = 1_700_000_000_000_000_000n;
const A = { mac: 0x020000000001, ip: '198.18.0.1' };
const B = { mac: 0x020000000002, ip: '198.18.0.2' };

const frame = (bth: RoceV2Spec['bth'], more: Partial<RoceV2Spec> = {}): Uint8Array =>
  buildRoceV2Frame({ eth: { src: A.mac, dst: B.mac }, ip: { version: 4, src: A.ip, dst: B.ip }, bth, ...more });

/** `n` RC WRITEs to one QP, each at a PSN drawn at random: nearly every one starts a conversation (QPN reuse). */
function randomPsnCapture(n: number, seed: number): Uint8Array {
  const r = new Rng(seed);
  const w = new PcapWriter();
  const payload = new Uint8Array(32).fill(0x5a);
  for (let i = 0; i < n; i++) {
    const f = frame(
      { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: 0x12, psn: r.int(1 << 24) },
      { reth: { va: 0x1000n, rkey: 7, dmaLength: payload.length }, payload },
    );
    w.add(f, EPOCH + BigInt(i) * 1000n);
  }
  return w.toBytes();
}

/** `n` UD SENDs, each between its own pair of QPs: one conversation per frame. */
function udCapture(n: number): Uint8Array {
  const w = new PcapWriter();
  for (let i = 0; i < n; i++) {
    const f = frame({ opcode: Opcode.UD_SEND_ONLY, destQp: 0x100 + i, psn: i }, { deth: { qkey: 0x11111111, srcQp: 0x200 + i }, payload: new Uint8Array(8) });
    w.add(f, EPOCH + BigInt(i) * 1000n);
  }
  return w.toBytes();
}

/** The report of a result, but for what counts frames and their span (the refused frame is counted). */
function shown(r: AnalysisResult): unknown {
  const d = analysisDocument(r, 'x');
  return { ...d, stopped: null, frameCounts: null, durationNs: null, captureQuality: { ...d.captureQuality, framesCaptured: null } };
}

describe('the conversation limit', () => {
  const bytes = randomPsnCapture(400, 7);
  const unlimited = analyzeCapture(bytes);

  test('a random-PSN capture starts a conversation at nearly every frame', () => {
    expect(unlimited.conversations.length).toBeGreaterThan(350);
    expect(unlimited.stopped).toBeNull();
  });

  test.each([1, 2, 50, 200])('limit %i: ends at the frame that would start one more; the frames before it analysed as without a limit', (limit) => {
    const r = analyzeCapture(bytes, { maxConversations: limit });
    const next = unlimited.conversations[limit];
    expect(next).toBeDefined();
    expect(r.stopped).toEqual({ reason: 'conversationLimit', frame: next!.firstFrame, limit });
    expect(r.conversations.length).toBe(limit);
    // The refused frame is counted, and belongs to no conversation.
    expect(r.frames.total).toBe(next!.firstFrame);
    expect(r.frames.roce).toBe(next!.firstFrame);
    // The frames before it: what an analysis of only those frames finds.
    const cut = new PcapWriter();
    const all = analyzeCapture(bytes, { allFrames: true, maxConversations: limit });
    expect(all.frameResults.at(-1)).toMatchObject({ frame: next!.firstFrame, conversation: null });
    for (const rec of readCapture(bytes).records.slice(0, next!.firstFrame - 1)) cut.add(rec.data, rec.timestampNs);
    const before = analyzeCapture(cut.toBytes());
    expect(before.stopped).toBeNull();
    expect(shown(r)).toEqual(shown(before));
    expect(r.frames).toEqual({ ...before.frames, total: before.frames.total + 1, roce: before.frames.roce + 1, icrcChecked: before.frames.icrcChecked + 1 });
  });

  test('a limit the capture stays within changes nothing', () => {
    const r = analyzeCapture(bytes, { maxConversations: unlimited.conversations.length });
    expect(r.stopped).toBeNull();
    expect(analysisDocument(r, 'x')).toEqual(analysisDocument(unlimited, 'x'));
  });

  test('UD conversations count toward it', () => {
    const r = analyzeCapture(udCapture(30), { maxConversations: 10 });
    expect(r.conversations.map((c) => c.type)).toEqual(Array(10).fill('UD'));
    expect(r.stopped).toEqual({ reason: 'conversationLimit', frame: 11, limit: 10 });
  });

  test('a limit below 1 is a programming error', () => {
    expect(() => new Analyzer({ maxConversations: 0 })).toThrow(ProgrammingError);
    expect(() => new Analyzer({ maxConversations: Number.NaN })).toThrow(ProgrammingError);
  });

  describe('from a file', () => {
    let dir: string;
    let file: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-conv-limit-'));
      file = path.join(dir, 'random-psn.pcap');
      fs.writeFileSync(file, bytes);
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    test('one thread and two stop at the same frame with the same result', async () => {
      const one = analyzeFile(file, { maxConversations: 50 });
      const two = (await analyzeWithWorker(file, { maxConversations: 50 }, { rocePort: 4791, verifyIcrc: true, native: false }, SCRIPT)).result;
      expect(one.stopped).toEqual(analyzeCapture(bytes, { maxConversations: 50 }).stopped);
      expect(analysisDocument(two, 'x')).toEqual(analysisDocument(one, 'x'));
    });

    test('roce analyze --max-conversations: the report says where and why, exit status 1', async () => {
      const j = memoryOutput();
      expect(await analyzeCommand(['--json', '--threads', '1', '--max-conversations', '50', file], j)).toBe(1);
      const doc = JSON.parse(j.out) as { stopped: unknown; conversations: unknown[]; captureError: unknown };
      const frameNo = unlimited.conversations[50]!.firstFrame;
      expect(doc.stopped).toEqual({ reason: 'conversationLimit', frame: frameNo, limit: 50 });
      expect(doc.conversations).toHaveLength(50);
      expect(doc.captureError).toBeNull();
      expect(j.err).toContain(`stopped at frame ${frameNo}: it would start conversation 51, past the limit of 50 (--max-conversations)`);
      const t = memoryOutput();
      expect(await analyzeCommand(['--threads', '1', '--max-conversations', '50', file], t)).toBe(1);
      expect(t.out).toContain(`\nanalysis: stopped at frame ${frameNo}:`);
      const enough = memoryOutput();
      expect(await analyzeCommand(['--json', '--threads', '1', '--max-conversations', '1000', file], enough)).toBe(0);
      expect(JSON.parse(enough.out).stopped).toBeNull();
    });

    test.each(['0', '-1', 'x', '100000001'])('--max-conversations %s is a usage error', async (n) => {
      await expect(analyzeCommand(['--max-conversations', n, file], memoryOutput())).rejects.toThrow(UsageError);
    });
  });
});
