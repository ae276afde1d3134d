/**
 * The congestion-control options: `--cc dcqcn|dcqcn-paper|off` and `--cc-param` with
 * mlx5's cc_params names, for `roce sim` and the commands on a real link.
 */
import { type OptionSpec, UsageError } from './args';
import type { ParsedArgs } from './args';
import { DCQCN_PAPER_PARAMS, type CongestionConfig, type NpParams, type RpParams } from '../stack/congestion/parameters';

/** How late Node's timers fire on the real clock, at most, for the pacer to catch up (µs). */
export const REAL_CLOCK_PACER_SLACK_US = 2000;

export const CC_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'cc',
    kind: 'string',
    value: 'MODE',
    help: "congestion control: dcqcn (ECN-capable frames, CNPs for CE marks, DCQCN with the mlx5 defaults), dcqcn-paper (the DCQCN paper's parameters) or off (default off)",
  },
  {
    name: 'cc-param',
    kind: 'string',
    value: 'LIST',
    help: "DCQCN parameters over the mode's, by their mlx5 cc_params names, e.g. rp_time_reset=55,rp_ai_rate=40",
  },
  {
    name: 'cc-line-rate',
    kind: 'string',
    value: 'MBPS',
    help: 'with --cc: the line rate of the sending NIC, Mb/s: a QP starts from it, recovers to it, and is paced at it while not limited, as a NIC never sends faster than its wire (default 100000: no pacing until the first CNP)',
  },
];

/** rp_time_reset=55,... into DCQCN parameters (mlx5 names to the stack's camelCase). */
export function ccParamsValue(text: string): Partial<RpParams & NpParams> {
  const out: Record<string, number> = {};
  for (const part of text.split(',')) {
    const m = /^((?:rp|np)_[a-z_]+)=(-?\d+(?:\.\d+)?)$/.exec(part.trim());
    if (m === null) throw new UsageError(`--cc-param: ${JSON.stringify(part)} must be an mlx5 parameter and a number, e.g. rp_time_reset=55`);
    out[(m[1] as string).replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = Number(m[2]);
  }
  return out as Partial<RpParams & NpParams>;
}

/** The parameters of `--cc MODE` and `--cc-param`: null for off. */
export function ccModeParams(mode: string, extra: string | undefined): Partial<RpParams & NpParams> | null {
  if (mode !== 'dcqcn' && mode !== 'dcqcn-paper' && mode !== 'off' && mode !== 'none')
    throw new UsageError(`--cc must be dcqcn, dcqcn-paper or off, not ${JSON.stringify(mode)}`);
  if (mode === 'off' || mode === 'none') {
    if (extra !== undefined) throw new UsageError('--cc-param needs --cc dcqcn or dcqcn-paper');
    return null;
  }
  return { ...(mode === 'dcqcn-paper' ? DCQCN_PAPER_PARAMS : {}), ...(extra !== undefined ? ccParamsValue(extra) : {}) };
}

/** --cc, --cc-param and --cc-line-rate of a command on a real link: the devices' congestion configuration, or null (off). */
export function congestionArgs(args: ParsedArgs): CongestionConfig | null {
  const params = ccModeParams(args.values.get('cc') ?? 'off', args.values.get('cc-param'));
  const rate = args.values.get('cc-line-rate');
  if (params === null) {
    if (rate !== undefined) throw new UsageError('--cc-line-rate needs --cc dcqcn or dcqcn-paper');
    return null;
  }
  const lineRateMbps = rate === undefined ? undefined : Number(rate);
  if (lineRateMbps !== undefined && !(Number.isFinite(lineRateMbps) && lineRateMbps >= 1 && lineRateMbps <= 10_000_000))
    throw new UsageError(`--cc-line-rate must be 1..10000000 Mb/s, not ${JSON.stringify(rate)}`);
  // With a line rate given, the pacer holds an unlimited QP to it too: a NIC's scheduler never runs
  // ahead of its wire, and a software stack on a faster link would otherwise burst whole windows.
  return { np: true, rp: true, pacerSlackUs: REAL_CLOCK_PACER_SLACK_US, params, ...(lineRateMbps !== undefined ? { lineRateMbps, paceUnlimited: true } : {}) };
}
