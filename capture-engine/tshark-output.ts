/**
 * `roce decode`'s output in tshark's forms: `-T fields -e FIELD -E OPTION` lines (cli/fields-option.ts
 * reads the options), the `-x` hex dump, and the `-t ad|a|ud|u` clock columns, each as tshark 4.0 prints it
 * (test/crosscheck/tshark-cli.test.ts holds them to tshark's text).
 */
import type { FieldDef, FieldFrame } from '../packets/frame-fields';

/** -T fields: the fields and the -E options, as structured-clonable data. */
export interface FieldsFormat {
  names: readonly string[];
  /** Between fields (-E separator=, default a tab). */
  separator: string;
  /** A first line of the field names (-E header=y). */
  header: boolean;
  /** Around each value that is not empty (-E quote=d|s|n): '"', "'" or ''. */
  quote: string;
  /** Which occurrences of a field (-E occurrence=a|f|l): 0 all, 1 the first, -1 the last. */
  occurrence: number;
  /** Between a field's occurrences (-E aggregator=, default a comma). */
  aggregator: string;
}

/** The -E header=y line (without its newline). */
export function fieldsHeader(f: FieldsFormat): string {
  return f.names.join(f.separator);
}

/** One frame's -T fields line (without its newline). */
export function fieldsLine(defs: readonly FieldDef[], frame: FieldFrame, f: FieldsFormat): string {
  let line = '';
  for (let i = 0; i < defs.length; i++) {
    const d = defs[i] as FieldDef;
    let vs = d.values(frame);
    if (f.occurrence > 0) vs = vs.slice(f.occurrence - 1, f.occurrence);
    else if (f.occurrence < 0) vs = vs.slice(-1);
    if (i > 0) line += f.separator;
    if (vs.length > 0) line += `${f.quote}${vs.map((v) => d.text(v)).join(f.aggregator)}${f.quote}`;
  }
  return line;
}

/**
 * tshark -x: 16 bytes a line, each line its offset (4 hex digits, more past 0xffff), the bytes in
 * hex and as ASCII (`.` for a byte that is not printable). The lines end with newlines.
 */
export function hexDump(bytes: Uint8Array): string {
  const width = bytes.length > 0x10000 ? 8 : 4;
  let out = '';
  for (let off = 0; off < bytes.length; off += 16) {
    const row = bytes.subarray(off, off + 16);
    let hex = '';
    let ascii = '';
    for (let i = 0; i < row.length; i++) {
      const b = row[i] ?? 0;
      hex += `${i > 0 ? ' ' : ''}${b.toString(16).padStart(2, '0')}`;
      ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
    }
    out += `${off.toString(16).padStart(width, '0')}  ${hex.padEnd(47)}   ${ascii}\n`;
  }
  return out;
}

const two = (n: number): string => String(n).padStart(2, '0');

/**
 * The clock columns of `-t`: `ad` `2024-01-15 12:00:00.000001184` and `a` `12:00:00.000001184` in
 * the local time zone (as tshark: the TZ environment variable decides), `ud` and `u` the same in
 * UTC. The decimals are the capture's (`digits`), as in the other columns.
 */
export function clockText(sec: number, nsec: number, digits: number, mode: 'ad' | 'a' | 'ud' | 'u'): string {
  const d = new Date(sec * 1000);
  const utc = mode === 'ud' || mode === 'u';
  const [y, mo, day, h, mi, s] = utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
  let frac = String(nsec).padStart(9, '0');
  // A fraction with digits beyond the file's decimals keeps them all, as the seconds columns do.
  if (digits < 9 && /^0*$/.test(frac.slice(digits))) frac = frac.slice(0, digits);
  const clock = `${two(h)}:${two(mi)}:${two(s)}${frac === '' ? '' : `.${frac}`}`;
  return mode === 'ad' || mode === 'ud' ? `${y}-${two(mo)}-${two(day)} ${clock}` : clock;
}
