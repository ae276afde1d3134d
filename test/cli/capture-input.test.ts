/**
 * The capture a capture command reads is the one the user gave: FILE, `-r FILE`, `-`, or, with no
 * file named, standard input when it is not a terminal. With a terminal there and no file, the
 * command prints its usage and exits 2. No file of the project's own is ever read instead: a
 * capture piped in is what is analysed, and its verdict is the exit status.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { run } from '../../cli/main';
import { commandContext } from '../../cli/command';
import { memoryOutput } from '../../cli/output';
import { testUnless } from '../support/skip';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const CAPTURES = path.join(ROOT, 'captures');
const RC = path.join(CAPTURES, 'rc-conversation.pcap');
const MALFORMED = path.join(CAPTURES, 'malformed.pcap');

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `roce ARGV` with `input` on standard input (a pipe), or /dev/null without one. */
function roce(argv: readonly string[], input?: Uint8Array): Ran {
  const r = spawnSync(process.execPath, [ROCE, ...argv], {
    ...(input === undefined ? { stdio: ['ignore', 'pipe', 'pipe'] as const } : { input }),
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The five capture commands, each with what it needs besides its input. */
const COMMANDS: readonly (readonly string[])[] = [['decode'], ['analyze'], ['ladder', '-o', '-'], ['plot', '-o', '-'], ['replay']];

describe('no file named, a capture piped in: the capture is what is read', () => {
  test.each(COMMANDS)('roce %s: what the file gives, named stdin', (...argv) => {
    const fromFile = roce([...argv, RC]);
    const piped = roce(argv, fs.readFileSync(RC));
    expect(piped.status).toBe(fromFile.status);
    expect(piped.stderr).toBe(fromFile.stderr.replaceAll(RC, 'stdin'));
    expect(piped.stdout).toBe(fromFile.stdout.replaceAll(`${RC}:`, 'stdin:').replaceAll('rc-conversation.pcap', 'stdin'));
    expect(piped.stdout).not.toBe('');
  });

  test("a CI job that pipes a bad capture fails: the exit status is the piped capture's verdict", () => {
    const bytes = fs.readFileSync(MALFORMED);
    const piped = roce(['analyze', '--fail-on', 'any,icrcBad,malformed'], bytes);
    expect(piped.status).toBe(1);
    expect(piped.stdout).toMatch(/^stdin: 10 frames, 10 RoCE \(1 bad ICRC, 6 malformed\)/);
    expect(piped.stderr).toContain('roce analyze: stdin: --fail-on: flag icrcBad: 1 frame');
    expect(piped.stderr).not.toContain('rc-conversation');
    expect(roce(['analyze', '--fail-on', 'any,icrcBad,malformed', MALFORMED]).status).toBe(1);
    const decoded = roce(['decode', '--json'], bytes);
    expect(decoded.stdout).toBe(roce(['decode', '--json', MALFORMED]).stdout);
  });
});

describe('-r FILE, as tshark takes it', () => {
  test.each(COMMANDS)('roce %s -r FILE is roce %s FILE', (...argv) => {
    expect(roce([...argv, '-r', RC])).toEqual(roce([...argv, RC]));
  });

  test('FILE and -r FILE together are a usage error', () => {
    const r = roce(['decode', '-r', RC, RC]);
    expect(r).toEqual({
      status: 2,
      stdout: '',
      stderr: `roce decode: decode reads one capture: give FILE or -r FILE, not both (${RC}, ${RC}) (roce decode -h)\n`,
    });
  });
});

describe('no file named and a terminal on standard input: the usage, exit 2', () => {
  // The decision is the context's (cli/command.ts); main makes it from isatty(0).
  test.each(COMMANDS)('roce %s, told standard input is a terminal', async (...argv) => {
    const o = memoryOutput();
    expect(await run(argv, o, commandContext(process.env, true))).toBe(2);
    expect(o.out).toBe('');
    expect(o.err).toMatch(
      new RegExp(
        `^roce ${argv[0] ?? ''}: no capture given: name a FILE \\(or -r FILE\\), or pipe one into standard input \\(roce ${argv[0] ?? ''} -h\\)\\nusage: roce ${argv[0] ?? ''} `,
      ),
    );
    // `-` names standard input, a terminal here: refused as well.
    const dash = memoryOutput();
    expect(await run([...argv, '-'], dash, commandContext(process.env, true))).toBe(2);
    expect(dash.err).toMatch(/standard input is a terminal/);
  });

  // `script` runs the command with a pseudo-terminal on its standard input, as a user at a shell.
  testUnless(spawnSync('script', ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0 ? null : 'script (util-linux) is not installed')(
    'in a real terminal (script -qec)',
    () => {
      for (const argv of [['analyze', '--fail-on', 'any'], ['decode']]) {
        const r = spawnSync('script', ['-qec', [process.execPath, ROCE, ...argv].join(' '), '/dev/null'], {
          encoding: 'utf8',
          timeout: 60_000,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        expect(r.status).toBe(2);
        expect(r.stdout).toContain(`roce ${argv[0] ?? ''}: no capture given`);
        expect(r.stdout).toContain(`usage: roce ${argv[0] ?? ''} [options] [FILE]`);
      }
    },
  );
});

describe('no file named and standard input /dev/null: not a terminal, so read, and it is empty', () => {
  test.each(COMMANDS)('roce %s: exit 2, said in one line, nothing on stdout', (...argv) => {
    expect(roce(argv)).toEqual({
      status: 2,
      stdout: '',
      stderr: `roce ${argv[0] ?? ''}: stdin: not a pcap or pcapng capture: capture magic needs 4 bytes but only 0 remain\n`,
    });
  });
});
