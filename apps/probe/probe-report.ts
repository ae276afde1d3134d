/**
 * What `roce probe` prints: a text table of the figures (measured beside configured, the verdict
 * and its IBTA clause, then one line of detail each), and `--fail-on`, which figures fail a run.
 */
import { FIGURE_KINDS, type Figure, type FigureKind } from './measurements';
import type { ProbeResult } from './probe-result';

export const FAIL_ON_ANY = 'any';

/** The figure kinds `names` ask for (`any` = all); `unknown` lists the names that are neither. */
export function parseProbeFailOn(names: readonly string[]): { kinds: Set<FigureKind>; unknown: string[] } {
  const kinds = new Set<FigureKind>();
  const unknown: string[] = [];
  for (const raw of names.flatMap((n) => n.split(','))) {
    const n = raw.trim();
    if (n === '') continue;
    if (n === FAIL_ON_ANY) for (const k of FIGURE_KINDS) kinds.add(k);
    else if ((FIGURE_KINDS as readonly string[]).includes(n)) kinds.add(n as FigureKind);
    else unknown.push(n);
  }
  return { kinds, unknown };
}

/** One line per failed figure of the kinds asked for; empty = the run passes. */
export function probeFailures(result: ProbeResult, kinds: ReadonlySet<FigureKind>): string[] {
  return result.figures
    .filter((f) => f.verdict === 'fail' && kinds.has(f.kind))
    .map((f) => `${f.kind} (QP ${f.qp}, PSN ${f.psn}, line ${f.eventLine}): ${f.detail}`);
}

const us = (ns: number | null): string => (ns === null ? '-' : `${(ns / 1000).toFixed(3)} µs`);

/** A figure's configured value in its unit: a time for the timers, a count or PSN otherwise. */
function configuredText(f: Figure): string {
  if (f.configured === null) return '-';
  switch (f.kind) {
    case 'timeoutRetransmit':
    case 'rnrWait':
    case 'ackDelay':
    case 'cnpGeneration':
    case 'cnpSpacing':
    case 'rateRecovery':
      return us(f.configured);
    case 'rateCut':
      return `${f.configured.toFixed(2)} %`;
    case 'retryCount':
      return `retry_cnt ${f.configured}`;
    default:
      return `PSN ${f.configured}`;
  }
}

function valueText(f: Figure): string {
  if (f.value === null) return '-';
  switch (f.kind) {
    case 'nakGeneration':
      return `${f.value} NAK${f.value === 1 ? '' : 's'}`;
    case 'retryCount':
      return `${f.value} resend${f.value === 1 ? '' : 's'}`;
    case 'cnpGeneration':
      return `CNP ${f.value}`;
    case 'cnpSpacing':
      return `${f.value} CNP${f.value === 1 ? '' : 's'}`;
    case 'rateCut':
      return `${f.value.toFixed(2)} %`;
    case 'rateRecovery':
      return `${f.value} increase${f.value === 1 ? '' : 's'}`;
    default:
      return `PSN ${f.value}`;
  }
}

function table(rows: readonly string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => [...(r[c] ?? '')].length)));
  return rows.map((r) =>
    r
      .map((cell, c) => cell + ' '.repeat((widths[c] ?? 0) - [...cell].length))
      .join('  ')
      .trimEnd(),
  );
}

/** The report's first lines: the scenario, the DUT and the run; where the timestamps come from. */
export function probeHeader(r: ProbeResult): string[] {
  return [
    `scenario ${r.scenario}: DUT ${r.dut.role} (${r.dut.tool}) on the ${r.dut.driver} link; ${(r.durationNs / 1e6).toFixed(3)} ms, ${r.frames.tx} frames sent, ${r.frames.rx} received, ${r.frames.dropped} dropped by the events`,
    `timestamps: ${r.timestamps.where}; error ±${r.timestamps.errorNs} ns; path round trip ${us(r.pathRttNs)} (the DUT column removes it from figures that span it)`,
  ];
}

/** The figures' table: a header row, then one row per figure (the text report's and the HTML report's). */
export function figureRows(r: ProbeResult): string[][] {
  const rows = [['figure', 'QP', 'PSN', 'measured', 'DUT', 'configured', 'seen', 'verdict', 'clause']];
  for (const f of r.figures)
    rows.push([f.kind, String(f.qp), String(f.psn), us(f.measuredNs), us(f.dutNs), configuredText(f), valueText(f), f.verdict, f.clause]);
  return rows;
}

/** "QP 0: SUCCESS; ...": how the DUT's work requests ended, or null when not known. */
export function dutCompletionsText(r: ProbeResult): string | null {
  const dut = r.dutCompletions.map((c, i) => (c.length === 0 ? null : `QP ${i}: ${c.join(', ')}`)).filter((x): x is string => x !== null);
  return dut.length === 0 ? null : dut.join('; ');
}

/** The text report of a run. */
export function probeText(r: ProbeResult): string {
  const lines = [...probeHeader(r), ''];
  if (r.figures.length === 0) {
    lines.push(NO_FIGURES);
  } else {
    lines.push(...table(figureRows(r)), '');
    for (const f of r.figures) lines.push(`${f.kind} (line ${f.eventLine}): ${f.detail}`);
  }
  const dut = dutCompletionsText(r);
  if (dut !== null) lines.push('', `DUT's work completions: ${dut}`);
  return `${lines.join('\n')}\n`;
}

export const NO_FIGURES = 'no figures: the scenario has no measured event';
