/**
 * `--conversation N` in every capture command means the conversation `roce analyze` lists as #N
 * (with the same --frames and --time-window): roce decode prints exactly its frames, roce replay
 * replays it with the verdict the replay of the whole capture gives it, roce ladder draws it and
 * roce plot draws its flows. A number no conversation has exits 2 with one line in each of them.
 */
import * as path from 'node:path';
import { roce } from '../support/cli';

const ROOT = path.resolve(__dirname, '..', '..');
const SAMPLE = path.join(ROOT, 'captures', 'rc-conversation.pcap');
const MIXED = path.join(ROOT, 'captures', 'uc-ud-v6-vlan.pcap');

interface FrameJson {
  frame: number;
  roce: boolean;
}
interface Analysis {
  conversations: { id: number; type: string; a: { ip: string; qpn: number | null }; b: { ip: string; qpn: number | null } }[];
  frames: { frame: number; conversation: number | null }[];
}

async function analysis(...argv: string[]): Promise<Analysis> {
  const r = await roce('analyze', '--json', '--all-frames', ...argv);
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as Analysis;
}

const decodedFrames = (text: string): number[] =>
  text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as FrameJson).frame);

describe.each([
  ['the whole capture', []],
  ['--frames 20-47', ['--frames', '20-47']],
  ['--time-window 1ms-', ['--time-window', '1ms-']],
])('%s', (_name, selection) => {
  test('roce decode --conversation N prints exactly the frames roce analyze puts in #N', async () => {
    for (const file of [SAMPLE, MIXED]) {
      const a = await analysis(...selection, file);
      expect(a.conversations.length).toBeGreaterThan(0);
      for (const c of a.conversations) {
        const r = await roce('decode', '--json', ...selection, '--conversation', String(c.id), file);
        expect(r.code).toBe(0);
        expect(decodedFrames(r.out)).toEqual(a.frames.filter((f) => f.conversation === c.id).map((f) => f.frame));
      }
    }
  });
});

test('roce decode --conversation, text: the frames of #N, the closing line counting every frame', async () => {
  const r = await roce('decode', '--conversation', '2', SAMPLE);
  expect(r.code).toBe(0);
  expect(
    r.out
      .trim()
      .split('\n')
      .map((l) => Number(l.trim().split(/\s+/)[0])),
  ).toEqual([45, 46]);
  expect(r.err).toBe('48 frames read (pcap), 48 RoCE, 0 malformed, 0 with a bad ICRC, 2 shown\n');
});

test('roce replay --conversation N: the conversation roce analyze numbers N, with the verdict the whole replay gives it', async () => {
  const all = await roce('replay', '--json', SAMPLE);
  const whole = JSON.parse(all.out) as { conversations: { requesterQpn: number; responderQpn: number }[] };
  const a = await analysis(SAMPLE);
  for (const c of a.conversations) {
    const r = await roce('replay', '--json', '--conversation', String(c.id), SAMPLE);
    const one = JSON.parse(r.out) as { conversations: { requesterQpn: number; responderQpn: number; requesterIp: string }[] };
    expect(one.conversations).toHaveLength(1);
    const got = one.conversations[0]!;
    expect([got.requesterQpn, got.responderQpn].sort()).toEqual([c.a.qpn, c.b.qpn].sort());
    expect(got).toEqual(whole.conversations.find((w) => w.requesterQpn === got.requesterQpn && w.responderQpn === got.responderQpn));
  }
});

test('roce replay --conversation of a UD conversation: exit 1, it says why', async () => {
  const a = await analysis(MIXED);
  const ud = a.conversations.find((c) => c.type === 'UD');
  expect(ud).toBeDefined();
  const r = await roce('replay', '--conversation', String(ud?.id), MIXED);
  expect(r).toEqual({
    code: 1,
    out: '',
    err: expect.stringMatching(
      new RegExp(`^roce replay: .*: conversation #${ud?.id} \\(.*\\) is UD: roce replay replays RC conversations\\n$`),
    ) as unknown as string,
  });
});

test('roce replay --onto with --conversation or --qpn is a usage error (it re-sends frames, it does not choose conversations)', async () => {
  for (const choice of [
    ['--conversation', '1'],
    ['--qpn', '0x12'],
  ]) {
    const r = await roce('replay', '--onto', 'lo', ...choice, SAMPLE);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^roce replay: --onto re-sends .*\(roce replay -h\)\n$/);
  }
});

test('roce ladder and roce plot --conversation N draw #N', async () => {
  const ladder = await roce('ladder', '-o', '-', '--conversation', '3', SAMPLE);
  expect(ladder.code).toBe(0);
  expect(ladder.out).toMatch(/conversation #3 \(RC\)/);
  const plot = await roce('plot', '-o', '-', '--conversation', '3', SAMPLE);
  expect(plot.code).toBe(0);
  expect(plot.out).toMatch(/#3 RC 198\.18\.0\.1 QP 0x000015/);
  expect(plot.out).not.toMatch(/#1 RC/);
});

test('roce plot --qpn takes a list: the conversations with any of them at either end', async () => {
  const r = await roce('plot', '-o', '-', '--qpn', '0x14,0x16', SAMPLE);
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/#2 RC/);
  expect(r.out).toMatch(/#3 RC/);
  expect(r.out).not.toMatch(/#1 RC/);
});

test.each(['decode', 'analyze', 'replay', 'ladder', 'plot'])(
  'roce %s --conversation 9 on a capture of 3: exit 2, one line, nothing on stdout',
  async (name) => {
    const r = await roce(name, ...(name === 'ladder' || name === 'plot' ? ['-o', '-'] : []), '--conversation', '9', SAMPLE);
    expect(r.out).toBe('');
    expect(r.err).toMatch(new RegExp(`^roce ${name}: (.*rc-conversation\\.pcap: )?no conversation #9 \\(the capture has 3\\)\\n$`));
    expect(r.code).toBe(2);
  },
);
