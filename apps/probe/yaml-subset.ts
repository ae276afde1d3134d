/**
 * The YAML subset a `roce probe` scenario is written in, read without a dependency: block
 * mappings and block sequences by indentation (spaces only), flow sequences of scalars
 * (`[a, b]`), plain, single- and double-quoted scalars, `#` comments and one optional leading
 * `---`. Everything else YAML has (anchors and aliases, tags, block scalars `|` `>`, flow
 * mappings, several documents, tabs in indentation, `? ` keys, merge keys) is refused with a
 * `ProbeError` naming the line, never read as something else.
 *
 * Each node keeps its line, so the scenario's validation can say where a bad value is.
 */
import { ProbeError, ProbeErrorCode } from './probe-error';

export type YamlScalar = string | number | boolean | null;

export type YamlNode =
  | { readonly kind: 'scalar'; readonly value: YamlScalar; readonly line: number }
  | { readonly kind: 'seq'; readonly items: readonly YamlNode[]; readonly line: number }
  | { readonly kind: 'map'; readonly entries: ReadonlyMap<string, { readonly keyLine: number; readonly value: YamlNode }>; readonly line: number };

/** A plain value: what the node holds, without lines. */
export type YamlValue = YamlScalar | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  indent: number;
  text: string;
  line: number;
}

function fail(line: number, message: string): never {
  throw new ProbeError(ProbeErrorCode.YAML, message, line);
}

/** The line without its comment (a `#` at the start or after a space, outside quotes), trailing spaces cut. */
function stripComment(text: string, line: number): string {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) {
        // '' inside a single-quoted scalar is an escaped quote
        if (quote === "'" && text[i + 1] === "'") i++;
        else quote = null;
      }
      continue;
    }
    if ((c === '"' || c === "'") && (i === 0 || /[\s:[,-]/.test(text[i - 1] ?? ''))) quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1] ?? ''))) return text.slice(0, i).trimEnd();
  }
  if (quote !== null) fail(line, `unterminated ${quote === '"' ? 'double' : 'single'}-quoted scalar`);
  return text.trimEnd();
}

function splitLines(source: string): Line[] {
  const out: Line[] = [];
  const raw = source.split(/\r?\n/);
  for (let i = 0; i < raw.length; i++) {
    const n = i + 1;
    const r = raw[i] ?? '';
    const lead = /^[ \t]*/.exec(r)?.[0] ?? '';
    if (lead.includes('\t') && r.trim() !== '') fail(n, 'a tab in the indentation (YAML indents with spaces only)');
    const text = stripComment(r.slice(lead.length), n);
    if (text === '') continue;
    if (text === '---' || text.startsWith('--- ')) {
      if (out.length > 0) fail(n, "a second document ('---'): one scenario per file");
      if (text !== '---') fail(n, "content after '---' on its line is outside the subset");
      continue;
    }
    if (text === '...') fail(n, "a document end marker ('...') is outside the subset");
    out.push({ indent: lead.length, text, line: n });
  }
  return out;
}

const INT = /^[-+]?[0-9]+$/;
const HEX = /^0x[0-9a-fA-F]+$/;
const FLOAT = /^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$/;

function doubleQuoted(body: string, line: number): string {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      default:
        fail(line, `escape \\${e ?? ''} is outside the subset (\\n, \\t, \\", \\\\, \\/)`);
    }
  }
  return out;
}

/** A quoted scalar at the start of `text`: its value and where it ends, or null when `text` is not quoted. */
function quoted(text: string, line: number): { value: string; end: number } | null {
  const q = text[0];
  if (q !== '"' && q !== "'") return null;
  for (let i = 1; i < text.length; i++) {
    const c = text[i];
    if (q === '"' && c === '\\') {
      i++;
      continue;
    }
    if (c !== q) continue;
    if (q === "'" && text[i + 1] === "'") {
      i++;
      continue;
    }
    const body = text.slice(1, i);
    return { value: q === '"' ? doubleQuoted(body, line) : body.replaceAll("''", "'"), end: i + 1 };
  }
  return fail(line, `unterminated ${q === '"' ? 'double' : 'single'}-quoted scalar`);
}

function plainScalar(text: string, line: number): YamlScalar {
  const first = text[0] ?? '';
  if (first === '&' || first === '*') fail(line, `anchors and aliases ('${first}') are outside the subset`);
  if (first === '!') fail(line, "tags ('!') are outside the subset");
  if (first === '|' || first === '>') fail(line, `block scalars ('${first}') are outside the subset`);
  if (first === '{') fail(line, "flow mappings ('{...}') are outside the subset; write the mapping as indented lines");
  if (text === '?' || text.startsWith('? ')) fail(line, "complex keys ('?') are outside the subset");
  if (first === '@' || first === '`' || first === '%') fail(line, `a plain scalar cannot start with '${first}'`);
  if (/:(\s|$)/.test(text)) fail(line, `'${text}' holds ': ': a mapping on one line is outside the subset (quote the value if it is text)`);
  if (text === 'true' || text === 'True' || text === 'TRUE') return true;
  if (text === 'false' || text === 'False' || text === 'FALSE') return false;
  if (text === 'null' || text === 'Null' || text === 'NULL' || text === '~') return null;
  if (INT.test(text) || FLOAT.test(text)) {
    const v = Number(text);
    if (!Number.isFinite(v)) fail(line, `number ${text} is out of range`);
    if (INT.test(text) && !Number.isSafeInteger(v)) fail(line, `integer ${text} is beyond 2^53`);
    return v;
  }
  if (HEX.test(text)) {
    const v = Number.parseInt(text.slice(2), 16);
    if (!Number.isSafeInteger(v)) fail(line, `integer ${text} is beyond 2^53`);
    return v;
  }
  return text;
}

/** A value written on one line: a quoted or plain scalar, or a flow sequence of scalars. */
function inlineValue(text: string, line: number): YamlNode {
  const q = quoted(text, line);
  if (q !== null) {
    if (q.end !== text.length) fail(line, `text after the closing quote: '${text.slice(q.end)}'`);
    return { kind: 'scalar', value: q.value, line };
  }
  if (text[0] === '[') return flowSequence(text, line);
  return { kind: 'scalar', value: plainScalar(text, line), line };
}

function flowSequence(text: string, line: number): YamlNode {
  if (!text.endsWith(']')) fail(line, "a flow sequence must end with ']' on its line");
  const body = text.slice(1, -1).trim();
  const items: YamlNode[] = [];
  if (body === '') return { kind: 'seq', items, line };
  let rest = body;
  for (;;) {
    rest = rest.trimStart();
    let value: YamlScalar;
    const q = quoted(rest, line);
    if (q !== null) {
      value = q.value;
      rest = rest.slice(q.end).trimStart();
    } else {
      const comma = rest.indexOf(',');
      const item = (comma < 0 ? rest : rest.slice(0, comma)).trim();
      if (item === '') fail(line, 'an empty item in a flow sequence');
      if (item[0] === '[') fail(line, 'nested flow sequences are outside the subset');
      value = plainScalar(item, line);
      rest = comma < 0 ? '' : rest.slice(comma);
    }
    items.push({ kind: 'scalar', value, line });
    if (rest === '') return { kind: 'seq', items, line };
    if (rest[0] !== ',') fail(line, `expected ',' or ']' in a flow sequence, found '${rest}'`);
    rest = rest.slice(1);
    if (rest.trim() === '') fail(line, 'a trailing comma in a flow sequence');
  }
}

/** Where a mapping entry's key ends (the ':' followed by a space or the line's end), or -1. */
function keyEnd(text: string, line: number): { key: string; colon: number } | null {
  const q = quoted(text, line);
  if (q !== null) {
    const after = text.slice(q.end);
    if (after === ':' || after.startsWith(': ')) return { key: q.value, colon: q.end };
    return null;
  }
  const m = /:(\s|$)/.exec(text);
  if (m === null) return null;
  const key = text.slice(0, m.index).trim();
  if (key === '') fail(line, 'an empty key');
  if (key.startsWith('? ') || key === '?') fail(line, "complex keys ('?') are outside the subset");
  if (key === '<<') fail(line, "merge keys ('<<') are outside the subset");
  if (/^[&*!|>{[@`%]/.test(key)) fail(line, `a key cannot start with '${key[0]}' in the subset`);
  return { key, colon: m.index };
}

const isSeqItem = (t: string): boolean => t === '-' || t.startsWith('- ');

class Parser {
  private i = 0;
  constructor(private readonly lines: Line[]) {}

  document(): YamlNode {
    const first = this.lines[0];
    if (first === undefined) return { kind: 'map', entries: new Map(), line: 1 };
    if (first.indent !== 0) fail(first.line, 'the document must start at column 1');
    const node = this.block(0);
    const extra = this.lines[this.i];
    if (extra !== undefined) fail(extra.line, 'unexpected indentation');
    return node;
  }

  private block(indent: number): YamlNode {
    const l = this.lines[this.i]!;
    if (isSeqItem(l.text)) return this.sequence(indent);
    if (keyEnd(l.text, l.line) !== null) return this.mapping(indent);
    // A lone scalar as the block's whole content.
    this.i++;
    const node = inlineValue(l.text, l.line);
    const next = this.lines[this.i];
    if (next !== undefined && next.indent >= indent && next.indent > 0 && indent > 0) fail(next.line, 'a multi-line plain scalar is outside the subset');
    return node;
  }

  private sequence(indent: number): YamlNode {
    const items: YamlNode[] = [];
    const line = this.lines[this.i]!.line;
    for (;;) {
      const l = this.lines[this.i];
      if (l === undefined || l.indent < indent) break;
      if (l.indent > indent) fail(l.line, 'unexpected indentation');
      if (!isSeqItem(l.text)) fail(l.line, 'a mapping entry where a sequence item (- ...) was expected');
      const rest = l.text.slice(1).trimStart();
      if (rest === '') {
        this.i++;
        const next = this.lines[this.i];
        items.push(next !== undefined && next.indent > indent ? this.block(next.indent) : { kind: 'scalar', value: null, line: l.line });
        continue;
      }
      // The item's content starts on the dash's line: read it as a block at its own column.
      const col = l.indent + (l.text.length - rest.length);
      this.lines[this.i] = { indent: col, text: rest, line: l.line };
      items.push(this.block(col));
    }
    return { kind: 'seq', items, line };
  }

  private mapping(indent: number): YamlNode {
    const entries = new Map<string, { keyLine: number; value: YamlNode }>();
    const line = this.lines[this.i]!.line;
    for (;;) {
      const l = this.lines[this.i];
      if (l === undefined || l.indent < indent) break;
      if (l.indent > indent) fail(l.line, 'unexpected indentation');
      if (isSeqItem(l.text)) fail(l.line, 'a sequence item where a mapping entry (key: value) was expected');
      const k = keyEnd(l.text, l.line);
      if (k === null) fail(l.line, `'${l.text}' is not a 'key: value' entry`);
      if (entries.has(k.key)) fail(l.line, `duplicate key '${k.key}' (first on line ${entries.get(k.key)!.keyLine})`);
      const valueText = l.text.slice(k.colon + 1).trim();
      this.i++;
      let value: YamlNode;
      if (valueText !== '') {
        value = inlineValue(valueText, l.line);
        const next = this.lines[this.i];
        if (next !== undefined && next.indent > indent) fail(next.line, `unexpected indentation (the value of '${k.key}' was given on its line)`);
      } else {
        const next = this.lines[this.i];
        if (next !== undefined && next.indent > indent) value = this.block(next.indent);
        else if (next !== undefined && next.indent === indent && isSeqItem(next.text)) value = this.sequence(indent);
        else value = { kind: 'scalar', value: null, line: l.line };
      }
      entries.set(k.key, { keyLine: l.line, value });
    }
    return { kind: 'map', entries, line };
  }
}

/** The document `source` holds, as nodes with their lines. Throws a `ProbeError` (`ROCE_ERR_PROBE_YAML`) with the line for anything outside the subset. */
export function parseYaml(source: string): YamlNode {
  return new Parser(splitLines(source)).document();
}

/** The plain value of a node. */
export function plainValue(node: YamlNode): YamlValue {
  switch (node.kind) {
    case 'scalar':
      return node.value;
    case 'seq':
      return node.items.map(plainValue);
    case 'map': {
      const out: { [key: string]: YamlValue } = {};
      for (const [k, e] of node.entries) Object.defineProperty(out, k, { value: plainValue(e.value), enumerable: true, writable: true, configurable: true });
      return out;
    }
  }
}
