/**
 * `roce decode -` and `roce analyze -` read a capture from standard input as it comes (`tcpdump -U
 * -w - | roce decode -`): the same output as from the file, a frame's line printed once the frame
 * has arrived, a cut at the end said as a truncation, Ctrl-C (which also ends the capturing tool)
 * not ending the command before its input does. And `roce decode` stops reading once the reader of
 * its output has gone (`| head`): fed without end, it ends by itself, quietly. `roce analyze
 * --follow` prints each loss-recovery episode and rule violation as it finds it, the same lines as
 * its report's lists, and live, before the input ends.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readCapture } from '../../packets/pcap';
import { repeatedCapture } from '../support/repeated-capture';
import { burstPastRecovery, capture } from '../analysis/frames';
import { roce } from '../support/cli';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const CAPTURES = path.join(ROOT, 'captures');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-stdin-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `roce ARGS`, writing `input` to its standard input in pieces of `piece` bytes (a pipe, not a file). */
async function withInput(args: readonly string[], input: Uint8Array, piece: number): Promise<Ran> {
  const child = spawn(process.execPath, [ROCE, ...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', r));
  for (let at = 0; at < input.length; at += piece) {
    if (!child.stdin.write(input.subarray(at, at + piece))) await new Promise((r) => child.stdin.once('drain', r));
  }
  child.stdin.end();
  return { status: await closed, stdout, stderr };
}

/**
 * `roce ARGS FILE` in this process: what a file gives, to hold a pipe's output to, and the file
 * cases of --follow, where standard input is not what is tested.
 */
async function fromFile(args: readonly string[], file: string): Promise<Ran> {
  const r = await roce(...args, file);
  return { status: r.code, stdout: r.out, stderr: r.err };
}

describe('roce decode -', () => {
  const names = ['rc-conversation.pcap', 'rc-conversation.pcapng', 'cm-exchanges.pcap', 'uc-ud-v6-vlan.pcap', 'malformed.pcap'];
  // Every file in the summary form, and the first in every form (each run through a pipe is a process of its own).
  test.each(names)('%s through a pipe: what the file gives', async (name) => {
    const file = path.join(CAPTURES, name);
    const bytes = fs.readFileSync(file);
    for (const flags of name === names[0] ? [[], ['--json'], ['-v']] : [[]]) {
      const want = await fromFile(['decode', ...flags], file);
      const got = await withInput(['decode', ...flags, '-'], bytes, 333);
      expect(got).toEqual({ ...want, stderr: want.stderr.replaceAll(file, 'stdin') });
    }
  });

  test('a pipe that ends inside a record: the frames before it, and a truncation (exit 1); an empty one is no capture (exit 2)', async () => {
    const bytes = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
    const got = await withInput(['decode', '-'], bytes.subarray(0, 1000), 100);
    expect(got.status).toBe(1);
    expect(got.stdout).toBe('');
    expect(got.stderr).toBe(
      '0 frames read (pcap), 0 RoCE, 0 malformed, 0 with a bad ICRC\nroce decode: stdin: capture truncated at byte 24 after 0 complete frames: the input ended after 976 of the 1098 bytes that start there\n',
    );
    // An empty input holds no capture at all: a bad input (exit 2), not a truncated capture.
    const empty = await withInput(['decode', '-'], new Uint8Array(0), 1);
    expect(empty).toEqual({
      status: 2,
      stdout: '',
      stderr: 'roce decode: stdin: not a pcap or pcapng capture: capture magic needs 4 bytes but only 0 remain\n',
    });
  });

  test.each([false, true])('live: a frame is printed once it has arrived, before the next one is written (Ctrl-C meanwhile: %s)', async (interrupt) => {
    const bytes = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
    const cap = readCapture(bytes);
    const offsets = cap.records.map((r) => r.fileOffset);
    const child = spawn(process.execPath, [ROCE, 'decode', '-'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
    const closed = new Promise<number | null>((r) => child.on('close', r));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let stdout = '';
    let waiting: { lines: number; resolve: () => void } | null = null;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (waiting !== null && stdout.split('\n').length - 1 >= waiting.lines) waiting.resolve();
    });
    const lines = (n: number): Promise<void> =>
      new Promise((resolve) => {
        if (stdout.split('\n').length - 1 >= n) resolve();
        else waiting = { lines: n, resolve };
      });
    // The file header and the first three records, one at a time; each line must come before the next record goes in.
    child.stdin.write(bytes.subarray(0, offsets[0]));
    for (let i = 0; i < 3; i++) {
      child.stdin.write(bytes.subarray(offsets[i], offsets[i + 1]));
      await lines(i + 1);
      expect(stdout.split('\n')[i]).toMatch(new RegExp(`^\\s+${i + 1}\\s`));
      // Ctrl-C reaches every process of the pipeline: the command goes on until its input ends,
      // which the capturing tool's own exit brings about.
      if (interrupt && i === 0) child.kill('SIGINT');
    }
    child.stdin.end(bytes.subarray(offsets[3]));
    expect(await closed).toBe(0);
    const want = await fromFile(['decode'], path.join(CAPTURES, 'rc-conversation.pcap'));
    expect(stdout).toBe(want.stdout);
    expect(stderr).toBe(want.stderr);
  });

  test('a FIFO named as FILE: read as it comes, and Ctrl-C ends the command at once (its writer is out of reach)', async () => {
    const fifo = path.join(dir, 'capture.fifo');
    execFileSync('mkfifo', [fifo]);
    const bytes = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
    const offsets = readCapture(bytes).records.map((r) => r.fileOffset);
    const child = spawn(process.execPath, [ROCE, 'decode', fifo], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('close', (code, signal) => r({ code, signal })));
    let stdout = '';
    let seen: (() => void) | null = null;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      seen?.();
    });
    const writer = await fs.promises.open(fifo, 'w');
    try {
      await writer.write(bytes.subarray(0, offsets[1]));
      await new Promise<void>((resolve) => {
        if (stdout !== '') resolve();
        else seen = resolve;
      });
      expect(stdout).toMatch(/^\s+1\s/);
      // The command now waits inside a read for the next frame, with the writer still there.
      child.kill('SIGINT');
      expect(await closed).toEqual({ code: null, signal: 'SIGINT' });
    } finally {
      await writer.close();
    }
  });

  test.each([['1'], ['2']])(
    '--threads %s: once the output has no reader, an endless input is left unread and the command ends quietly',
    async (threads) => {
      // A capture with no end: the file header, then its records over and over.
      const long = fs.readFileSync(repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 4096, dir));
      const header = long.subarray(0, 24);
      const records = long.subarray(24);
      const child = spawn(process.execPath, [ROCE, 'decode', '--threads', threads, '-'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const closed = new Promise<number | null>((r) => child.on('close', r));
      // Like `| head -1`: take the first output, then close the pipe.
      child.stdout.once('data', () => child.stdout.destroy());
      child.stdin.on('error', () => undefined); // EPIPE once the command has gone
      let ended = false;
      void closed.then(() => (ended = true));
      let sent = 0;
      child.stdin.write(header);
      // Far more than the command keeps in hand (a 1 MiB read buffer, batches of 256 KiB, the pipe):
      // without the stop it would still be reading when this runs out.
      const LIMIT = 256 << 20;
      while (!ended && sent < LIMIT) {
        sent += records.length;
        if (!child.stdin.write(records)) await Promise.race([new Promise((r) => child.stdin.once('drain', r)), closed]);
      }
      expect(ended).toBe(true);
      expect(await closed).toBe(0);
      expect(stderr).toBe('');
      expect(sent).toBeLessThan(LIMIT);
    },
    60_000,
  );
});

describe('roce analyze -', () => {
  test.each(['rc-conversation.pcap', 'cm-exchanges.pcap', 'rxe/rping-req-retries.pcap'])(
    '%s through a pipe: the report the file gives, named stdin',
    async (name) => {
      const file = path.join(CAPTURES, name);
      const bytes = fs.readFileSync(file);
      for (const flags of [['--json', '--all-frames'], ['-v']]) {
        const want = await fromFile(['analyze', ...flags], file);
        const got = await withInput(['analyze', ...flags, '-'], bytes, 1000);
        expect(got.status).toBe(want.status);
        expect(got.stderr).toBe(want.stderr.replaceAll(file, 'stdin'));
        if (flags[0] === '--json') expect(JSON.parse(got.stdout)).toEqual({ ...(JSON.parse(want.stdout) as object), file: 'stdin' });
        else expect(got.stdout).toBe(want.stdout.replace(`${file}:`, 'stdin:'));
      }
    },
  );
});

describe('roce analyze of a pipe: its long lists wait in a temporary file', () => {
  // A pipe's size is unknown, so --json, -v, -m, -e and -f spool the messages, episodes and frames
  // they list (a small file is kept in memory): the output is the file's, with a temporary
  // directory and without a usable one.
  test.each(['rc-conversation.pcap', 'rxe/rping-req-retries.pcap', 'rc-conversation.pcap repeated (rule violations)'])(
    "%s: the file's report, text for text, with or without a temporary directory",
    async (name) => {
      const file = name.endsWith('repeated (rule violations)')
        ? repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 20, dir)
        : path.join(CAPTURES, name);
      const tmp = fs.mkdtempSync(path.join(dir, 'tmp-'));
      const notADir = path.join(dir, 'not-a-dir');
      fs.writeFileSync(notADir, '');
      // Every list form on the capture with rule violations; the text report on the others.
      const forms = name.endsWith('repeated (rule violations)') ? [['--json', '--all-frames'], ['-v'], ['-m', '--episodes']] : [['-v']];
      for (const flags of forms) {
        const want = await fromFile(['analyze', ...flags], file);
        expect(want.status).toBe(0);
        const named =
          flags[0] === '--json' ? want.stdout.replace(`"file":${JSON.stringify(file)}`, '"file":"stdin"') : want.stdout.replace(`${file}:`, 'stdin:');
        for (const TMPDIR of [tmp, notADir]) {
          const r = spawnSync(process.execPath, [ROCE, 'analyze', ...flags, '-'], {
            input: fs.readFileSync(file),
            encoding: 'utf8',
            maxBuffer: 1 << 28,
            timeout: 60_000,
            env: { ...process.env, TMPDIR },
          });
          expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
          expect(r.stdout).toBe(named);
        }
      }
      // The spool file was unlinked as soon as it was open.
      expect(fs.readdirSync(tmp)).toEqual([]);
    },
  );
});

describe('roce analyze --follow', () => {
  test("each episode and violation as found: the report's own lines, then the report", async () => {
    // Repeated, the capture's PSNs come round again: rule violations as well as episodes.
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 200, dir);
    const plain = await fromFile(['analyze'], file);
    const listed = await fromFile(['analyze', '--episodes'], file);
    const followed = await fromFile(['analyze', '--follow'], file);
    expect(followed.status).toBe(plain.status);
    const [found, report] = followed.stdout.split('\n\n', 2) as [string, string];
    expect(followed.stdout).toBe(`${found}\n\n${plain.stdout}`);
    expect(report).toBeDefined();
    const lines = found.split('\n');
    const episodes = lines.filter((l) => l.startsWith('episode ')).map((l) => `  ${l.slice('episode '.length)}`);
    const violations = lines.filter((l) => l.startsWith('violation ')).map((l) => `  ${l.slice('violation '.length)}`);
    expect(episodes.length + violations.length).toBe(lines.length);
    expect(episodes.length).toBeGreaterThan(2);
    expect(violations.length).toBeGreaterThan(0);
    // The same lines as the lists of the report, each once (the report sorts them; --follow has them as found).
    const section = (text: string, title: string): string[] => {
      const rest = text.split(`\n${title}\n`)[1] ?? '';
      return rest
        .split('\n\n')[0]!
        .split('\n')
        .filter((l) => l.startsWith('  '));
    };
    expect([...episodes].sort()).toEqual(section(listed.stdout, 'loss-recovery episodes:').sort());
    expect([...violations].sort()).toEqual(section(plain.stdout, 'rule violations:').sort());
  });

  test('live: an episode is printed once its recovery and the end of its burst have arrived, before the input ends', async () => {
    const bytes = fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap'));
    const offsets = readCapture(bytes).records.map((r) => r.fileOffset);
    // Episode #1 (an RNR NAK) is recovered at frame 37 (roce analyze --json: recoveredFrame), and
    // frame 38, a new request, ends its burst: the frames up to 38 are written (0-based, 38 is the 39th).
    const upTo = 38;
    const child = spawn(process.execPath, [ROCE, 'analyze', '--follow', '-'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
    const closed = new Promise<number | null>((r) => child.on('close', r));
    let stdout = '';
    let seen: (() => void) | null = null;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('episode #1 ')) seen?.();
    });
    child.stdin.write(bytes.subarray(0, offsets[upTo]));
    await new Promise<void>((resolve) => {
      if (stdout.includes('episode #1 ')) resolve();
      else seen = resolve;
    });
    expect(stdout).toMatch(/^episode #1 conv 1 rnr .*recovered in/);
    child.stdin.end(bytes.subarray(offsets[upTo]));
    expect(await closed).toBe(0);
    expect(stdout).toBe(
      (await fromFile(['analyze', '--follow'], path.join(CAPTURES, 'rc-conversation.pcap'))).stdout.replace(
        `${path.join(CAPTURES, 'rc-conversation.pcap')}:`,
        'stdin:',
      ),
    );
  });

  test('with --fail-on: the first violation of a named rule ends the analysis there (exit 1)', async () => {
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 200, dir);
    const whole = JSON.parse((await fromFile(['analyze', '--json'], file)).stdout) as {
      violations: { rule: string; frames: number[] }[];
      frameCounts: { total: number };
    };
    const first = whole.violations.reduce((a, v) => Math.min(a, Math.max(...v.frames)), Infinity);
    expect(first).toBeLessThan(whole.frameCounts.total);
    const r = await fromFile(['analyze', '--follow', '--fail-on', 'any'], file);
    expect(r.status).toBe(1);
    const firstRule = whole.violations.find((v) => Math.max(...v.frames) === first)?.rule;
    expect(r.stderr).toContain(`--fail-on: stopped at frame ${first}, the first violation of ${firstRule}`);
    expect(r.stdout).toContain(`: ${first} frames, `);
    expect(r.stdout.match(/^violation /gm)).toHaveLength(1);
    // Without --follow, --fail-on judges the whole capture.
    const all = await fromFile(['analyze', '--fail-on', 'any'], file);
    expect(all.status).toBe(1);
    expect(all.stdout).toContain(`: ${whole.frameCounts.total} frames, `);
  });

  test('with --fail-on on an endless live input: it ends by itself at the first violation', async () => {
    const long = fs.readFileSync(repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 200, dir));
    const child = spawn(process.execPath, [ROCE, 'analyze', '--follow', '--fail-on', 'any', '-'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000 });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    child.stdin.on('error', () => undefined); // EPIPE once the command has gone
    const closed = new Promise<number | null>((r) => child.on('close', r));
    let ended = false;
    void closed.then(() => (ended = true));
    // The file's header and records, then its records over and over: the PSNs come round, so a
    // violation comes early, and the input never ends on its own.
    const records = long.subarray(24);
    child.stdin.write(long);
    let sent = long.length;
    const LIMIT = 256 << 20;
    while (!ended && sent < LIMIT) {
      sent += records.length;
      if (!child.stdin.write(records)) await Promise.race([new Promise((r) => child.stdin.once('drain', r)), closed]);
    }
    expect(await closed).toBe(1);
    expect(sent).toBeLessThan(LIMIT);
    expect(stderr).toMatch(/--fail-on: stopped at frame \d+, the first violation of /);
  }, 60_000);

  test('with --json: JSON Lines, an event per episode and violation as found, the --json report last', async () => {
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 200, dir);
    const whole = await fromFile(['analyze', '--json'], file);
    const r = await fromFile(['analyze', '--follow', '--json'], file);
    expect(r.status).toBe(whole.status);
    expect(r.stdout.endsWith('\n')).toBe(true);
    const events = r.stdout
      .slice(0, -1)
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; [k: string]: unknown });
    const last = events.pop();
    expect(last).toEqual({ event: 'report', report: JSON.parse(whole.stdout) });
    const report = last?.['report'] as { episodes: unknown[]; violations: unknown[] };
    expect(events.every((e) => e.event === 'episode' || e.event === 'violation')).toBe(true);
    const of = (name: string): string[] => events.filter((e) => e.event === name).map((e) => JSON.stringify(e[name]));
    // The report's own objects, each once (the report sorts them; the events come as found).
    expect(of('episode').length).toBeGreaterThan(2);
    expect(of('violation').length).toBeGreaterThan(0);
    expect([...of('episode')].sort()).toEqual(report.episodes.map((e) => JSON.stringify(e)).sort());
    expect([...of('violation')].sort()).toEqual(report.violations.map((v) => JSON.stringify(v)).sort());
  });

  test('an episode whose go-back-N burst goes on after its recovery is printed once the burst ends, with every packet resent', async () => {
    // A timeout's burst resends 5 packets; the ACK after the first already recovers the episode
    // (the responder had them all). The event used to say 1 packet.
    const file = path.join(dir, 'burst-past-recovery.pcap');
    fs.writeFileSync(file, capture(burstPastRecovery()));
    const r = await fromFile(['analyze', '--follow', '--json'], file);
    const events = r.stdout
      .slice(0, -1)
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; episode?: { resentPackets: number; recoveredFrame: number | null }; report?: { episodes: unknown[] } });
    const report = events.pop()?.report;
    const episodes = events.filter((e) => e.event === 'episode').map((e) => e.episode!);
    expect(episodes).toEqual([expect.objectContaining({ resentPackets: 5, recoveredFrame: 7 })]);
    expect(episodes.map((e) => JSON.stringify(e)).sort()).toEqual(report!.episodes.map((e) => JSON.stringify(e)).sort());
  });

  test('with --json and --fail-on: one violation event, then the report of the frames up to it (exit 1)', async () => {
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 200, dir);
    const r = await fromFile(['analyze', '--follow', '--json', '--fail-on', 'any'], file);
    expect(r.status).toBe(1);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; violation?: { frames: number[] }; report?: { frameCounts: { total: number }; failOn?: unknown } });
    expect(events.filter((e) => e.event === 'violation')).toHaveLength(1);
    const v = events.find((e) => e.event === 'violation')?.violation;
    const last = events[events.length - 1];
    expect(last?.event).toBe('report');
    expect(last?.report?.frameCounts.total).toBe(Math.max(...(v?.frames ?? [])));
    expect(last?.report?.failOn).toBeDefined();
    expect(r.stderr).toMatch(/--fail-on: stopped at frame \d+, the first violation of /);
  });
});
