/**
 * `roce decode -T fields -e FIELD -E OPTION`, checked: the fields and options as tshark 4.0 takes
 * them, into the format capture-engine/tshark-output.ts prints.
 */
import { UsageError } from './args';
import { decodeField } from '../capture-engine/ulp-decoding';
import type { FieldsFormat } from '../capture-engine/tshark-output';

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
    if (decodeField(n) === undefined) throw new UsageError(`-e ${n}: not a field roce decode knows (docs/decode.md lists them, by tshark's names)`);
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
