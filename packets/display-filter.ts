/**
 * A display filter in Wireshark's syntax over the fields of packets/frame-fields.ts, as tshark -Y
 * takes it (the operators of Wireshark 4.0's `wireshark-filter(4)` listed in docs/decode.md):
 *
 *   expr    := and (('||' | 'or') and)*
 *   and     := unary (('&&' | 'and') unary)*
 *   unary   := ('!' | 'not') unary | '(' expr ')' | test
 *   test    := FIELD | FIELD relop value | FIELD 'in' '{' value (','? value)* '}'
 *   relop   := == != === !== ~= < <= > >= and eq ne all_eq any_ne any_eq all_ne lt le gt ge
 *   value   := a literal read by the field's type (integer: decimal, 0x-hex, 0-octal; boolean: 1,
 *              0, true, false; addresses, CIDR prefixes ip.src == 198.18.0.0/16, MACs with :, - or
 *              .; byte strings aa:bb:cc or aabbcc; times in seconds), or another field
 *
 * A field may occur more than once in a frame (`ip.addr`: source and destination). As in Wireshark
 * 4.0, `==`, `<` and the other orderings hold when some occurrence satisfies them; `!=` holds when
 * every occurrence differs (`~=` / `!==`: some occurrence differs; `===`: every one equals). A
 * comparison with a field the frame lacks is false; `!` of it is true. A bad filter is a
 * `DisplayFilterError` that says where (its `position`, 0-based) and what is wrong.
 */
import { RoceError } from '../base/roce-error';
import { type FieldDef, type FieldFrame, type FieldValue, bytesBigint, frameField } from './frame-fields';
import { ipv6FromString } from './bytes';

export class DisplayFilterError extends RoceError<'ROCE_ERR_DISPLAY_FILTER'> {
  constructor(
    /** 0-based offset in the filter text of what is wrong. */
    readonly position: number,
    /** The message without the position. */
    readonly reason: string,
  ) {
    super('ROCE_ERR_DISPLAY_FILTER', `${reason} (at character ${position + 1})`);
  }
}

/** A compiled display filter: `matches` says whether a frame passes. */
export interface DisplayFilter {
  readonly text: string;
  matches(f: FieldFrame): boolean;
  /** The fields the filter reads. */
  readonly fields: readonly FieldDef[];
}

type Quantifier = 'any' | 'all';
type Relation = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';

const RELOPS: Readonly<Record<string, readonly [Relation, Quantifier]>> = {
  '==': ['eq', 'any'],
  eq: ['eq', 'any'],
  any_eq: ['eq', 'any'],
  '===': ['eq', 'all'],
  all_eq: ['eq', 'all'],
  '!=': ['ne', 'all'],
  ne: ['ne', 'all'],
  all_ne: ['ne', 'all'],
  '!==': ['ne', 'any'],
  '~=': ['ne', 'any'],
  any_ne: ['ne', 'any'],
  '<': ['lt', 'any'],
  lt: ['lt', 'any'],
  '<=': ['le', 'any'],
  le: ['le', 'any'],
  '>': ['gt', 'any'],
  gt: ['gt', 'any'],
  '>=': ['ge', 'any'],
  ge: ['ge', 'any'],
};

/** Operators of Wireshark's language this one does not take, named so that the error says so. */
const UNSUPPORTED = new Set(['contains', 'matches', '~', '[', ']', 'bitwise_and', '&', '"', '$', '@', '+', '*', '%', '^']);

interface Token {
  kind: 'word' | 'op' | 'end';
  text: string;
  at: number;
}

const WORD = /[A-Za-z0-9_.:/-]/;

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const three = text.slice(i, i + 3);
    const two = text.slice(i, i + 2);
    if (three === '===' || three === '!==') {
      out.push({ kind: 'op', text: three, at: i });
      i += 3;
    } else if (['==', '!=', '~=', '<=', '>=', '&&', '||'].includes(two)) {
      out.push({ kind: 'op', text: two, at: i });
      i += 2;
    } else if ('()<>!{},'.includes(c)) {
      out.push({ kind: 'op', text: c, at: i });
      i++;
    } else if (WORD.test(c)) {
      let j = i;
      while (j < text.length && WORD.test(text[j] ?? '')) j++;
      out.push({ kind: 'word', text: text.slice(i, j), at: i });
      i = j;
    } else if (UNSUPPORTED.has(c) || UNSUPPORTED.has(two)) {
      throw new DisplayFilterError(
        i,
        c === '"'
          ? 'strings are not supported (no field here is a string)'
          : `"${c}" is not supported (operators: == != === !== ~= < <= > >= in && || ! and their word forms)`,
      );
    } else throw new DisplayFilterError(i, `unexpected character ${JSON.stringify(c)}`);
  }
  out.push({ kind: 'end', text: '', at: text.length });
  return out;
}

/** A literal or a field on the right of a comparison, resolved against the left field's type. */
type Operand = { field: FieldDef } | { value: FieldValue; prefix: number | null };

interface Node {
  eval(f: FieldFrame): boolean;
}

/** Compares two values of one type: negative, zero or positive. */
function order(a: FieldValue, b: FieldValue): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  const x = a as Uint8Array;
  const y = b as Uint8Array;
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function holds(rel: Relation, a: FieldValue, b: FieldValue, prefix: number | null, bits: number): boolean {
  if (prefix !== null && typeof a === 'bigint' && typeof b === 'bigint') {
    // An address against a CIDR prefix: equal when the first `prefix` bits are.
    const shift = BigInt(bits - prefix);
    const same = a >> shift === b >> shift;
    if (rel === 'eq') return same;
    if (rel === 'ne') return !same;
  }
  const o = order(a, b);
  switch (rel) {
    case 'eq':
      return o === 0;
    case 'ne':
      return o !== 0;
    case 'lt':
      return o < 0;
    case 'le':
      return o <= 0;
    case 'gt':
      return o > 0;
    case 'ge':
      return o >= 0;
  }
}

class Parser {
  private i = 0;
  readonly fields = new Set<FieldDef>();
  constructor(
    private readonly text: string,
    private readonly toks: Token[],
    private readonly lookup: (name: string) => FieldDef | undefined,
  ) {}

  private peek(): Token {
    return this.toks[this.i] ?? { kind: 'end', text: '', at: this.text.length };
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.i++;
    return t;
  }

  private isWord(t: Token, ...words: string[]): boolean {
    return (t.kind === 'word' || t.kind === 'op') && words.includes(t.kind === 'word' ? t.text.toLowerCase() : t.text);
  }

  parse(): Node {
    if (this.peek().kind === 'end') throw new DisplayFilterError(0, 'the filter is empty');
    const n = this.or();
    const t = this.peek();
    if (t.kind !== 'end') throw new DisplayFilterError(t.at, `unexpected "${t.text}" after a whole expression`);
    return n;
  }

  private or(): Node {
    let left = this.and();
    while (this.isWord(this.peek(), '||', 'or')) {
      this.next();
      const l = left;
      const r = this.and();
      left = { eval: (f) => l.eval(f) || r.eval(f) };
    }
    return left;
  }

  private and(): Node {
    let left = this.unary();
    while (this.isWord(this.peek(), '&&', 'and')) {
      this.next();
      const l = left;
      const r = this.unary();
      left = { eval: (f) => l.eval(f) && r.eval(f) };
    }
    return left;
  }

  private unary(): Node {
    const t = this.peek();
    if (this.isWord(t, '!', 'not')) {
      this.next();
      const inner = this.unary();
      return { eval: (f) => !inner.eval(f) };
    }
    if (t.kind === 'op' && t.text === '(') {
      this.next();
      const inner = this.or();
      const close = this.next();
      if (close.kind !== 'op' || close.text !== ')')
        throw new DisplayFilterError(close.at, close.kind === 'end' ? 'a "(" is not closed' : `expected ")", found "${close.text}"`);
      return inner;
    }
    return this.test();
  }

  private fieldAt(t: Token): FieldDef {
    if (t.kind !== 'word')
      throw new DisplayFilterError(t.at, t.kind === 'end' ? 'the filter ends where a field name should be' : `expected a field name, found "${t.text}"`);
    const f = this.lookup(t.text);
    if (f === undefined)
      throw new DisplayFilterError(
        t.at,
        `"${t.text}" is not a field roce decode knows (tshark's names: ip.src, udp.dstport, infiniband.bth.destqp, ...; docs/decode.md lists them)`,
      );
    this.fields.add(f);
    return f;
  }

  private test(): Node {
    const ft = this.next();
    const field = this.fieldAt(ft);
    const t = this.peek();
    const rel = t.kind === 'end' ? undefined : RELOPS[t.kind === 'word' ? t.text.toLowerCase() : t.text];
    if (rel !== undefined) {
      this.next();
      if (field.type === 'proto')
        throw new DisplayFilterError(ft.at, `"${field.name}" is a protocol or header: test it alone (${field.name}), it has no value to compare`);
      const [relation, quantifier] = rel;
      const operand = this.operand(field);
      return this.comparison(field, relation, quantifier, operand);
    }
    if (this.isWord(t, 'in')) {
      this.next();
      if (field.type === 'proto') throw new DisplayFilterError(ft.at, `"${field.name}" is a protocol or header: it has no value to look up in a set`);
      const open = this.next();
      if (open.kind !== 'op' || open.text !== '{') throw new DisplayFilterError(open.at, 'expected "{" after "in"');
      const members: Node[] = [];
      for (;;) {
        const m = this.peek();
        if (m.kind === 'op' && m.text === '}') {
          this.next();
          break;
        }
        if (m.kind === 'op' && m.text === ',' && members.length > 0) {
          this.next();
          continue;
        }
        members.push(this.comparison(field, 'eq', 'any', this.operand(field)));
      }
      if (members.length === 0) throw new DisplayFilterError(open.at, 'an empty set');
      return { eval: (f) => members.some((n) => n.eval(f)) };
    }
    if (t.kind === 'word' && (t.text.toLowerCase() === 'contains' || t.text.toLowerCase() === 'matches')) {
      throw new DisplayFilterError(t.at, `"${t.text}" is not supported (operators: == != === !== ~= < <= > >= in && || ! and their word forms)`);
    }
    if (t.kind === 'op' && t.text === '[') throw new DisplayFilterError(t.at, 'slices are not supported');
    const get = field.values;
    return { eval: (f) => get(f).length > 0 };
  }

  private comparison(field: FieldDef, rel: Relation, quantifier: Quantifier, operand: Operand): Node {
    const get = field.values;
    const bits = field.bits;
    if ('field' in operand) {
      const other = operand.field.values;
      return {
        eval: (f) => {
          const as = get(f);
          const bs = other(f);
          if (as.length === 0 || bs.length === 0) return false;
          const test = (a: FieldValue): boolean => bs.some((b) => holds(rel, a, b, null, bits));
          return quantifier === 'any' ? as.some(test) : as.every(test);
        },
      };
    }
    const { value, prefix } = operand;
    return {
      eval: (f) => {
        const vs = get(f);
        if (vs.length === 0) return false;
        return quantifier === 'any' ? vs.some((v) => holds(rel, v, value, prefix, bits)) : vs.every((v) => holds(rel, v, value, prefix, bits));
      },
    };
  }

  private operand(field: FieldDef): Operand {
    const t = this.next();
    if (t.kind !== 'word')
      throw new DisplayFilterError(
        t.at,
        t.kind === 'end' ? `the filter ends where a value for ${field.name} should be` : `expected a value for ${field.name}, found "${t.text}"`,
      );
    const other = this.lookup(t.text);
    if (other !== undefined && other.type !== 'proto') {
      if (sameKind(other, field)) {
        this.fields.add(other);
        return { field: other };
      }
      throw new DisplayFilterError(t.at, `${field.name} and ${other.name} are of different types`);
    }
    return literal(field, t.text, t.at);
  }
}

function sameKind(a: FieldDef, b: FieldDef): boolean {
  const num = (d: FieldDef): string => (d.type === 'bool' ? 'uint' : d.type);
  return num(a) === num(b);
}

/** `text` as a value of `field`'s type. */
function literal(field: FieldDef, text: string, at: number): Operand {
  const bad = (what: string): DisplayFilterError => new DisplayFilterError(at, `"${text}" is not ${what} (the value of ${field.name})`);
  switch (field.type) {
    case 'uint':
    case 'bool': {
      const lower = text.toLowerCase();
      if (field.type === 'bool' && (lower === 'true' || lower === 'false')) return { value: lower === 'true' ? 1n : 0n, prefix: null };
      let v: bigint;
      // Wireshark reads integers as strtoul with base 0: 0x hex, a leading 0 octal, else decimal.
      if (/^0x[0-9a-f]+$/i.test(text)) v = BigInt(text);
      else if (/^0[0-7]+$/.test(text)) v = BigInt(`0o${text.slice(1)}`);
      else if (/^\d+$/.test(text)) v = BigInt(text);
      else throw bad(field.type === 'bool' ? 'a boolean (1, 0, true or false)' : 'an integer (decimal, 0x-hex or 0-octal)');
      if (field.type === 'bool') {
        if (v > 1n) throw bad('a boolean (1, 0, true or false)');
      } else if (v >= 1n << BigInt(field.bits)) throw new DisplayFilterError(at, `${text} is too large for ${field.name} (${field.bits} bits)`);
      return { value: v, prefix: null };
    }
    case 'ether': {
      const m = /^([0-9a-f]{2})[:.-]?([0-9a-f]{2})[:.-]?([0-9a-f]{2})[:.-]?([0-9a-f]{2})[:.-]?([0-9a-f]{2})[:.-]?([0-9a-f]{2})$/i.exec(text);
      if (m === null) throw bad('a MAC address (02:00:c6:12:00:01)');
      return { value: BigInt(`0x${m.slice(1).join('')}`), prefix: null };
    }
    case 'ipv4': {
      const [addr, len] = text.split('/', 2) as [string, string | undefined];
      const parts = addr.split('.');
      if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) throw bad('an IPv4 address (198.18.0.1 or 198.18.0.0/16)');
      const v = parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
      return { value: v, prefix: prefixOf(len, 32, at, text) };
    }
    case 'ipv6': {
      const [addr, len] = text.split('/', 2) as [string, string | undefined];
      let bytes: Uint8Array;
      try {
        bytes = ipv6FromString(addr);
      } catch {
        throw bad('an IPv6 address (fd00::1 or fd00::/64)');
      }
      return { value: bytesBigint(bytes), prefix: prefixOf(len, 128, at, text) };
    }
    case 'bytes': {
      const hex = /^[0-9a-f]{2}([:.-][0-9a-f]{2})*$/i.test(text) ? text.replace(/[:.-]/g, '') : /^([0-9a-f]{2})+$/i.test(text) ? text : null;
      if (hex === null) throw bad('a byte string (00:c0:de:11 or 00c0de11)');
      return { value: Uint8Array.from(Buffer.from(hex, 'hex')), prefix: null };
    }
    case 'time': {
      const m = /^(\d+)(?:\.(\d{1,9})\d*)?$/.exec(text);
      if (m === null) throw bad('a time in seconds (0.5)');
      return { value: BigInt(m[1] ?? '0') * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0')), prefix: null };
    }
    case 'proto':
      throw bad('a value: a protocol has none');
  }
}

function prefixOf(len: string | undefined, bits: number, at: number, text: string): number | null {
  if (len === undefined) return null;
  if (!/^\d+$/.test(len) || Number(len) > bits) throw new DisplayFilterError(at, `"${text}": the prefix length must be 0 to ${bits}`);
  return Number(len);
}

/**
 * Compiles a display filter; throws `DisplayFilterError` for a bad one. `lookup` finds a field by
 * name (default: the fields of packets/frame-fields.ts; a caller adds an upper-layer protocol's).
 */
export function compileDisplayFilter(text: string, lookup: (name: string) => FieldDef | undefined = frameField): DisplayFilter {
  const p = new Parser(text, tokenize(text), lookup);
  const root = p.parse();
  return { text, matches: (f) => root.eval(f), fields: [...p.fields] };
}
