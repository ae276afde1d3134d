/**
 * `roce plot FILE -o out.svg`: PSN over time per QP flow, in the style of
 * tcptrace's time-sequence graph: requests, retransmissions, ACKs, READ
 * responses, NAKs and RNR NAKs drawn distinctly.
 */
import * as fs from 'node:fs';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { DEFAULT_CAPTURE } from './decode-command';
import { buildPsnSeries, type SeriesFilter } from '../analysis/psn-series';
import { plotSvg } from '../analysis/render/plot-svg';

export const PLOT_OPTIONS: readonly OptionSpec[] = [
  { name: 'output', short: 'o', kind: 'string', value: 'FILE', help: 'where to write the SVG ("-" for stdout; required)' },
  { name: 'qpn', kind: 'string', value: 'QPN', help: 'only flows of the conversation with this QP number' },
  { name: 'conversation', short: 'c', kind: 'string', value: 'N', help: 'only flows of this conversation' },
  { name: 'title', kind: 'string', value: 'TEXT', help: 'title of the picture' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const PLOT_USAGE = `usage: roce plot [options] -o OUT.svg [FILE]

Draws PSN against time for every requester flow of a capture (one panel per
flow), like tcptrace's time-sequence graph. Without FILE, plots
captures/rc-conversation.pcap.

${formatOptions(PLOT_OPTIONS)}`;

export async function plotCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'plot', options: PLOT_OPTIONS, usage: PLOT_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const dest = args.values.get('output');
  if (dest === undefined) throw new UsageError('plot needs -o OUT.svg (or -o - for stdout)');
  if (dest !== '-' && !/\.svg$/i.test(dest)) throw new UsageError(`-o ${dest}: the name must end in .svg`);
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
  const series = buildPsnSeries(file, f, { decode: { rocePort, verifyIcrc: !args.flags.has('ignore-icrc') } });
  if (series.length === 0) out.stderr('roce plot: no flow passes the filters\n');
  const svg = plotSvg(series, args.values.get('title') ?? `PSN over time: ${file.split('/').pop() ?? file}`);
  if (dest === '-') out.stdout(svg);
  else fs.writeFileSync(dest, svg);
  return 0;
}
