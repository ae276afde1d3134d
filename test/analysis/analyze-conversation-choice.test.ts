/**
 * `roce analyze --conversation N` and `--qpn QPN[,QPN]`: the analysis takes every frame and the
 * report lists only the conversations chosen. A conversation keeps its number, its episodes theirs,
 * and its messages, episodes, violations, flagged frames and flag counts are the ones the analysis
 * of the whole capture gives it, whichever filter chose it; --fail-on judges only them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { roce } from '../support/cli';
import { testUnless } from '../support/skip';
import { Op, Syn, ack, capture, req, type Step } from './frames';
import type { AnalysisDocument } from '../../analysis/document';
import { FLAG_NAMES } from '../../analysis/flags';

const ROOT = path.resolve(__dirname, '..', '..');
const BUILT = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';

/** Conversation 2's QPs: requester 0x21 at 198.18.0.1, responder 0x22 at 198.18.0.2 (conversation 1: 0x11 and 0x12). */
const QP_C = 0x21;
const QP_D = 0x22;
const req2 = (us: number, psn: number): Step => ({
  us,
  from: 'a',
  t: { bth: { opcode: Op.SEND_ONLY, destQp: QP_D, psn, ackReq: true }, payload: new Uint8Array(8).fill(psn & 0xff) },
});
const ack2 = (us: number, psn: number, syndrome: number = Syn.ACK): Step => ({
  us,
  from: 'b',
  t: { bth: { opcode: Op.ACK, destQp: QP_C, psn }, aeth: { syndrome, msn: 0 } },
});
const send1 = (us: number, psn: number): Step => req(us, Op.SEND_ONLY, psn, { len: 8 });

/**
 * Two RC conversations interleaved. #1 (QP 0x11 → 0x12): after the NAK the requester resends from
 * the PSN after the NAK'd one, a retransmitFromNakPsn violation, then goes back by timeout.
 * #2 (QP 0x21 → 0x22): a clean NAK recovery (flags, an episode, no violation).
 */
function twoConversations(): Uint8Array {
  const steps: Step[] = [
    send1(0, 10),
    req2(0.5, 500),
    send1(1, 11),
    req2(1.5, 501),
    send1(2, 12),
    req2(2.5, 502),
    ack(5, 10, Syn.NAK_SEQ),
    ack2(5.5, 500, Syn.NAK_SEQ),
    send1(7, 11),
    req2(7.5, 500),
    send1(8, 12),
    req2(8.5, 501),
    req2(9.5, 502),
    ack2(12.5, 502),
    send1(20000, 10),
    send1(20001, 11),
    send1(20002, 12),
    ack(20012, 12),
  ];
  return capture(steps);
}

let dir: string;
let file: string;
let whole: AnalysisDocument;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-conv-choice-'));
  file = path.join(dir, 'two.pcap');
  fs.writeFileSync(file, twoConversations());
  const r = await roce('analyze', '--json', '--all-frames', file);
  expect(r.code).toBe(0);
  whole = JSON.parse(r.out) as AnalysisDocument;
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function analyzeJson(...argv: string[]): Promise<AnalysisDocument> {
  const r = await roce('analyze', '--json', '--all-frames', ...argv, file);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as AnalysisDocument;
}

/** What the whole capture's analysis says of conversations `ids`. */
function wholeOf(ids: readonly number[]) {
  const has = (c: number | null): boolean => c !== null && ids.includes(c);
  const flags = Object.fromEntries(FLAG_NAMES.map((n) => [n, whole.frames.filter((f) => has(f.conversation) && f.flags.includes(n)).length]));
  return {
    conversations: whole.conversations.filter((c) => has(c.id)),
    messages: whole.messages.filter((m) => has(m.conversation)),
    episodes: whole.episodes.filter((e) => has(e.conversation)),
    violations: whole.violations.filter((v) => has(v.conversation)),
    frames: whole.frames.filter((f) => has(f.conversation)),
    flags,
  };
}

test('the capture has what the test needs: two conversations, a violation in #1 only, an episode in each', () => {
  expect(whole.conversations.map((c) => [c.id, c.a.qpn, c.b.qpn])).toEqual([
    [1, 0x11, 0x12],
    [2, QP_C, QP_D],
  ]);
  expect(whole.violations.map((v) => v.conversation)).toEqual([1]);
  expect(new Set(whole.episodes.map((e) => e.conversation))).toEqual(new Set([1, 2]));
});

test.each([
  ['--conversation 1', ['--conversation', '1'], [1]],
  ['--conversation 2', ['--conversation', '2'], [2]],
  ['--qpn 0x12 (the responder of #1)', ['--qpn', '0x12'], [1]],
  ['--qpn 0x21 (the requester of #2)', ['--qpn', '0x21'], [2]],
  ['--qpn 0x11,0x22', ['--qpn', '0x11,0x22'], [1, 2]],
  ['--conversation 2 --qpn 0x22', ['--conversation', '2', '--qpn', '0x22'], [2]],
])('%s: the report holds those conversations with the findings the whole analysis gives them', async (_name, argv, ids) => {
  const d = await analyzeJson(...argv);
  const w = wholeOf(ids);
  expect(d.conversations).toEqual(w.conversations);
  expect(d.messages).toEqual(w.messages);
  expect(d.episodes).toEqual(w.episodes);
  expect(d.violations).toEqual(w.violations);
  expect(d.frames).toEqual(w.frames);
  expect(d.summary.flags).toEqual(w.flags);
  expect(d.summary.conversations).toBe(ids.length);
  expect(d.summary.messages).toBe(w.messages.length);
  expect(d.summary.violations).toBe(w.violations.length);
  expect(Object.values(d.summary.episodes).reduce((a, b) => a + b, 0)).toBe(w.episodes.length);
  // The capture's own counts are the capture's.
  expect(d.frameCounts).toEqual(whole.frameCounts);
  expect(d.captureQuality).toEqual(whole.captureQuality);
});

test('--fail-on judges only the conversations chosen', async () => {
  expect((await roce('analyze', '--fail-on', 'retransmitFromNakPsn', file)).code).toBe(1);
  expect((await roce('analyze', '--fail-on', 'retransmitFromNakPsn', '--conversation', '1', file)).code).toBe(1);
  const two = await roce('analyze', '--fail-on', 'retransmitFromNakPsn', '--conversation', '2', file);
  expect(two).toMatchObject({ code: 0, err: '' });
  expect((await roce('analyze', '--fail-on', 'retransmitFromNakPsn', '--qpn', QP_D.toString(), file)).code).toBe(0);
});

test('the text report lists the conversation chosen under its own number, and its episodes under theirs', async () => {
  const r = await roce('analyze', '-v', '--conversation', '2', file);
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/^ {2}#2 RC 198\.18\.0\.1 QP 0x000021/m);
  expect(r.out).not.toMatch(/^ {2}#1 RC/m);
  const ids = whole.episodes.filter((e) => e.conversation === 2).map((e) => e.id);
  for (const id of ids) expect(r.out).toMatch(new RegExp(`#${id}\\b`));
});

test("--follow --conversation: only the chosen conversation's findings as they come", async () => {
  const r = await roce('analyze', '--follow', '--json', '--conversation', '2', file);
  expect(r.code).toBe(0);
  const events = r.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { event: string; episode?: { conversation: number }; violation?: unknown });
  expect(events.filter((e) => e.event === 'violation')).toEqual([]);
  expect(events.filter((e) => e.event === 'episode').map((e) => e.episode?.conversation)).toEqual(
    whole.episodes.filter((e) => e.conversation === 2).map(() => 2),
  );
});

test.each([
  [['--conversation', '3'], 'no conversation #3 (the capture has 2)'],
  [['--qpn', '0x99'], 'no conversation with QP 0x99 at either end (the capture has 2)'],
  [['--conversation', '1', '--qpn', '0x21'], 'no conversation #1 with QP 0x21 at either end (the capture has 2)'],
])('%j, which no conversation matches: exit 2, one line, nothing on stdout', async (argv, message) => {
  for (const json of [[], ['--json']]) {
    const r = await roce('analyze', ...json, ...argv, file);
    expect(r).toEqual({ code: 2, out: '', err: `roce analyze: ${file}: ${message}\n` });
  }
});

test('--follow --qpn is a usage error (--qpn reads the capture before the analysis)', async () => {
  const r = await roce('analyze', '--follow', '--qpn', '0x11', file);
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err).toMatch(/^roce analyze: --qpn .* --conversation N \(roce analyze -h\)\n$/);
});

// Standard input: --qpn reads it whole first; the long lists go through the temporary file.
testUnless(BUILT)(
  'from standard input, --qpn gives the report it gives for the file',
  () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'roce.js'), 'analyze', '--json', '--all-frames', '--qpn', '0x22', '-'], {
      input: fs.readFileSync(file),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const d = JSON.parse(r.stdout) as AnalysisDocument;
    const w = wholeOf([2]);
    expect(d.conversations).toEqual(w.conversations);
    expect(d.episodes).toEqual(w.episodes);
    expect(d.frames).toEqual(w.frames);
    expect(d.summary.flags).toEqual(w.flags);
  },
  30_000,
);
