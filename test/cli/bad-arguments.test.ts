/**
 * Every `roce` command, as cli/main.ts lists them (a new command is covered without a word here),
 * over ordinary mistakes: an unknown option, a value missing, a bad number; for a command that
 * reads a capture (it takes `-r FILE`), a directory, a missing file, a text file, an empty file and
 * an empty standard input as its capture, and bad values for the options they share (--frames,
 * --time-window, --qpn, --conversation); for a command that writes a file (it takes `-o FILE`),
 * a directory, a missing folder, an unwritable path and a full disk as that file. Each ends with the
 * exit status the command's help promises, one line on stderr naming the command (and for a file,
 * the file), nothing on stdout, no stack trace and no "internal error". Live commands get only
 * argument-level mistakes: nothing here opens a device or sends a frame. The commands run in this
 * process (an error they do not catch fails the test as it would end the process with exit 70);
 * what needs a process of its own runs bin/roce.js: the status and lines it ends with, an empty
 * standard input that is not a terminal, standard output on a full disk.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { testUnless } from '../support/skip';
import { roce as roceHere } from '../support/cli';
import { helpOptions } from '../support/help-options';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const SAMPLE = path.join(ROOT, 'captures', 'rc-conversation.pcap');

/** Each command's help, from the built CLI in one process: name → text. */
function helps(): Record<string, string> {
  const script = `
    const { run, commandNames } = require(${JSON.stringify(path.join(ROOT, 'dist', 'cli', 'main'))});
    const { memoryOutput } = require(${JSON.stringify(path.join(ROOT, 'dist', 'cli', 'output'))});
    (async () => {
      const all = {};
      for (const name of commandNames()) {
        const o = memoryOutput();
        if (await run([name, '-h'], o) !== 0) throw new Error(name + ' -h failed');
        all[name] = o.out;
      }
      process.stdout.write(JSON.stringify(all));
    })();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ROCE_NO_NATIVE: '1' } });
  if (r.status !== 0) throw new Error(`could not list the commands' help: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
}

const HELP = helps();
const NAMES = Object.keys(HELP);
/** A help text on one line, for phrases that a line break may cut. */
const flat = (name: string): string => (HELP[name] ?? '').replace(/\s+/g, ' ');
const takes = (name: string, option: string): boolean => helpOptions(HELP[name] ?? '').some((o) => o.name === option);
const CAPTURE_COMMANDS = NAMES.filter((n) => takes(n, 'read-file'));
const OUTPUT_COMMANDS = NAMES.filter((n) => takes(n, 'output'));

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bad-args-'));
  fs.mkdirSync(path.join(dir, 'a-directory'));
  fs.mkdirSync(path.join(dir, 'out-dir.svg'));
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a capture, only words\n');
  fs.writeFileSync(path.join(dir, 'empty.pcap'), '');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `roce ARGV` in this process. */
async function roce(argv: readonly string[]): Promise<Ran> {
  const r = await roceHere(...argv);
  return { status: r.code, stdout: r.out, stderr: r.err };
}

/** `roce ARGV` in a process of its own (bin/roce.js), its standard input /dev/null (no terminal, no data). */
function roceProcess(argv: readonly string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [ROCE, ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
      env: { ...process.env, ROCE_NO_NATIVE: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** What every bad case must show: the status, no output, one line on stderr for `command`, no crash. */
function expectRefused(r: Ran, command: string, status: number): void {
  expect(r.stderr).not.toMatch(/internal error/);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(new RegExp(`^roce ${command}: [^\\n]+\\n$`));
  expect(r.status).toBe(status);
}

test('the matrix covers every command cli/main.ts lists, and the capture and output commands among them', () => {
  expect(NAMES).toEqual(expect.arrayContaining(['decode', 'analyze', 'ladder', 'plot', 'replay', 'perftest', 'sim', 'devices']));
  expect(CAPTURE_COMMANDS.sort()).toEqual(['analyze', 'decode', 'ladder', 'plot', 'replay']);
  expect(OUTPUT_COMMANDS.sort()).toEqual(['ladder', 'plot']);
});

// The process ends with the status and the lines the command gave (bin/roce.js, cli/main.ts main).
test('a refused command in a process of its own: the status and line it gives in this one', async () => {
  for (const argv of [
    ['decode', '--no-such-option'],
    ['perftest', '--port'],
  ])
    expect(await roceProcess(argv)).toEqual(await roce(argv));
}, 30_000);

describe.each(NAMES)('roce %s', (name) => {
  const options = helpOptions(HELP[name] ?? '');
  const valued = options.find((o) => o.value !== null);
  const numeric = options.find((o) => o.value === 'N');

  test('its help promises exit status 2 on a usage error', () => {
    expect(flat(name)).toMatch(/Exit status: .*2 (on )?a usage error/);
  });

  test('an unknown option: exit 2, the command and its -h named', async () => {
    const r = await roce([name, '--no-such-option']);
    expectRefused(r, name, 2);
    expect(r.stderr).toBe(`roce ${name}: unknown option --no-such-option (roce ${name} -h)\n`);
  }, 30_000);

  testUnless(valued === undefined ? `roce ${name} takes no option with a value` : null)(
    `a value missing (--${valued?.name ?? 'OPTION'} last): exit 2`,
    async () => {
      const r = await roce([name, `--${valued?.name ?? ''}`]);
      expectRefused(r, name, 2);
      expect(r.stderr).toBe(`roce ${name}: option --${valued?.name ?? ''} needs a value (${valued?.value ?? ''}) (roce ${name} -h)\n`);
    },
    30_000,
  );

  // A command may ask for an argument it requires before it reads the number: that is a usage error too.
  testUnless(numeric === undefined ? `roce ${name} takes no number (no option with the value N)` : null)(
    `a bad number (--${numeric?.name ?? 'OPTION'} x1): exit 2`,
    async () => {
      const r = await roce([name, `--${numeric?.name ?? ''}`, 'x1']);
      expectRefused(r, name, 2);
      expect(r.stderr).toMatch(new RegExp(`\\(roce ${name} -h\\)\\n$`));
    },
    30_000,
  );
});

describe.each(CAPTURE_COMMANDS)('roce %s: an input that is no capture', (name) => {
  // A command that writes a file gets one it can write, so that the input is what it refuses.
  const output = (): string[] => (takes(name, 'output') ? ['-o', path.join(dir, `${name}-out.svg`)] : []);

  test('its help promises exit status 2 for it', () => {
    expect(flat(name)).toMatch(/2 on a usage error, on an input that cannot be read or is not a capture/);
  });

  test.each([
    ['a directory', 'a-directory', /cannot read .*a-directory: is a directory$/],
    ['a missing file', 'no-such.pcap', /cannot read .*no-such\.pcap: no such file$/],
    ['a text file', 'notes.txt', /notes\.txt: not a pcap or pcapng capture: unknown capture magic 0x20746f6e \(not pcap or pcapng\)$/],
    ['an empty file', 'empty.pcap', /empty\.pcap: not a pcap or pcapng capture: capture magic needs 4 bytes but only 0 remain$/],
  ])(
    '%s: exit 2, one line naming it',
    async (what, file, message) => {
      // Named as FILE, and for one of them with -r as well.
      for (const given of what === 'a missing file' ? [[path.join(dir, file)], ['-r', path.join(dir, file)]] : [[path.join(dir, file)]]) {
        const r = await roce([name, ...output(), ...given]);
        expectRefused(r, name, 2);
        expect(r.stderr.trimEnd()).toMatch(message);
      }
    },
    60_000,
  );

  test('no file and an empty standard input (/dev/null, not a terminal): standard input is read, and it is no capture', async () => {
    const r = await roceProcess([name, ...output()]);
    expectRefused(r, name, 2);
    expect(r.stderr).toBe(`roce ${name}: stdin: not a pcap or pcapng capture: capture magic needs 4 bytes but only 0 remain\n`);
  }, 30_000);
});

describe.each(CAPTURE_COMMANDS)('roce %s: a bad value for a shared capture option', (name) => {
  const output = (): string[] => (takes(name, 'output') ? ['-o', path.join(dir, `${name}-out.svg`)] : []);

  test('it takes every shared option', () => {
    for (const option of ['read-file', 'frames', 'time-window', 'qpn', 'conversation'])
      expect({ name, option, taken: takes(name, option) }).toEqual({ name, option, taken: true });
  });

  test.each([
    [['--conversation', '0'], /--conversation must be an integer from 1 to/],
    [['--conversation', 'x'], /--conversation must be an integer from 1 to/],
    [['--qpn', '0x1000000'], /--qpn must be an integer from 0 to 16777215/],
    [['--qpn', ','], /--qpn needs a QP number/],
    [['--frames', '5-2'], /--frames 5-2: the range ends before it starts/],
    [['--time-window', '2ms-1ms'], /--time-window 2ms-1ms: the window ends before it starts/],
    [['--time-window', '1.5xs-'], /--time-window: "1\.5xs" is not a time/],
  ])(
    '%j: exit 2, one line naming the command and its -h, before the capture is read',
    async (argv, message) => {
      // The capture does not exist: the option is refused before the input is looked at.
      const r = await roce([name, ...output(), ...argv, path.join(dir, 'no-such-input.pcap')]);
      expectRefused(r, name, 2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(new RegExp(`\\(roce ${name} -h\\)\\n$`));
    },
    30_000,
  );
});

/** A path no write reaches, found by trying: a read-only folder (not for root), else sysfs. */
function unwritable(): string | null {
  const ro = path.join(os.tmpdir(), `roce-bad-args-ro-${process.pid}`);
  fs.mkdirSync(ro, { recursive: true });
  fs.chmodSync(ro, 0o555);
  for (const candidate of [path.join(ro, 'x.svg'), '/sys/roce-bad-arguments.svg']) {
    try {
      fs.closeSync(fs.openSync(candidate, 'w'));
      fs.rmSync(candidate, { force: true });
    } catch {
      return candidate;
    }
  }
  return null;
}
const UNWRITABLE = unwritable();
afterAll(() => {
  const ro = path.join(os.tmpdir(), `roce-bad-args-ro-${process.pid}`);
  fs.chmodSync(ro, 0o755);
  fs.rmSync(ro, { recursive: true, force: true });
});
const DEV_FULL = fs.existsSync('/dev/full') ? '/dev/full' : null;

describe.each(OUTPUT_COMMANDS)('roce %s -o: a file it cannot write', (name) => {
  test('its help promises exit status 2 for it', () => {
    expect(flat(name)).toMatch(/on an output that cannot be written/);
  });

  test.each([
    ['a directory', () => path.join(dir, 'out-dir.svg'), /is a directory$/],
    ['a missing folder', () => path.join(dir, 'no-such-folder', 'x.svg'), /no such directory$/],
  ])(
    '%s: exit 2, one line naming it, before the capture is read',
    async (_what, dest, message) => {
      // The capture does not exist: the output is refused before the input is looked at.
      const r = await roce([name, '-o', dest(), path.join(dir, 'no-such-input.pcap')]);
      expectRefused(r, name, 2);
      expect(r.stderr.trimEnd()).toMatch(new RegExp(`^roce ${name}: cannot write ${dest().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
      expect(r.stderr.trimEnd()).toMatch(message);
    },
    30_000,
  );

  testUnless(UNWRITABLE === null ? 'no path here refuses a write (a read-only folder does not stop root, and there is no sysfs)' : null)(
    'an unwritable path: exit 2, one line naming it',
    async () => {
      const dest = UNWRITABLE ?? '';
      const r = await roce([name, '-o', dest, SAMPLE]);
      expectRefused(r, name, 2);
      expect(r.stderr).toMatch(
        new RegExp(`^roce ${name}: cannot write ${dest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (permission denied|read-only file system)\\n$`),
      );
    },
    30_000,
  );

  // /dev/full fails every write with ENOSPC, as a full disk does: a link to it named .svg is the file.
  testUnless(DEV_FULL === null ? 'no /dev/full here' : null)(
    'a full disk (ENOSPC): exit 2, one line naming it',
    async () => {
      const dest = path.join(dir, `${name}-full.svg`);
      fs.symlinkSync(DEV_FULL ?? '', dest);
      const r = await roce([name, '-o', dest, SAMPLE]);
      expectRefused(r, name, 2);
      expect(r.stderr).toBe(`roce ${name}: cannot write ${dest}: no space left on device\n`);
    },
    30_000,
  );
});

testUnless(DEV_FULL === null ? 'no /dev/full here' : null)(
  'standard output on a full disk: exit 2, one line, no stack trace',
  () => {
    for (const argv of [
      ['decode', SAMPLE],
      ['analyze', '--json', SAMPLE],
      ['replay', SAMPLE],
    ]) {
      const fd = fs.openSync(DEV_FULL ?? '', 'w');
      try {
        const r = spawnSync(process.execPath, [ROCE, ...argv], { stdio: ['ignore', fd, 'pipe'], encoding: 'utf8', timeout: 30_000 });
        expect(r.stderr).not.toMatch(/internal error|^\s+at /m);
        expect(r.stderr).toMatch(new RegExp(`roce ${argv[0] ?? ''}: cannot write standard output: no space left on device\\n$`));
        expect(r.status).toBe(2);
      } finally {
        fs.closeSync(fd);
      }
    }
  },
  60_000,
);
