/**
 * `roce analyze`, `roce ladder` and `roce plot` as commands: the JSON
 * document's stable keys, the text summary, the streaming reader against the
 * in-memory one, and usage errors.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { memoryOutput } from '../../cli/output';
import { analyzeCommand } from '../../cli/analyze-command';
import { ladderCommand } from '../../cli/ladder-command';
import { plotCommand } from '../../cli/plot-command';
import { UsageError } from '../../cli/args';
import { analyzeCapture, analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';

const CAPS = path.resolve(__dirname, '..', '..', 'captures');
const RC = path.join(CAPS, 'rc-conversation.pcap');

describe('roce analyze', () => {
  test('--json: one document with the documented top-level keys', async () => {
    const o = memoryOutput();
    expect(await analyzeCommand(['--json', RC], o)).toBe(0);
    const doc = JSON.parse(o.out) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual([
      'format',
      'version',
      'file',
      'startTime',
      'durationNs',
      'frameCounts',
      'summary',
      'conversations',
      'messages',
      'episodes',
      'violations',
      'rxeBehaviours',
      'frames',
      'captureError',
      'stopped',
      'capturePoint',
      'rulesNotChecked',
      'captureQuality',
      'captureGaps',
      'cmConnections',
    ]);
    expect(doc).toMatchObject({ capturePoint: 'unknown', rulesNotChecked: [] });
    const conv = (doc['conversations'] as Record<string, unknown>[])[0]!;
    expect(Object.keys(conv)).toEqual([
      'id',
      'type',
      'a',
      'b',
      'frames',
      'firstFrame',
      'lastFrame',
      'startNs',
      'durationNs',
      'cnps',
      'closedBy',
      'cmEstablished',
      'cmConnection',
      'cmEndedFrame',
      'flows',
      'congestion',
    ]);
    const flow = (conv['flows'] as Record<string, unknown>[])[0]!;
    for (const k of ['goodput', 'outstanding', 'ackCoalescingRatio', 'messageSizes', 'completion', 'readLatency', 'atomicLatency'])
      expect(flow).toHaveProperty(k);
    const ep = (doc['episodes'] as Record<string, unknown>[])[1]!;
    expect(ep).toMatchObject({
      trigger: 'nak',
      gapPsn: 3086869,
      triggerFrame: 39,
      firstRetransmitFrame: 40,
      resentPackets: 2,
      resentFirstPsn: 3086869,
      resentLastPsn: 3086870,
    });
    const frames = doc['frames'] as { frame: number; flags: string[] }[];
    expect(frames.find((f) => f.frame === 15)!.flags).toEqual(['cnp']);
  });

  test('text: summary first, details on request', async () => {
    const o = memoryOutput();
    expect(await analyzeCommand([RC], o)).toBe(0);
    expect(o.out.split('\n')[1]).toContain('3 conversation(s), 18 message(s), 3 retransmission(s), 2 loss-recovery episode(s)');
    expect(o.out).not.toContain('loss-recovery episodes:');
    const v = memoryOutput();
    await analyzeCommand(['-v', RC], v);
    expect(v.out).toContain('loss-recovery episodes:');
    expect(v.out).toContain('messages:');
  });

  test('the streaming reader gives the same analysis as the in-memory one, for pcap and pcapng', () => {
    for (const f of ['rc-conversation.pcap', 'rc-conversation.pcapng', 'rc-conversation-usec-be.pcap', 'uc-ud-v6-vlan.pcap', 'malformed.pcap']) {
      const file = path.join(CAPS, f);
      const a = analysisDocument(analyzeFile(file, { allFrames: true }), f);
      const b = analysisDocument(analyzeCapture(new Uint8Array(fs.readFileSync(file)), { allFrames: true }), f);
      expect(a).toEqual(b);
    }
  });

  test('keeping only some lists changes no count: the summary of every bundled capture is the same', () => {
    const files = fs.readdirSync(CAPS).filter((f) => /\.pcap(ng)?$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const f of files) {
      const file = path.join(CAPS, f);
      const full = analysisDocument(analyzeFile(file), f);
      // What roce analyze keeps for its text summary.
      const lean = analysisDocument(analyzeFile(file, { keep: { violations: true, cmConnections: true } }), f);
      expect({ ...lean, messages: full.messages, episodes: full.episodes, frames: full.frames, captureGaps: full.captureGaps }).toEqual(full);
      expect(lean.violations).toEqual(full.violations);
      if (full.summary.messages > 0) expect(lean.messages).toEqual([]);
      if (full.frames.length > 0) expect(lean.frames).toEqual([]);
    }
  });

  test('the summary of a long capture keeps no message: memory does not grow with it', async () => {
    const o = memoryOutput();
    expect(await analyzeCommand([RC], o)).toBe(0);
    const kept = analyzeFile(RC, { keep: { violations: true, cmConnections: true } });
    expect(kept.messageCount).toBe(18);
    expect(kept.messages).toEqual([]);
    expect(o.out).toContain('18 message(s)');
  });

  test('UC and UD conversations', () => {
    const r = analyzeFile(path.join(CAPS, 'uc-ud-v6-vlan.pcap'));
    expect(r.conversations.map((c) => c.type).sort()).toEqual(['UC', 'UD']);
    expect(r.violations).toEqual([]);
  });

  test('a truncated capture: exit 1, frames before the cut analysed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-an-'));
    const cut = path.join(dir, 'cut.pcap');
    const bytes = fs.readFileSync(RC);
    fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 10));
    const o = memoryOutput();
    expect(await analyzeCommand(['--json', cut], o)).toBe(1);
    expect(JSON.parse(o.out).frameCounts.total).toBe(47);
    expect(o.err).toContain('capture ends early');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('usage errors', async () => {
    await expect(analyzeCommand(['--all-frames', RC], memoryOutput())).rejects.toThrow(UsageError);
    await expect(ladderCommand([RC], memoryOutput())).rejects.toThrow(/needs -o/);
    await expect(ladderCommand(['-o', 'x.png', RC], memoryOutput())).rejects.toThrow(/\.html or \.svg/);
    await expect(plotCommand(['-o', 'x.png', RC], memoryOutput())).rejects.toThrow(/\.svg or \.html/);
    const o = memoryOutput();
    expect(await analyzeCommand(['/nonexistent.pcap'], o)).toBe(2);
    expect(o.err).toContain('no such file');
    const l = memoryOutput();
    expect(await ladderCommand(['-o', '-', '--conversation', '9', RC], l)).toBe(2);
    expect(l.err).toContain('no conversation #9');
  });

  test('ladder and plot write their files', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-pic-'));
    expect(await ladderCommand(['-o', path.join(dir, 'l.html'), '--frames', '30-44', RC], memoryOutput())).toBe(0);
    expect(await ladderCommand(['-o', path.join(dir, 'l.svg'), '--from', '1300', '--to', '1500', RC], memoryOutput())).toBe(0);
    expect(await plotCommand(['-o', path.join(dir, 'p.svg'), RC], memoryOutput())).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'l.html'), 'utf8').match(/class="pkt /g)).toHaveLength(15);
    expect(fs.readFileSync(path.join(dir, 'p.svg'), 'utf8')).toContain('<svg');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('ladder and plot draw a truncated capture up to the cut, name it, and exit 1', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-pic-'));
    const cut = path.join(dir, 'cut.pcap');
    const bytes = fs.readFileSync(RC);
    fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 10));
    // The conversation of the last frame, the one the cut takes.
    const last = analyzeFile(RC, { allFrames: true }).frameResults.at(-1)!;
    const conv = ['--conversation', String(last.conversation), '--max', '100'];
    const whole = memoryOutput();
    expect(await ladderCommand(['-o', '-', ...conv, RC], whole)).toBe(0);
    const l = memoryOutput();
    expect(await ladderCommand(['-o', '-', ...conv, cut], l)).toBe(1);
    expect(l.err).toMatch(/^roce ladder: .*cut\.pcap: capture ends early at byte \d+: /);
    // The frames before the cut: one arrow fewer than the whole capture's.
    expect(l.out.match(/class="pkt /g)?.length).toBe((whole.out.match(/class="pkt /g)?.length ?? 0) - 1);
    for (const extra of [[], ['--rate']]) {
      const p = memoryOutput();
      expect(await plotCommand([...extra, '-o', '-', cut], p)).toBe(1);
      expect(p.err).toMatch(/^roce plot: .*cut\.pcap: capture ends early at byte \d+: /);
      expect(p.out).toContain('<svg');
    }
    // Not a capture at all: said so in one line, with nothing drawn (exit 2, as an unreadable input).
    const junk = path.join(dir, 'junk.pcap');
    fs.writeFileSync(junk, 'not a capture at all\n');
    const notCapture = (cmd: string): string => `roce ${cmd}: ${junk}: not a pcap or pcapng capture: unknown capture magic 0x20746f6e (not pcap or pcapng)\n`;
    const lj = memoryOutput();
    expect(await ladderCommand(['-o', '-', junk], lj)).toBe(2);
    expect({ out: lj.out, err: lj.err }).toEqual({ out: '', err: notCapture('ladder') });
    for (const extra of [[], ['--rate']]) {
      const pj = memoryOutput();
      expect(await plotCommand([...extra, '-o', '-', junk], pj)).toBe(2);
      expect({ out: pj.out, err: pj.err }).toEqual({ out: '', err: notCapture('plot') });
    }
    const aj = memoryOutput();
    expect(await analyzeCommand(['--json', junk], aj)).toBe(2);
    expect({ out: aj.out, err: aj.err }).toEqual({ out: '', err: notCapture('analyze') });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
