/**
 * One command line for the capture commands (cli/capture-options.ts): `--frames`, `--time-window`,
 * `--qpn`, `--conversation` and `-r` have one name, value syntax and meaning in each command that
 * takes them, and a short letter means one thing across the roce commands. `--frames` and
 * `--time-window` take part of a capture as a capture of its own: decode prints those frames,
 * analyze, ladder, plot and replay judge them as they judge a capture cut down to them (frame
 * numbers kept, times still counted from the capture's first frame), and they agree with each other.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { commandNames, run, toolOf } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { type OptionSpec, UsageError } from '../../cli/args';
import { CAPTURE_SELECTION_SPECS, frameRange, timeNs, timeWindow } from '../../cli/capture-options';
import { DECODE_OPTIONS } from '../../cli/decode-command';
import { ANALYZE_OPTIONS } from '../../cli/analyze-command';
import { LADDER_OPTIONS } from '../../cli/ladder-command';
import { PLOT_OPTIONS } from '../../cli/plot-command';
import { REPLAY_OPTIONS } from '../../cli/replay-command';
import { type CaptureRecord, readCapture, writePcap } from '../../packets/pcap';
import { roce as roceHere } from '../support/cli';
import { helpOptions } from '../support/help-options';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const RC = path.join(ROOT, 'captures', 'rc-conversation.pcap');

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `roce ARGV` in this process: what these tests judge is the command's output, not the process around it. */
async function roce(...argv: string[]): Promise<Ran> {
  const r = await roceHere(...argv);
  return { status: r.code, stdout: r.out, stderr: r.err };
}

/** `roce ARGV` in a process of its own (bin/roce.js): for what only a real process does (a worker thread). */
function roceProcess(...argv: string[]): Ran {
  const r = spawnSync(process.execPath, [ROCE, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 1 << 26, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Each capture command's option table. */
const CAPTURE_COMMAND_TABLES: Readonly<Record<string, readonly OptionSpec[]>> = {
  decode: DECODE_OPTIONS,
  analyze: ANALYZE_OPTIONS,
  ladder: LADDER_OPTIONS,
  plot: PLOT_OPTIONS,
  replay: REPLAY_OPTIONS,
};

// Made now: the cut captures are written as the tests are declared.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-capture-options-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the values', () => {
  test('a time: a unit, or µs without one, in whole nanoseconds', () => {
    expect(timeNs('1300', 'x')).toBe(1_300_000);
    expect(timeNs('1.3ms', 'x')).toBe(1_300_000);
    expect(timeNs('1300us', 'x')).toBe(1_300_000);
    expect(timeNs('1300µs', 'x')).toBe(1_300_000);
    expect(timeNs('2s', 'x')).toBe(2_000_000_000);
    expect(timeNs('0.000000001s', 'x')).toBe(1);
    expect(timeNs('12.5', 'x')).toBe(12_500);
    expect(timeNs('7ns', 'x')).toBe(7);
    expect(timeNs('1.000ns', 'x')).toBe(1);
    for (const bad of ['', 'ms', '1.5.2', '-3', '1e3', '1 ms', '1min', '0.5ns']) expect(() => timeNs(bad, '--time-window')).toThrow(UsageError);
  });

  test('a time window FROM-TO, open at either end', () => {
    expect(timeWindow('1.3ms-1.5ms')).toEqual([1_300_000, 1_500_000]);
    expect(timeWindow('1300-')).toEqual([1_300_000, Number.MAX_SAFE_INTEGER]);
    expect(timeWindow('-2s')).toEqual([0, 2_000_000_000]);
    for (const bad of ['-', '5', '5-2', '1-2-3', 'a-b']) expect(() => timeWindow(bad)).toThrow(UsageError);
    expect(() => timeWindow('5-2')).toThrow(/ends before it starts/);
  });

  test('a frame range A-B, A-, -B or A', () => {
    expect(frameRange('30-44')).toEqual([30, 44]);
    expect(frameRange('30-')).toEqual([30, Number.MAX_SAFE_INTEGER]);
    expect(frameRange('-4')).toEqual([1, 4]);
    expect(frameRange('7')).toEqual([7, 7]);
    for (const bad of ['', '-', '0', '4-2', 'x']) expect(() => frameRange(bad)).toThrow(UsageError);
  });
});

describe('one command line', () => {
  async function help(name: string): Promise<string> {
    const o = memoryOutput();
    expect(await run([name, '-h'], o)).toBe(0);
    return o.out;
  }

  test("a short letter means one thing in every command of roce's own (a stand-in for a real tool takes the tool's letters)", async () => {
    const meaning = new Map<string, Set<string>>();
    const own = commandNames().filter((n) => toolOf(n) === null);
    expect(own).toEqual(expect.arrayContaining(['decode', 'analyze', 'ladder', 'plot', 'replay', 'attack', 'demo', 'sim', 'devices']));
    for (const name of own) {
      for (const o of helpOptions(await help(name))) {
        if (o.short === null) continue;
        const names = meaning.get(o.short) ?? new Set<string>();
        names.add(o.name);
        meaning.set(o.short, names);
      }
    }
    const clashes = [...meaning].filter(([, names]) => names.size > 1).map(([letter, names]) => `-${letter}: ${[...names].join(', ')}`);
    expect(clashes).toEqual([]);
    // And the other way: an option has one letter (or none) wherever it has one.
    const letters = new Map<string, Set<string>>();
    for (const [letter, names] of meaning) for (const n of names) letters.set(n, (letters.get(n) ?? new Set()).add(letter));
    expect([...letters].filter(([, ls]) => ls.size > 1).map(([n, ls]) => `--${n}: ${[...ls].map((l) => `-${l}`).join(', ')}`)).toEqual([]);
    expect(meaning.get('c')).toEqual(new Set(['count']));
    expect(meaning.get('r')).toEqual(new Set(['read-file']));
    expect(meaning.get('o')).toEqual(new Set(['output']));
  });

  test("each capture command's table takes the shared list whole, in its order, and defines none of them again", () => {
    const shared = CAPTURE_SELECTION_SPECS.map((s) => s.name);
    expect(shared).toEqual(['read-file', 'conversation', 'qpn', 'frames', 'time-window']);
    // The commands whose table takes -r are the capture commands: none is left out of this test.
    expect(commandNames().filter((n) => n in CAPTURE_COMMAND_TABLES)).toEqual(Object.keys(CAPTURE_COMMAND_TABLES));
    for (const [name, table] of Object.entries(CAPTURE_COMMAND_TABLES)) {
      const at = table.findIndex((s) => s.name === shared[0]);
      const taken = table.slice(at, at + shared.length);
      // Name, letter, kind and value as the list has them; only the words are the command's.
      expect({ name, taken: taken.map(({ help: _, ...syntax }) => syntax) }).toEqual({
        name,
        taken: CAPTURE_SELECTION_SPECS.map(({ help: _, ...syntax }) => syntax),
      });
      for (const s of taken) expect(s.help.length).toBeGreaterThan(0);
      expect({ name, elsewhere: table.filter((s, i) => shared.includes(s.name) && (i < at || i >= at + shared.length)).map((s) => s.name) }).toEqual({
        name,
        elsewhere: [],
      });
    }
  });

  test('the capture commands take the shared options under one name and value syntax', async () => {
    const shared = new Map(CAPTURE_SELECTION_SPECS.map((s) => [s.name, s]));
    const takers: Record<string, string[]> = {};
    for (const name of Object.keys(CAPTURE_COMMAND_TABLES)) {
      const text = await help(name);
      for (const o of helpOptions(text)) {
        const spec = shared.get(o.name);
        if (spec === undefined) continue;
        expect({ name, option: o.name, value: o.value, short: o.short }).toEqual({
          name,
          option: o.name,
          value: spec.value,
          short: spec.short ?? null,
        });
        (takers[o.name] ??= []).push(name);
      }
      // The statuses in the words they all use.
      expect(text.replace(/\s+/g, ' ')).toMatch(
        /Exit status: 0 [^;]+; 1 [^;]+; 2 on a usage error, on an input that cannot be read or is not a capture \(no pcap or pcapng file header: an empty input, a text file\), /,
      );
    }
    expect(takers).toEqual({
      'read-file': ['decode', 'analyze', 'ladder', 'plot', 'replay'],
      frames: ['decode', 'analyze', 'ladder', 'plot', 'replay'],
      'time-window': ['decode', 'analyze', 'ladder', 'plot', 'replay'],
      qpn: ['decode', 'analyze', 'ladder', 'plot', 'replay'],
      conversation: ['decode', 'analyze', 'ladder', 'plot', 'replay'],
    });
  });

  test('analyze --frames is the range; the list of flagged frames is --list-frames (-f)', async () => {
    const listed = await roce('analyze', '--list-frames', RC);
    expect(listed.status).toBe(0);
    expect(await roce('analyze', '-f', RC)).toEqual(listed);
    expect(listed.stdout).toContain('\nframes:\n');
    expect(listed.stdout).toMatch(/\n +36 +0\.001363948 s conv 1 RC_SEND_ONLY PSN 3086868 retransmission\n/);
    expect((await roce('analyze', RC)).stdout).not.toContain('\nframes:\n');
    const ranged = await roce('analyze', '--frames', '1-10', RC);
    expect(ranged.stdout).toMatch(/: 10 frames, 10 RoCE/);
    // The old switch, followed by a file, now reads the file's name as a range.
    const old = await roce('analyze', '--frames', RC);
    expect(old.status).toBe(2);
    expect(old.stderr).toMatch(/^roce analyze: --frames must look like A-B, A-, -B or A, not ".*" \(roce analyze -h\)\n$/);
  });
});

/** Frames `pick` takes, and a capture of only them (what editcap would cut). */
function cut(name: string, pick: (r: CaptureRecord, sinceFirstNs: number) => boolean): { records: CaptureRecord[]; file: string } {
  const cap = readCapture(new Uint8Array(fs.readFileSync(RC)));
  const t0 = cap.records[0]?.timestampNs ?? 0n;
  const records = cap.records.filter((r) => pick(r, Number(r.timestampNs - t0)));
  const file = path.join(dir, `${name}.pcap`);
  fs.writeFileSync(file, writePcap(records.map((r) => ({ data: r.data, timestampNs: r.timestampNs }))));
  return { records, file };
}

interface Doc {
  frameCounts: { total: number };
  summary: Record<string, unknown>;
  frames: { frame: number; flags: string[]; conversation: number | null }[];
  violations: unknown[];
}

const SELECTIONS: readonly [string, string[], (r: CaptureRecord, ns: number) => boolean][] = [
  ['frames 30-44', ['--frames', '30-44'], (r) => r.index >= 30 && r.index <= 44],
  // Frame 36, an RNR retransmission, is in; the SEND it resends is not.
  ['time window 1.3ms-1500us', ['--time-window', '1.3ms-1500us'], (_r, ns) => ns >= 1_300_000 && ns <= 1_500_000],
  ['time window from 1400 µs', ['--time-window', '1400-'], (_r, ns) => ns >= 1_400_000],
];

describe.each(SELECTIONS)('%s', (label, option, pick) => {
  const { records, file } = cut(label.replace(/\W+/g, '-'), pick);
  const numbers = records.map((r) => r.index);

  test('the selection is part of the capture, neither none nor all of it', async () => {
    expect(numbers.length).toBeGreaterThan(3);
    expect(numbers.length).toBeLessThan(48);
  });

  test('decode prints those frames, and counts every frame read', async () => {
    const json = await roce('decode', '--json', ...option, RC);
    expect(json.status).toBe(0);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { frame: number }).frame),
    ).toEqual(numbers);
    const text = await roce('decode', ...option, RC);
    const lines = text.stdout.split('\n').slice(0, -1);
    expect(lines.map((l) => Number(l.trim().split(/\s+/)[0]))).toEqual(numbers);
    expect(text.stderr).toBe(`48 frames read (pcap), 48 RoCE, 0 malformed, 0 with a bad ICRC, ${numbers.length} shown\n`);
    // The time column stays counted from the capture's first frame, as without the selection.
    const whole = (await roce('decode', RC)).stdout.split('\n');
    expect(lines).toEqual(numbers.map((n) => whole[n - 1]));
  });

  test('analyze judges them as it judges a capture cut down to them, their numbers kept', async () => {
    const selected = await roce('analyze', '--json', '--all-frames', ...option, RC);
    const alone = await roce('analyze', '--json', '--all-frames', file);
    expect([selected.status, alone.status]).toEqual([0, 0]);
    const a = JSON.parse(selected.stdout) as Doc;
    const b = JSON.parse(alone.stdout) as Doc;
    expect(a.frames.map((f) => f.frame)).toEqual(numbers);
    expect(a.frameCounts.total).toBe(numbers.length);
    expect(a.frames.map((f) => f.flags)).toEqual(b.frames.map((f) => f.flags));
    expect(a.summary).toEqual(b.summary);
    expect(a.violations.length).toBe(b.violations.length);
    // The same with the reading and decoding on a worker thread.
    expect(roceProcess('analyze', '--json', '--all-frames', '--threads', '2', ...option, RC)).toEqual(selected);
  });

  test('ladder draws them with the flags analyze gives them', async () => {
    const doc = JSON.parse((await roce('analyze', '--json', '--all-frames', ...option, RC)).stdout) as Doc;
    const r = await roce('ladder', '-o', '-', ...option, RC);
    expect(r.status).toBe(0);
    const drawn = [...r.stdout.matchAll(/<g class="pkt [^"]*" data-frame="(\d+)" data-tip="([^"]*)"/g)].map((m) => ({
      frame: Number(m[1]),
      flags: /flags: ([^\n]*)/.exec(m[2] ?? '')?.[1]?.split(', ') ?? [],
    }));
    expect(drawn.length).toBeGreaterThan(0);
    for (const d of drawn) expect(d).toEqual({ frame: d.frame, flags: doc.frames.find((f) => f.frame === d.frame)?.flags });
    const conversation = doc.frames.find((f) => f.frame === drawn[0]?.frame)?.conversation;
    expect(drawn.map((d) => d.frame)).toEqual(doc.frames.filter((f) => f.conversation === conversation).map((f) => f.frame));
  });

  test('plot draws as many resent requests as analyze finds', async () => {
    const doc = JSON.parse((await roce('analyze', '--json', '--all-frames', ...option, RC)).stdout) as Doc;
    const resent = doc.frames.filter((f) => f.flags.includes('retransmission') || f.flags.includes('duplicateFrame')).length;
    const r = await roce('plot', '-o', '-', ...option, RC);
    expect(r.status).toBe(0);
    // One more: the legend's.
    expect(r.stdout.match(/<line class="retx"/g)?.length ?? 0).toBe(resent + 1);
  });

  test('replay replays them as it replays the cut capture', async () => {
    type Replay = { framesIn: number; framesOut: number; matched: number; expected: number; violations: number };
    const totals = (text: string): Replay => {
      const j = JSON.parse(text) as Replay;
      return { framesIn: j.framesIn, framesOut: j.framesOut, matched: j.matched, expected: j.expected, violations: j.violations };
    };
    const selected = await roce('replay', '--json', ...option, RC);
    const alone = await roce('replay', '--json', file);
    expect(selected.status).toBe(alone.status);
    expect(totals(selected.stdout)).toEqual(totals(alone.stdout));
    expect(totals(selected.stdout).framesIn).toBeGreaterThan(0);
  });
});

test("a time window keeps its frames' times from the capture's first frame: ladder labels them so", async () => {
  const r = await roce('ladder', '-o', '-', '--time-window', '1.3ms-1500us', RC);
  // The tooltip's time: seconds since the capture's first frame, as roce decode's -t rel column.
  const times = [...r.stdout.matchAll(/time: ([\d.]+) s/g)].map((m) => Number(m[1]));
  expect(times.length).toBeGreaterThan(0);
  for (const t of times) expect(t >= 0.0013 && t <= 0.0015).toBe(true);
});

test('ladder --from/--to zoom in: each packet drawn is judged with the whole capture', async () => {
  // Frame 36 resends a SEND sent before 1300 µs: in the zoom it is the retransmission it is;
  // in --time-window 1300-1500, a capture of its own, nothing before it is there to resend.
  const zoom = (await roce('ladder', '-o', '-', '--from', '1300', '--to', '1500', RC)).stdout;
  const window = (await roce('ladder', '-o', '-', '--time-window', '1300-1500', RC)).stdout;
  expect(zoom).toMatch(/<g class="pkt retx" data-frame="36"/);
  expect(window).toMatch(/<g class="pkt req" data-frame="36"/);
  expect([...zoom.matchAll(/data-frame="(\d+)"/g)].map((m) => m[1])).toEqual([...window.matchAll(/data-frame="(\d+)"/g)].map((m) => m[1]));
});

test("damage after a frame range's last frame is not in the range: analyze, ladder, plot and replay do not see it; decode reads on", async () => {
  const bytes = fs.readFileSync(RC);
  const damaged = path.join(dir, 'damaged.pcap');
  fs.writeFileSync(damaged, bytes.subarray(0, bytes.length - 10));
  for (const argv of [['analyze'], ['ladder', '-o', '-'], ['plot', '-o', '-']]) {
    const whole = await roce(...argv, damaged);
    expect({ argv, status: whole.status }).toEqual({ argv, status: 1 });
    expect(whole.stderr).toContain('capture ends early');
    const inRange = await roce(...argv, '--frames', '1-40', damaged);
    expect({ argv, status: inRange.status, stderr: inRange.stderr }).toEqual({ argv, status: 0, stderr: '' });
  }
  const captureError = async (...argv: string[]): Promise<unknown> =>
    (JSON.parse((await roce('replay', '--json', ...argv)).stdout) as { captureError: unknown }).captureError;
  expect(await captureError(damaged)).toMatch(/^capture truncated at byte \d+ after 47 complete frames/);
  expect(await captureError('--frames', '1-40', damaged)).toBeNull();
  expect((await roce('decode', '--frames', '1-40', damaged)).status).toBe(1);
});

test('--qpn takes one QP where a command draws one conversation, and several where it filters frames', async () => {
  expect(await roce('ladder', '-o', '-', '--qpn', '0x11,0x12', RC)).toEqual({
    status: 2,
    stdout: '',
    stderr: 'roce ladder: --qpn takes one QP number here, not 2 (roce ladder -h)\n',
  });
  const two = await roce('decode', '--json', '--qpn', '0x11,0x12', RC);
  expect(two.stdout.trim().split('\n').length).toBe(44);
});
