/**
 * `roce plot FILE -o out.svg`: PSN over time per QP flow, in the style of
 * tcptrace's time-sequence graph: requests, retransmissions, ACKs, READ
 * responses, NAKs and RNR NAKs drawn distinctly. `--rate`: each flow's rate
 * over time with its CE marks and CNPs; `--sim RESULT.json`: a `roce sim`
 * result's rates and queue. SVG, or HTML for the rate pictures.
 */
import * as fs from 'node:fs';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { DEFAULT_CAPTURE } from './capture-input';
import { buildPsnSeries, type SeriesFilter } from '../analysis/psn-series';
import { plotSvg } from '../analysis/render/plot-svg';
import { type ChartPanel, chartHtml, chartSvg } from '../analysis/render/chart-svg';
import { buildRateSeries } from '../analysis/rate-series';
import { MAX_CONVERSATIONS_SPEC, maxConversationsOf, reportAnalysisEnd } from './analysis-end';
import { notStarResult, starPanels } from '../apps/sim/star-chart';
import type { StarResult } from '../apps/sim/star-scenario';

export const PLOT_OPTIONS: readonly OptionSpec[] = [
  { name: 'output', short: 'o', kind: 'string', value: 'FILE', help: 'where to write: FILE.svg, or FILE.html with --rate or --sim ("-" for SVG on stdout; required)' },
  { name: 'rate', kind: 'flag', help: 'each flow\'s request payload rate over time, with its CE-marked requests (ticks) and the CNPs sent to it (triangles)' },
  { name: 'sim', kind: 'string', value: 'RESULT.json', help: 'draw a `roce sim --json` result: each flow\'s rate and the busiest queue over time (no capture needed)' },
  { name: 'bin', kind: 'string', value: 'US', help: 'with --rate: the width of a rate bin in µs (default: the capture in 200 bins)' },
  { name: 'qpn', kind: 'string', value: 'QPN', help: 'only flows of the conversation with this QP number' },
  { name: 'conversation', short: 'c', kind: 'string', value: 'N', help: 'only flows of this conversation' },
  { name: 'title', kind: 'string', value: 'TEXT', help: 'title of the picture' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  MAX_CONVERSATIONS_SPEC,
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const PLOT_USAGE = `usage: roce plot [options] -o OUT.svg [FILE]
       roce plot --rate [options] -o OUT.svg|OUT.html FILE
       roce plot --sim RESULT.json -o OUT.svg|OUT.html

Draws PSN against time for every requester flow of a capture (one panel per
flow), like tcptrace's time-sequence graph. Without FILE, plots
captures/rc-conversation.pcap. With --rate, each flow's rate over time with
its ECN marks and CNPs; with --sim, a roce sim result's rates and queue. A
capture that ends early (truncated or corrupt) is drawn up to the problem, which
is named, and the exit status is 1.

${formatOptions(PLOT_OPTIONS)}`;

export async function plotCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'plot', options: PLOT_OPTIONS, usage: PLOT_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const dest = args.values.get('output');
  if (dest === undefined) throw new UsageError('plot needs -o OUT.svg (or -o - for stdout)');
  const charts = args.flags.has('rate') || args.values.has('sim');
  if (dest !== '-' && !/\.svg$/i.test(dest) && !(charts && /\.html?$/i.test(dest))) throw new UsageError(`-o ${dest}: the name must end in .svg${charts ? ' or .html' : ''}`);
  const write = (panels: readonly ChartPanel[], title: string): number => {
    const text = /\.html?$/i.test(dest) ? chartHtml(panels, title) : chartSvg(panels, title);
    if (dest === '-') out.stdout(text);
    else fs.writeFileSync(dest, text);
    return 0;
  };
  const simFile = args.values.get('sim');
  if (simFile !== undefined) {
    if (args.flags.has('rate') || args.positionals.length > 0) throw new UsageError('--sim draws a roce sim result: no capture, no --rate');
    let j: unknown;
    try {
      j = JSON.parse(fs.readFileSync(simFile, 'utf8'));
    } catch (e) {
      throw new UsageError(`--sim ${simFile}: ${(e as Error).message}`);
    }
    const why = notStarResult(j);
    if (why !== null) throw new UsageError(`--sim ${simFile} is not a \`roce sim --json\` result: ${why}`);
    return write(starPanels(j as StarResult), args.values.get('title') ?? `roce sim: ${simFile.split('/').pop() ?? simFile}`);
  }
  const f: SeriesFilter = {};
  const qpn = args.values.get('qpn');
  if (qpn !== undefined) f.qpn = intValue(qpn, 'qpn', 0, 0xffffff);
  const conv = args.values.get('conversation');
  if (conv !== undefined) f.conversation = intValue(conv, 'conversation', 1, Number.MAX_SAFE_INTEGER);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const file = args.positionals[0] ?? DEFAULT_CAPTURE;
  if (!fs.existsSync(file)) {
    out.stderr(`roce plot: cannot read ${file}: no such file\n`);
    return 2;
  }
  const decode = { rocePort, verifyIcrc: !args.flags.has('ignore-icrc') };
  const maxConversations = maxConversationsOf(args);
  if (args.flags.has('rate')) {
    const binText = args.values.get('bin');
    const { series: rs, ended } = buildRateSeries(file, { ...f, ...(binText !== undefined ? { binNs: intValue(binText, 'bin', 1, 1e9) * 1000 } : {}) }, { decode, maxConversations });
    const status = reportAnalysisEnd('plot', file, ended, out);
    if (rs.length === 0) out.stderr('roce plot: no flow passes the filters\n');
    const panels: ChartPanel[] = rs.map((r) => ({
      title: r.title,
      yLabel: 'Gb/s (request payload)',
      lines: [{ name: 'rate', points: r.gbps }],
      markers: [
        { name: 'CE-marked request', timesUs: r.ceUs, shape: 'tick' },
        { name: 'CNP', timesUs: r.cnpUs, shape: 'triangle' },
      ],
    }));
    write(panels, args.values.get('title') ?? `rate over time: ${file.split('/').pop() ?? file}`);
    return status;
  }
  if (args.values.has('bin')) throw new UsageError('--bin applies with --rate');
  const { series, ended } = buildPsnSeries(file, f, { decode, maxConversations });
  const status = reportAnalysisEnd('plot', file, ended, out);
  if (series.length === 0) out.stderr('roce plot: no flow passes the filters\n');
  const svg = plotSvg(series, args.values.get('title') ?? `PSN over time: ${file.split('/').pop() ?? file}`);
  if (dest === '-') out.stdout(svg);
  else fs.writeFileSync(dest, svg);
  return status;
}
