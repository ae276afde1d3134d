/**
 * `roce ladder FILE -o out.html|out.svg`: a sequence (ladder) diagram of one
 * conversation: one arrow per packet, labelled with opcode, PSN and AETH;
 * losses, NAKs, retransmissions and RNR waits highlighted; a true time axis.
 * The HTML page is self-contained and shows decoded fields on hover.
 */
import * as fs from 'node:fs';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { DEFAULT_CAPTURE } from './capture-input';
import { TimelineError, type TimelineFilter, buildTimeline } from '../analysis/timeline';
import { ladderSvg } from '../analysis/render/ladder-svg';
import { ladderHtml } from '../analysis/render/ladder-html';
import { MAX_CONVERSATIONS_SPEC, maxConversationsOf, reportAnalysisEnd } from './analysis-end';

export const LADDER_OPTIONS: readonly OptionSpec[] = [
  { name: 'output', short: 'o', kind: 'string', value: 'FILE', help: 'where to write: FILE.html (interactive) or FILE.svg; "-" for SVG on stdout (required)' },
  { name: 'conversation', short: 'c', kind: 'string', value: 'N', help: 'the conversation number (as `roce analyze` lists them; default: the one with most frames)' },
  { name: 'qpn', kind: 'string', value: 'QPN', help: 'the conversation with this QP number at either end' },
  { name: 'from', kind: 'string', value: 'US', help: 'only packets at or after this time, in microseconds since the first frame' },
  { name: 'to', kind: 'string', value: 'US', help: 'only packets at or before this time, in microseconds since the first frame' },
  { name: 'frames', kind: 'string', value: 'A-B', help: 'only frame numbers in this range (A-B, A-, -B)' },
  { name: 'max', kind: 'string', value: 'N', help: 'draw at most N packets (default 400)' },
  { name: 'title', kind: 'string', value: 'TEXT', help: 'title of the picture' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  MAX_CONVERSATIONS_SPEC,
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const LADDER_USAGE = `usage: roce ladder [options] -o OUT.html|OUT.svg [FILE]

Draws a sequence (ladder) diagram of one RoCE conversation of a capture. The
time axis is linear within each burst of traffic; long idle gaps are cut and
labelled with their length, and each packet's time is printed on the left.
Without FILE, draws captures/rc-conversation.pcap. A capture that ends early
(truncated or corrupt) is drawn up to the problem, which is named, and the exit
status is 1.

${formatOptions(LADDER_OPTIONS)}`;

function usNs(text: string, name: string): number {
  const v = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(v)) throw new UsageError(`--${name} must be a time in microseconds (e.g. 12.5), not ${JSON.stringify(text)}`);
  return Math.round(v * 1000);
}

/** Parses A-B, A-, -B or A into [first, last]. */
export function frameRange(text: string): [number | undefined, number | undefined] {
  const m = /^(\d*)(-?)(\d*)$/.exec(text);
  if (m === null || (m[1] === '' && m[3] === '')) throw new UsageError(`--frames must look like A-B, A-, -B or A, not ${JSON.stringify(text)}`);
  const a = m[1] === '' ? undefined : intValue(m[1] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  const b = m[2] === '' ? a : m[3] === '' ? undefined : intValue(m[3] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  if (a !== undefined && b !== undefined && b < a) throw new UsageError(`--frames ${text}: the range ends before it starts`);
  return [a, b];
}

export async function ladderCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'ladder', options: LADDER_OPTIONS, usage: LADDER_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const dest = args.values.get('output');
  if (dest === undefined) throw new UsageError('ladder needs -o OUT.html or -o OUT.svg (or -o - for SVG on stdout)');
  const html = /\.html?$/i.test(dest);
  if (dest !== '-' && !html && !/\.svg$/i.test(dest)) throw new UsageError(`-o ${dest}: the name must end in .html or .svg`);
  const f: TimelineFilter = {};
  const conv = args.values.get('conversation');
  if (conv !== undefined) f.conversation = intValue(conv, 'conversation', 1, Number.MAX_SAFE_INTEGER);
  const qpn = args.values.get('qpn');
  if (qpn !== undefined) f.qpn = intValue(qpn, 'qpn', 0, 0xffffff);
  const from = args.values.get('from');
  if (from !== undefined) f.fromNs = usNs(from, 'from');
  const to = args.values.get('to');
  if (to !== undefined) f.toNs = usNs(to, 'to');
  const frames = args.values.get('frames');
  if (frames !== undefined) {
    const [a, b] = frameRange(frames);
    if (a !== undefined) f.firstFrame = a;
    if (b !== undefined) f.lastFrame = b;
  }
  const max = args.values.get('max');
  if (max !== undefined) f.maxFrames = intValue(max, 'max', 1, 100000);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const file = args.positionals[0] ?? DEFAULT_CAPTURE;
  const maxConversations = maxConversationsOf(args);
  let text: string;
  let status: number;
  try {
    const t = buildTimeline(file, f, { decode: { rocePort, verifyIcrc: !args.flags.has('ignore-icrc') }, maxConversations });
    status = reportAnalysisEnd('ladder', file, t.ended, out);
    if (t.items.length === 0) out.stderr(`roce ladder: no packet of conversation #${t.conversation} passes the filters\n`);
    const title = args.values.get('title') ?? '';
    text = html ? ladderHtml(t, title) : ladderSvg(t, title);
    if (t.truncated > 0) out.stderr(`roce ladder: drew ${t.items.length} packets, ${t.truncated} more left out (use --max, --frames, --from/--to)\n`);
  } catch (e) {
    if (e instanceof TimelineError) {
      out.stderr(`roce ladder: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (dest === '-') out.stdout(text);
  else fs.writeFileSync(dest, text);
  return status;
}
