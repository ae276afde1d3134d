/** The guessability report (guessability.ts) as a text table, one row per host and kind of value, as ReDMArk's table 1. */
import { GUESS_KIND_LABEL, type GuessReport } from './guessability';

export function guessReportText(r: GuessReport): string {
  const head = ['host', 'value', 'n', 'pattern', 'low byte', 'varying bits', 'entropy', 'verdict'];
  const rows = r.judgements.map((j) => [
    j.host,
    GUESS_KIND_LABEL[j.kind],
    String(j.count),
    j.pattern,
    `${j.lowByteDistinct}/${j.count}`,
    String(j.varyingBits),
    j.entropyBits === null ? '-' : `${j.entropyBits.toFixed(1)} bits`,
    j.verdict,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `  ${cells
      .map((c, i) => (i === 2 || i === 5 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()}\n`;
  let out = 'guessability of the names each host hands out (docs/security.md):\n';
  if (rows.length === 0) return `${out}  no R_Keys, VAs, QP numbers or starting PSNs seen\noverall: unknown\n`;
  out += line(head);
  for (const row of rows) out += line(row);
  for (const j of r.judgements)
    if (j.sample.length > 0) out += `  ${j.host} ${GUESS_KIND_LABEL[j.kind]}: ${j.sample.join(' ')}${j.count > j.sample.length ? ' ...' : ''}\n`;
  return `${out}overall: ${r.verdict}\n`;
}
