/**
 * `roce plot [FILE] -o out.svg`: PSN over time per QP flow, in the style of
 * tcptrace's time-sequence graph: requests, retransmissions, ACKs, READ
 * responses, NAKs, RNR NAKs, CE marks, CNPs and timeout resends drawn
 * distinctly. `--rate`: each flow's rate over time with its CE marks and
 * CNPs; `--sim RESULT.json`: a `roce sim` result's rates and queue. SVG, or
 * HTML by the -o name's extension, as roce ladder chooses.
 */
import * as fs from 'node:fs';
import { isatty } from 'node:tty';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { BAD_INPUT_STATUS, captureInput, isNotACapture, reportNotACapture } from './capture-input';
import {
  NO_CONVERSATION_REASON,
  captureFileOf,
  conversationChoiceOf,
  exitStatusText,
  frameSelectionOf,
  selectionHooks,
  captureSelectionSpecs,
} from './capture-options';
import { choosesConversations, noneChosenText } from '../analysis/conversation-choice';
import { fileErrorText } from '../base/file-error';
import { OUTPUT_FILE_STATUS, outputFileWritable, writeOutputFile } from './output-file';
import { buildPsnSeries, type SeriesFilter } from '../analysis/psn-series';
import { plotSvg } from '../analysis/render/plot-svg';
import { plotHtml } from '../analysis/render/plot-html';
import { type ChartPanel, chartHtml, chartSvg } from '../analysis/render/chart-svg';
import { buildRateSeries } from '../analysis/rate-series';
import { MAX_CONVERSATIONS_SPEC, maxConversationsOf, reportAnalysisEnd } from './analysis-end';
import { notStarResult, starPanels } from '../apps/sim/star-chart';
import type { StarResult } from '../apps/sim/star-scenario';

export const PLOT_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'output',
    short: 'o',
    kind: 'string',
    value: 'FILE',
    help: 'where to write: FILE.html (a page with the SVG and a readout of the point under the pointer) or FILE.svg; "-" for SVG on stdout (required)',
  },
  { name: 'rate', kind: 'flag', help: "each flow's request payload rate over time, with its CE-marked requests (ticks) and the CNPs sent to it (triangles)" },
  {
    name: 'sim',
    kind: 'string',
    value: 'RESULT.json',
    help: "draw a `roce sim --json` result: each flow's rate and the busiest queue over time (no capture needed)",
  },
  { name: 'bin', kind: 'string', value: 'US', help: 'with --rate: the width of a rate bin in µs (default: the capture in 200 bins)' },
  ...captureSelectionSpecs({
    conversation: 'only flows of conversation N, numbered as roce analyze lists them with the same --frames, --time-window and --roce-port',
    qpn: 'only flows of the conversations with one of these QPs at either end',
    frames: 'only frames numbered A to B (A-B, A-, -B or A), judged as a capture of their own',
    'time-window': `only frames whose time since the capture's first frame lies in [FROM, TO], judged as a capture of their own (FROM-, -TO; each a number with s, ms, µs (or us) or ns after it; a bare number is µs)`,
  }),
  { name: 'title', kind: 'string', value: 'TEXT', help: 'title of the picture' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  MAX_CONVERSATIONS_SPEC,
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const PLOT_USAGE = `usage: roce plot [options] -o OUT.html|OUT.svg [FILE]
       roce plot --rate [options] -o OUT.html|OUT.svg [FILE]
       roce plot --sim RESULT.json -o OUT.svg|OUT.html

Draws PSN against time for every requester flow of a capture (one panel per
flow), like tcptrace's time-sequence graph: requests, retransmissions, ACKs,
READ responses, NAKs, RNR NAKs, frames with ECN CE, CNPs and the resends of
ACK timeouts, each with its own marker and a legend. With --rate, each flow's
rate over time with its ECN marks and CNPs; with --sim, a roce sim result's
rates and queue. OUT.html is a page with the SVG and a readout of the marker
under the pointer. The capture is FILE or -r FILE: a file, a FIFO, or - for standard input;
without FILE, standard input is read, unless it is a terminal. --frames and
--time-window take part of the capture and judge it as a capture of its own,
as roce analyze does with them. A capture that ends early (truncated or
corrupt) is drawn up to the problem, which is named.

${formatOptions(PLOT_OPTIONS)}

${exitStatusText('when the picture was drawn from the whole capture', 'when the capture is truncated or corrupt after its header or starts more conversations than --max-conversations (drawn up to the problem)', ['a --sim file that cannot be read or is not a roce sim result', NO_CONVERSATION_REASON])}`;

export async function plotCommand(argv: readonly string[], out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): Promise<number> {
  const args = parseCommand(argv, out, { name: 'plot', options: PLOT_OPTIONS, usage: PLOT_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const file = captureFileOf('plot', args);
  const dest = args.values.get('output');
  if (dest === undefined) throw new UsageError('plot needs -o OUT.html or -o OUT.svg (or -o - for SVG on stdout)');
  const html = /\.html?$/i.test(dest);
  if (dest !== '-' && !html && !/\.svg$/i.test(dest)) throw new UsageError(`-o ${dest}: the name must end in .svg or .html`);
  const writeText = (text: string): boolean => {
    if (dest === '-') out.stdout(text);
    else return writeOutputFile('plot', dest, text, out);
    return true;
  };
  const write = (panels: readonly ChartPanel[], title: string): boolean => writeText(html ? chartHtml(panels, title) : chartSvg(panels, title));
  const simFile = args.values.get('sim');
  if (simFile !== undefined) {
    if (args.flags.has('rate') || file !== undefined) throw new UsageError('--sim draws a roce sim result: no capture, no --rate');
    let j: unknown;
    try {
      j = JSON.parse(fs.readFileSync(simFile, 'utf8'));
    } catch (e) {
      // A JSON error quotes the text it stopped at, line breaks and all: one line here.
      throw new UsageError(`--sim ${simFile}: ${e instanceof SyntaxError ? e.message.replace(/\s+/g, ' ') : `cannot read it: ${fileErrorText(e)}`}`);
    }
    const why = notStarResult(j);
    if (why !== null) throw new UsageError(`--sim ${simFile} is not a \`roce sim --json\` result: ${why}`);
    return write(starPanels(j as StarResult), args.values.get('title') ?? `roce sim: ${simFile.split('/').pop() ?? simFile}`) ? 0 : OUTPUT_FILE_STATUS;
  }
  const f: SeriesFilter = {};
  const choice = conversationChoiceOf(args);
  if (choice.qpns !== null) f.qpns = choice.qpns;
  if (choice.conversation !== null) f.conversation = choice.conversation;
  // A conversation asked for that the capture does not hold: said alone, nothing drawn.
  const noneChosen = (r: { chosen: number; conversations: number }, name: string): boolean => {
    if (r.chosen > 0 || !choosesConversations(choice)) return false;
    out.stderr(`roce plot: ${name}: ${noneChosenText(choice, r.conversations)}\n`);
    return true;
  };
  const selection = frameSelectionOf(args);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const binText = args.values.get('bin');
  if (binText !== undefined && !args.flags.has('rate')) throw new UsageError('--bin applies with --rate');
  const binNs = binText === undefined ? undefined : intValue(binText, 'bin', 1, 1e9) * 1000;
  const maxConversations = maxConversationsOf(args);
  // Seen before the capture is read: a long capture is not analysed for a picture that cannot be written.
  if (!outputFileWritable('plot', dest, out)) return OUTPUT_FILE_STATUS;
  const input = captureInput('plot', file, out, ctx?.stdinIsTerminal ?? isatty(0), PLOT_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  const name = input.name;
  const shortName = name.split('/').pop() ?? name;
  const decode = { rocePort, verifyIcrc: !args.flags.has('ignore-icrc') };
  const select = selectionHooks(selection);
  if (args.flags.has('rate')) {
    const rated = buildRateSeries(input.path, { ...f, ...(binNs !== undefined ? { binNs } : {}) }, { decode, maxConversations, ...select });
    const { series: rs, ended } = rated;
    if (isNotACapture(ended.captureError)) {
      reportNotACapture('plot', name, ended.captureError, out);
      return BAD_INPUT_STATUS;
    }
    if (noneChosen(rated, name)) return BAD_INPUT_STATUS;
    const status = reportAnalysisEnd('plot', name, ended, out);
    if (rs.length === 0) out.stderr('roce plot: no flow passes the filters\n');
    // A time window's bins start with it (the bins count from the capture's first frame).
    const fromUs = selection.fromNs / 1000;
    const panels: ChartPanel[] = rs.map((r) => ({
      title: r.title,
      yLabel: 'Gb/s (request payload)',
      lines: [{ name: 'rate', points: r.gbps.filter(([us]) => us > fromUs) }],
      markers: [
        { name: 'CE-marked request', timesUs: r.ceUs, shape: 'tick', digits: r.digits },
        { name: 'CNP', timesUs: r.cnpUs, shape: 'triangle', digits: r.digits },
      ],
    }));
    return write(panels, args.values.get('title') ?? `rate over time: ${shortName}`) ? status : OUTPUT_FILE_STATUS;
  }
  const psns = buildPsnSeries(input.path, f, { decode, maxConversations, ...select });
  const { series, ended } = psns;
  if (isNotACapture(ended.captureError)) {
    reportNotACapture('plot', name, ended.captureError, out);
    return BAD_INPUT_STATUS;
  }
  if (noneChosen(psns, name)) return BAD_INPUT_STATUS;
  const status = reportAnalysisEnd('plot', name, ended, out);
  if (series.length === 0) out.stderr('roce plot: no flow passes the filters\n');
  const title = args.values.get('title') ?? `PSN over time: ${shortName}`;
  return writeText(html ? plotHtml(series, title) : plotSvg(series, title)) ? status : OUTPUT_FILE_STATUS;
}
