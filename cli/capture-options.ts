/**
 * The command line the capture commands (`roce decode`, `roce analyze`, `roce ladder`, `roce plot`,
 * `roce replay`) share: where the capture comes from (FILE, `-r FILE`, `-`, or standard input) and
 * which of its frames a command takes (a frame range, a time window, QPNs, a conversation). One
 * table, so that each of these options has one name, one value syntax and one meaning in every
 * command that takes it, and one text for the exit statuses they share.
 */
import { type OptionSpec, type ParsedArgs, UsageError, intValue } from './args';
import type { AnalyzerOptions } from '../analysis/analyzer';
import type { ConversationChoice } from '../analysis/conversation-choice';

/** `-r FILE`, as tshark takes it. */
export const READ_FILE_SPEC: OptionSpec = {
  name: 'read-file',
  short: 'r',
  kind: 'string',
  value: 'FILE',
  help: 'the capture to read, as tshark -r; the same as naming FILE ("-": standard input)',
};

export const FRAMES_SPEC: OptionSpec = { name: 'frames', kind: 'string', value: 'A-B', help: 'only frames numbered A to B in the capture (A-B, A-, -B or A)' };

export const TIME_WINDOW_SPEC: OptionSpec = {
  name: 'time-window',
  kind: 'string',
  value: 'FROM-TO',
  help: "only frames whose time since the capture's first frame lies in [FROM, TO] (FROM-, -TO; each a number with s, ms, us or ns after it; a bare number is µs)",
};

export const QPN_SPEC: OptionSpec = {
  name: 'qpn',
  kind: 'list',
  value: 'QPN[,QPN]',
  help: 'only the conversations with one of these QPs at either end (decimal or 0x-hex)',
};

export const CONVERSATION_SPEC: OptionSpec = {
  name: 'conversation',
  kind: 'string',
  value: 'N',
  help: 'only conversation N, numbered as `roce analyze` lists them (with the same --frames, --time-window and --roce-port)',
};

/** The exit-status reason of a command given --conversation or --qpn that no conversation matches. */
export const NO_CONVERSATION_REASON = 'a --conversation or --qpn that no conversation of the capture (of the frames selected) matches';

/**
 * The options every capture command takes, in the order their helps list them: each command's
 * option table takes this list (through `captureSelectionSpecs`), not the specs one by one.
 */
export const CAPTURE_SELECTION_SPECS: readonly OptionSpec[] = [READ_FILE_SPEC, CONVERSATION_SPEC, QPN_SPEC, FRAMES_SPEC, TIME_WINDOW_SPEC];

/** The long names of CAPTURE_SELECTION_SPECS. */
export type CaptureSelectionOption = 'read-file' | 'conversation' | 'qpn' | 'frames' | 'time-window';

/**
 * CAPTURE_SELECTION_SPECS for one command's table, with the words the command gives some of them
 * (what its --qpn takes, say): each keeps its name, short letter, kind and value syntax.
 */
export function captureSelectionSpecs(help: Readonly<Partial<Record<CaptureSelectionOption, string>>> = {}): OptionSpec[] {
  return CAPTURE_SELECTION_SPECS.map((spec) => {
    const words = help[spec.name as CaptureSelectionOption];
    return words === undefined ? spec : { ...spec, help: words };
  });
}

/** The frames a command takes: numbers in [first, last] and times since the first frame in [fromNs, toNs]. */
export interface FrameSelection {
  first: number;
  last: number;
  fromNs: number;
  toNs: number;
}

export const ALL_FRAMES: Readonly<FrameSelection> = { first: 1, last: Number.MAX_SAFE_INTEGER, fromNs: 0, toNs: Number.MAX_SAFE_INTEGER };

/** Whether `sel` takes every frame. */
export function takesAll(sel: FrameSelection): boolean {
  return sel.first === ALL_FRAMES.first && sel.last === ALL_FRAMES.last && sel.fromNs === ALL_FRAMES.fromNs && sel.toNs === ALL_FRAMES.toNs;
}

/** Whether `sel` takes frame `index`, `timeNs` after the capture's first frame. */
export function selects(sel: FrameSelection, index: number, timeNs: number): boolean {
  return index >= sel.first && index <= sel.last && timeNs >= sel.fromNs && timeNs <= sel.toNs;
}

/**
 * What makes an analysis take only the frames of `sel`, as if the capture held no others: the
 * analyzer's `select`, and an `until` that ends the reading after the range's last frame (what a
 * cut capture would not hold is not read, damage included). `until` also asks `stop`.
 */
export function selectionHooks(sel: FrameSelection, stop?: () => boolean): Pick<AnalyzerOptions, 'select' | 'until'> {
  if (takesAll(sel)) return stop === undefined ? {} : { until: stop };
  // The frame just pushed: the analyzer asks `select` first, on every frame, then `until`.
  let index = 0;
  const select = (i: number, timeNs: number): boolean => {
    index = i;
    return selects(sel, i, timeNs);
  };
  if (sel.last === ALL_FRAMES.last) return stop === undefined ? { select } : { select, until: stop };
  return { select, until: () => index >= sel.last || stop?.() === true };
}

/** The capture a command was given: FILE or `-r FILE` (not both), or undefined for none. */
export function captureFileOf(command: string, args: ParsedArgs): string | undefined {
  const named = args.values.get(READ_FILE_SPEC.name);
  const positional = args.positionals[0];
  if (named !== undefined && positional !== undefined)
    throw new UsageError(`${command} reads one capture: give FILE or -r FILE, not both (${named}, ${positional})`);
  if (args.positionals.length > 1) throw new UsageError(`${command} takes one FILE, got ${args.positionals.length}: ${args.positionals.join(' ')}`);
  return named ?? positional;
}

/** A frame range: A-B, A-, -B or A, as [first, last]. */
export function frameRange(text: string): [number, number] {
  const m = /^(\d*)(-?)(\d*)$/.exec(text);
  if (m === null || (m[1] === '' && m[3] === '')) throw new UsageError(`--frames must look like A-B, A-, -B or A, not ${JSON.stringify(text)}`);
  const a = m[1] === '' ? 1 : intValue(m[1] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  const b = m[2] === '' ? a : m[3] === '' ? Number.MAX_SAFE_INTEGER : intValue(m[3] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  if (b < a) throw new UsageError(`--frames ${text}: the range ends before it starts`);
  return [a, b];
}

const UNIT_DIGITS: Readonly<Record<string, number>> = { s: 9, ms: 6, us: 3, µs: 3, ns: 0 };

/**
 * A time since the first frame, in whole nanoseconds: a decimal number with a unit (s, ms, us or
 * µs, ns), or without one in microseconds, the unit `roce ladder` and `roce analyze` print times in.
 */
export function timeNs(text: string, option: string): number {
  const m = /^(\d+)(?:\.(\d+))?(s|ms|us|µs|ns)?$/.exec(text);
  if (m === null)
    throw new UsageError(`${option}: ${JSON.stringify(text)} is not a time (a number with s, ms, us or ns after it, e.g. 1.5ms; a bare number is µs)`);
  const digits = UNIT_DIGITS[m[3] ?? 'us'] ?? 3;
  const fraction = m[2] ?? '';
  if (fraction.length > digits && /[1-9]/.test(fraction.slice(digits))) throw new UsageError(`${option}: ${text} is finer than a nanosecond`);
  const ns = BigInt(m[1] ?? '0') * 10n ** BigInt(digits) + BigInt(fraction.slice(0, digits).padEnd(digits, '0') || '0');
  if (ns > BigInt(Number.MAX_SAFE_INTEGER)) throw new UsageError(`${option}: ${text} is too long a time`);
  return Number(ns);
}

/** A time window FROM-TO (FROM-, -TO) as [fromNs, toNs]. */
export function timeWindow(text: string): [number, number] {
  const dash = text.indexOf('-');
  if (dash < 0 || text.indexOf('-', dash + 1) >= 0 || text === '-')
    throw new UsageError(`--time-window must look like FROM-TO, FROM- or -TO (e.g. 1.2ms-1.5ms), not ${JSON.stringify(text)}`);
  const from = text.slice(0, dash);
  const to = text.slice(dash + 1);
  const a = from === '' ? 0 : timeNs(from, '--time-window');
  const b = to === '' ? Number.MAX_SAFE_INTEGER : timeNs(to, '--time-window');
  if (b < a) throw new UsageError(`--time-window ${text}: the window ends before it starts`);
  return [a, b];
}

/** The frames `--frames` and `--time-window` select (every frame without them). */
export function frameSelectionOf(args: ParsedArgs): FrameSelection {
  const sel = { ...ALL_FRAMES };
  const frames = args.values.get(FRAMES_SPEC.name);
  if (frames !== undefined) [sel.first, sel.last] = frameRange(frames);
  const window = args.values.get(TIME_WINDOW_SPEC.name);
  if (window !== undefined) [sel.fromNs, sel.toNs] = timeWindow(window);
  return sel;
}

/** The QPNs of `--qpn`, or null without it; `most`: how many the command takes. */
export function qpnsOf(args: ParsedArgs, most = Number.MAX_SAFE_INTEGER): number[] | null {
  const list = args.lists.get(QPN_SPEC.name);
  if (list === undefined) return null;
  if (list.length === 0) throw new UsageError('--qpn needs a QP number');
  if (list.length > most) throw new UsageError(`--qpn takes ${most === 1 ? 'one QP number' : `at most ${most} QP numbers`} here, not ${list.length}`);
  return list.map((q) => intValue(q, 'qpn', 0, 0xffffff));
}

/** The conversation of `--conversation`, or null without it. */
export function conversationOf(args: ParsedArgs): number | null {
  const text = args.values.get(CONVERSATION_SPEC.name);
  return text === undefined ? null : intValue(text, 'conversation', 1, Number.MAX_SAFE_INTEGER);
}

/** The conversations `--conversation` and `--qpn` ask for (analysis/conversation-choice.ts); `mostQpns` as for `qpnsOf`. */
export function conversationChoiceOf(args: ParsedArgs, mostQpns?: number): ConversationChoice {
  return { conversation: conversationOf(args), qpns: qpnsOf(args, mostQpns) };
}

/** `text` broken into lines of at most `width` characters, at spaces. */
function wrap(text: string, width = 78): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}

/**
 * The exit statuses of a capture command, in the words every one of them uses: `ok` says when
 * it is 0, `one` when it is 1 (each a phrase), `two` any reasons of the command's own for 2.
 */
export function exitStatusText(ok: string, one: string, two: readonly string[] = []): string {
  const reasons = [
    'a usage error',
    'an input that cannot be read or is not a capture (no pcap or pcapng file header: an empty input, a text file)',
    'an output that cannot be written',
    ...two,
  ].map((r) => `on ${r}`);
  const last = reasons.pop() ?? '';
  return wrap(`Exit status: 0 ${ok}; 1 ${one}; 2 ${reasons.join(', ')}, or ${last}. An input that is not a capture is said before anything is printed.`);
}
