/**
 * `roce ladder [FILE] -o out.html|out.svg`: a sequence (ladder) diagram of one
 * conversation: one arrow per packet, labelled with opcode, PSN and AETH;
 * losses, NAKs, retransmissions and RNR waits highlighted; a true time axis.
 * A long conversation is drawn from its first loss-recovery episode or error
 * frame, or from the episode --episode names. The HTML page is self-contained
 * and shows decoded fields on hover.
 */
import { isatty } from 'node:tty';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { BAD_INPUT_STATUS, captureInput, captureStartError, isNotACapture, readWholeInput, reportNotACapture } from './capture-input';
import {
  captureFileOf,
  conversationOf,
  exitStatusText,
  frameSelectionOf,
  qpnsOf,
  selectionHooks,
  takesAll,
  timeNs,
  captureSelectionSpecs,
} from './capture-options';
import { OUTPUT_FILE_STATUS, outputFileWritable, writeOutputFile } from './output-file';
import { TimelineError, type TimelineFilter, buildTimeline } from '../analysis/timeline';
import { ladderSvg } from '../analysis/render/ladder-svg';
import { ladderHtml } from '../analysis/render/ladder-html';
import { windowShownText } from '../analysis/render/ladder-window';
import { MAX_CONVERSATIONS_SPEC, maxConversationsOf, reportAnalysisEnd } from './analysis-end';
import { DECODE_AS_SPEC, decodeAsRules } from './decode-as-option';
import { ulpFrameNotes } from '../capture-engine/ulp-frame-notes';

export const LADDER_OPTIONS: readonly OptionSpec[] = [
  { name: 'output', short: 'o', kind: 'string', value: 'FILE', help: 'where to write: FILE.html (interactive) or FILE.svg; "-" for SVG on stdout (required)' },
  ...captureSelectionSpecs({
    conversation: 'the conversation to draw, numbered as `roce analyze` lists them (default: the one with most frames)',
    qpn: 'the conversation with this QP number at either end',
    frames: 'only frames numbered A to B (A-B, A-, -B or A), judged as a capture of their own',
    'time-window': `only frames whose time since the capture's first frame lies in [FROM, TO], judged as a capture of their own (FROM-, -TO; each a number with s, ms, µs (or us) or ns after it; a bare number is µs)`,
  }),
  {
    name: 'from',
    kind: 'string',
    value: 'US',
    help: "draw only packets at or after this time since the capture's first frame (µs, or with a unit), each judged with every frame before it",
  },
  {
    name: 'to',
    kind: 'string',
    value: 'US',
    help: "draw only packets at or before this time since the capture's first frame (µs, or with a unit), each judged with every frame before it",
  },
  {
    name: 'episode',
    kind: 'string',
    value: 'N',
    help: 'draw from just before loss-recovery episode N, numbered as `roce analyze --episodes` lists them, in its conversation',
  },
  { name: 'max', kind: 'string', value: 'N', help: 'draw at most N packets (default 400)' },
  { name: 'title', kind: 'string', value: 'TEXT', help: 'title of the picture' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  MAX_CONVERSATIONS_SPEC,
  DECODE_AS_SPEC,
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const LADDER_USAGE = `usage: roce ladder [options] -o OUT.html|OUT.svg [FILE]
       roce ladder [options] -o OUT.html|OUT.svg -r FILE

Draws a sequence (ladder) diagram of one RoCE conversation of a capture. The
time axis is linear within each burst of traffic; long idle gaps are cut and
labelled with their length, and each packet's time since the capture's first
frame is printed on the left. FILE may be a FIFO, or - for standard input,
which is read whole before the drawing starts. Without FILE, standard input is
read, unless it is a terminal. --frames and --time-window take part of the
capture and judge it as a capture of its own, as roce analyze does with them;
--from and --to zoom in on a stretch of time, each packet drawn judged with
every frame before it. A conversation longer than --max packets is drawn from
a few packets before its first loss-recovery episode or error frame (an error
NAK, a bad ICRC, a malformed frame), or from the episode --episode names; with
--frames, --time-window, --from or --to, from the first packet they take. The
picture's header says which frames it shows and why, and which other episodes
the conversation has. A capture that ends early (truncated or corrupt) is
drawn up to the problem, which is named.

${formatOptions(LADDER_OPTIONS)}

${exitStatusText('when the diagram was drawn from the whole capture', 'when the capture is truncated or corrupt after its header or starts more conversations than --max-conversations (drawn up to the problem)', ['a capture without the conversation asked for (no RoCE conversation, or none matching --conversation or --qpn)'])}`;

export async function ladderCommand(argv: readonly string[], out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): Promise<number> {
  const args = parseCommand(argv, out, { name: 'ladder', options: LADDER_OPTIONS, usage: LADDER_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const file = captureFileOf('ladder', args);
  const dest = args.values.get('output');
  if (dest === undefined) throw new UsageError('ladder needs -o OUT.html or -o OUT.svg (or -o - for SVG on stdout)');
  const html = /\.html?$/i.test(dest);
  if (dest !== '-' && !html && !/\.svg$/i.test(dest)) throw new UsageError(`-o ${dest}: the name must end in .html or .svg`);
  const f: TimelineFilter = {};
  const conversation = conversationOf(args);
  if (conversation !== null) f.conversation = conversation;
  const qpn = qpnsOf(args, 1)?.[0];
  if (qpn !== undefined) f.qpn = qpn;
  const selection = frameSelectionOf(args);
  // --from and --to zoom in: the packets drawn are judged with the whole capture, where
  // --time-window judges its frames as a capture of their own.
  const from = args.values.get('from');
  if (from !== undefined) f.fromNs = timeNs(from, '--from');
  const to = args.values.get('to');
  if (to !== undefined) f.toNs = timeNs(to, '--to');
  if (f.fromNs !== undefined && f.toNs !== undefined && f.toNs < f.fromNs) throw new UsageError('--to is before --from');
  const episode = args.values.get('episode');
  if (episode !== undefined) {
    if (f.fromNs !== undefined || f.toNs !== undefined) throw new UsageError('--episode picks the stretch to draw: not with --from or --to');
    f.focus = { episode: intValue(episode, 'episode', 1, Number.MAX_SAFE_INTEGER) };
  } else if (!takesAll(selection)) f.focus = 'start';
  const max = args.values.get('max');
  if (max !== undefined) f.maxFrames = intValue(max, 'max', 1, 100000);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const maxConversations = maxConversationsOf(args);
  // The upper-layer protocols' labels work from their rules.
  const ulpRules = decodeAsRules(args.lists.get('decode-as') ?? []);
  // Seen before the capture is read: a long capture is not analysed for a picture that cannot be written.
  if (!outputFileWritable('ladder', dest, out)) return OUTPUT_FILE_STATUS;
  const input = captureInput('ladder', file, out, ctx?.stdinIsTerminal ?? isatty(0), LADDER_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  // The timeline reads the capture twice (the conversations, then the one drawn): a pipe is read whole first.
  let source: string | Uint8Array = input.path;
  if (input.stream) {
    const bytes = readWholeInput('ladder', input, out);
    if (bytes === null) return BAD_INPUT_STATUS;
    source = bytes;
  }
  const select = selectionHooks(selection);
  let text: string;
  let status: number;
  try {
    // The upper-layer protocols: the command, reply or data each frame carries, beside the transport's words.
    const { notes } = ulpFrameNotes(source, ulpRules, rocePort);
    if (notes.size > 0) f.frameNotes = notes;
    const t = buildTimeline(source, f, { decode: { rocePort, verifyIcrc: !args.flags.has('ignore-icrc') }, maxConversations, ...select });
    status = reportAnalysisEnd('ladder', input.name, t.ended, out);
    if (t.items.length === 0) out.stderr(`roce ladder: no packet of conversation #${t.conversation} passes the filters\n`);
    const title = args.values.get('title') ?? '';
    text = html ? ladderHtml(t, title) : ladderSvg(t, title);
    const left = t.window.before + t.truncated;
    if (left > 0)
      out.stderr(`roce ladder: drew ${windowShownText(t)}; ${left} more packets left out (use --episode, --max, --from/--to, --frames, --time-window)\n`);
  } catch (e) {
    if (!(e instanceof TimelineError)) throw e;
    // No conversation in what is not a capture at all: say what it is.
    const start = captureStartError(source);
    if (isNotACapture(start)) reportNotACapture('ladder', input.name, start, out);
    else out.stderr(`roce ladder: ${takesAll(selection) ? '' : 'in the frames selected, '}${e.message}\n`);
    return BAD_INPUT_STATUS;
  }
  if (dest === '-') out.stdout(text);
  else if (!writeOutputFile('ladder', dest, text, out)) return OUTPUT_FILE_STATUS;
  return status;
}
