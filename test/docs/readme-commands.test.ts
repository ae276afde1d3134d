/**
 * Every `roce` command the README shows runs as shown.
 *
 * Commands that need nothing but a file (demo, decode, analyze, ladder, plot, replay, sim) run for
 * real, from a scratch folder that holds the files they name: `captures/` as in the repository, and
 * the README's placeholder captures (`capture.pcap`, `trace.pcap`, ...) as copies of a bundled one.
 * The exit status is the one the README's comment states ("exit status 1"), else 0.
 *
 * Commands that need root, a network interface and a peer (perftest, pingpong, rping, ...), or
 * read a live capture from a pipe, cannot run here: each of their options must be one the command's
 * `-h` lists, with a value where it takes one, so that the line is at least one the command accepts.
 *
 * @group long
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roce } from '../support/cli';
import { helpOptions } from '../support/help-options';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'roce.js');
/** Commands that read or write only files. */
const OFFLINE = new Set(['demo', 'decode', 'analyze', 'ladder', 'plot', 'replay', 'sim']);
/** Options whose value names a file the command writes. */
const OUTPUT_OPTIONS = new Set(['-o', '--output', '--pcap', '-w']);

interface Shown {
  /** The README line, as shown. */
  line: string;
  /** The words after `roce`. */
  argv: string[];
  /** It needs root or a pipe from a live capture. */
  live: boolean;
  /** The exit status the README's comment gives. */
  status: number;
}

/** Shell words of a command (single and double quotes; no expansions are used in the README). */
function words(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

function shownCommands(): Shown[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const out: Shown[] = [];
  let inCode = false;
  for (const raw of readme.split('\n')) {
    if (raw.startsWith('```')) {
      inCode = !inCode;
      continue;
    }
    if (!inCode) continue;
    const hash = raw.search(/\s#\s/);
    const code = (hash < 0 ? raw : raw.slice(0, hash)).trim();
    const comment = hash < 0 ? '' : raw.slice(hash);
    // One shell line may hold several commands: a && b, a | b, while a; do ...
    for (const part of code.split(/&&|\||;/)) {
      const w = words(part.trim());
      const at = w.indexOf('./bin/roce.js');
      if (at < 0) continue;
      const before = w.slice(0, at);
      const piped = code.includes('|') && code.indexOf(part.trim()) > code.indexOf('|');
      out.push({
        line: raw.trim(),
        argv: w.slice(at + 1),
        live: before.includes('sudo') || before.includes('while') || piped || !OFFLINE.has(w[at + 1] ?? ''),
        status: /exit status (\d)/.exec(comment) ? Number(/exit status (\d)/.exec(comment)?.[1]) : 0,
      });
    }
  }
  return out;
}

const shown = shownCommands();
const offline = shown.filter((s) => !s.live);
const live = shown.filter((s) => s.live);

test('the README shows commands of both kinds', () => {
  expect(offline.length).toBeGreaterThanOrEqual(15);
  expect(live.length).toBeGreaterThanOrEqual(20);
});

describe('commands that need only files run as shown', () => {
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-readme-'));
    fs.symlinkSync(path.join(ROOT, 'captures'), path.join(dir, 'captures'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** The capture a placeholder name stands for: a bundled one of its format. */
  const standIn = (name: string): string => path.join(ROOT, 'captures', name.endsWith('.pcapng') ? 'rc-conversation.pcapng' : 'rc-conversation.pcap');

  test.each(offline.map((s) => [s.line, s] as const))('%s', (_line, s) => {
    for (let i = 0; i < s.argv.length; i++) {
      const a = s.argv[i] ?? '';
      if (!/\.(pcap|pcapng)$/.test(a) || OUTPUT_OPTIONS.has(s.argv[i - 1] ?? '')) continue;
      if (s.argv[0] === 'demo' || s.argv[0] === 'sim') continue; // they write it
      const p = path.join(dir, a);
      if (!fs.existsSync(p)) fs.copyFileSync(standIn(a), p);
    }
    const r = spawnSync(process.execPath, [BIN, ...s.argv], { cwd: dir, encoding: 'utf8', timeout: 240_000, maxBuffer: 1 << 28 });
    expect({ status: r.status, signal: r.signal, err: r.status === s.status ? '' : r.stderr.slice(0, 2000) }).toEqual({
      status: s.status,
      signal: null,
      err: '',
    });
    if (s.status !== 0) return;
    // What it was asked to write is there; otherwise it printed something.
    const outputs = s.argv.filter((_a, i) => OUTPUT_OPTIONS.has(s.argv[i - 1] ?? ''));
    for (const o of outputs) expect({ o, bytes: fs.statSync(path.join(dir, o)).size > 0 }).toEqual({ o, bytes: true });
    if (outputs.length === 0) expect(r.stdout.length + r.stderr.length).toBeGreaterThan(0);
  });
});

describe('commands that need root and a peer take every option they are shown with', () => {
  const helps = new Map<string, string>();
  async function help(command: string): Promise<string> {
    let h = helps.get(command);
    if (h === undefined) {
      const r = await roce(command, '-h');
      expect(r.code).toBe(0);
      h = r.out;
      helps.set(command, h);
    }
    return h;
  }

  test.each(live.map((s) => [s.line, s] as const))('%s', async (_line, s) => {
    const [command = '', ...rest] = s.argv;
    const h = await help(command);
    const unknown: string[] = [];
    for (let i = 0; i < rest.length; i++) {
      const a = rest[i] ?? '';
      if (!a.startsWith('-') || a === '-' || /^-\d/.test(a)) continue;
      const name = a.replace(/=.*$/, '');
      const spec = helpOptions(h).find((o) => name === `--${o.name}` || (o.short !== null && name === `-${o.short}`));
      if (spec === undefined) {
        unknown.push(a);
        continue;
      }
      if (spec.value !== null && !a.includes('=')) i++; // its value
    }
    expect(unknown).toEqual([]);
  });
});
