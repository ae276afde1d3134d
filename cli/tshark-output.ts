/**
 * `roce decode`'s output in tshark's forms: `-T fields -e FIELD -E OPTION` lines, the `-x` hex
 * dump, and the `-t ad|a|ud|u` clock columns, each as tshark 4.0 prints it
 * (test/crosscheck/tshark-cli.test.ts holds them to tshark's text).
 */
import { UsageError } from './args';
import { type FieldDef, type FieldFrame, frameField } from '../packets/frame-fields';

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

/** tshark's `/t` and `/s` for a tab and a space, else the character itself. */
function separatorChar(v: string, option: string): string {
  if (v === '/t') return '\t';
  if (v === '/s') return ' ';
  if (v.length !== 1) throw new UsageError(`-E ${option}=${v}: give one character, /t (tab) or /s (space)`);
  return v;
}

/** The -T fields format of these -e fields and -E options; a bad option or unknown field is a UsageError. */
export function fieldsFormat(names: readonly string[], options: readonly string[]): FieldsFormat {
  if (names.length === 0) throw new UsageError('-T fields needs at least one -e FIELD');
  for (const n of names) {
    if (frameField(n) === undefined) throw new UsageError(`-e ${n}: not a field roce decode knows (docs/decode.md lists them, by tshark's names)`);
  }
  const f: FieldsFormat = { names, separator: '\t', header: false, quote: '', occurrence: 0, aggregator: ',' };
  for (const o of options) {
    const eq = o.indexOf('=');
    const key = eq < 0 ? o : o.slice(0, eq);
    const v = eq < 0 ? '' : o.slice(eq + 1);
    switch (key) {
      case 'header':
        if (v !== 'y' && v !== 'n') throw new UsageError(`-E header=${v}: give y or n`);
        f.header = v === 'y';
        break;
      case 'separator':
        f.separator = separatorChar(v, key);
        break;
      case 'aggregator':
        f.aggregator = separatorChar(v, key);
        break;
      case 'quote':
        if (v !== 'd' && v !== 's' && v !== 'n') throw new UsageError(`-E quote=${v}: give d (double), s (single) or n (none)`);
        f.quote = v === 'd' ? '"' : v === 's' ? "'" : '';
        break;
      case 'occurrence':
        if (v === 'a') f.occurrence = 0;
        else if (v === 'f') f.occurrence = 1;
        else if (v === 'l') f.occurrence = -1;
        else throw new UsageError(`-E occurrence=${v}: give a (all), f (first) or l (last)`);
        break;
      default:
        throw new UsageError(`-E ${o}: the options are header=y|n, separator=C, quote=d|s|n, occurrence=a|f|l and aggregator=C`);
    }
  }
  return f;
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
