/**
 * The YAML subset of `roce probe`'s scenarios: what it reads (mappings, sequences, flow
 * sequences of scalars, quoted and plain scalars, comments), what it refuses with a typed error
 * naming the line, and two properties: any value of the subset written out reads back equal, and
 * any text either parses or fails with `ROCE_ERR_PROBE_YAML`, never another exception.
 */
import fc from 'fast-check';
import { ProbeError } from '../../apps/probe/probe-error';
import { parseYaml, plainValue, type YamlValue } from '../../apps/probe/yaml-subset';

const read = (s: string): YamlValue => plainValue(parseYaml(s));

function errorOf(s: string): ProbeError {
  try {
    parseYaml(s);
  } catch (e) {
    if (e instanceof ProbeError) return e;
    throw e;
  }
  throw new Error(`parsed: ${JSON.stringify(read(s))}`);
}

test('mappings, sequences, scalars and comments', () => {
  const text = [
    '# a scenario',
    '---',
    'name: nak-latency   # trailing comment',
    'dut:',
    '  role: responder',
    '  verb: write',
    'traffic:',
    '  message-size: 16384',
    '  ratio: 0.5',
    '  hex: 0x1f',
    '  on: true',
    '  off: false',
    '  none: ~',
    '  empty:',
    "  quoted: 'it''s # not a comment'",
    '  dq: "a\\tb \\"c\\""',
    '  list: [a, 2, "x, y"]',
    '  nothing: []',
    'events:',
    '  - type: drop',
    '    psn: 4',
    '  -   type: skip',
    '      psn: 5',
    '  - plain item',
    '  -',
    '    - nested',
    'top-seq:',
    '- 1',
    '- 2',
  ].join('\n');
  expect(read(text)).toEqual({
    name: 'nak-latency',
    dut: { role: 'responder', verb: 'write' },
    traffic: {
      'message-size': 16384,
      ratio: 0.5,
      hex: 31,
      on: true,
      off: false,
      none: null,
      empty: null,
      quoted: "it's # not a comment",
      dq: 'a\tb "c"',
      list: ['a', 2, 'x, y'],
      nothing: [],
    },
    events: [{ type: 'drop', psn: 4 }, { type: 'skip', psn: 5 }, 'plain item', ['nested']],
    'top-seq': [1, 2],
  });
});

test('nodes keep their lines', () => {
  const n = parseYaml('a:\n  b: 1\n\n  c:\n    - 2\n');
  if (n.kind !== 'map') throw new Error('not a map');
  const a = n.entries.get('a')!;
  expect(a.keyLine).toBe(1);
  if (a.value.kind !== 'map') throw new Error('not a map');
  expect(a.value.entries.get('b')!.value.line).toBe(2);
  expect(a.value.entries.get('c')!.keyLine).toBe(4);
  const c = a.value.entries.get('c')!.value;
  expect(c.kind === 'seq' && c.items[0]!.line).toBe(5);
});

test('an empty document is an empty mapping; __proto__ is an ordinary key', () => {
  expect(read('# nothing\n\n')).toEqual({});
  const v = read('__proto__: 1\n') as Record<string, unknown>;
  expect(Object.keys(v)).toEqual(['__proto__']);
  expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
});

test.each([
  ['a: &x 1', 1, /anchors and aliases/],
  ['a: *x', 1, /anchors and aliases/],
  ['a: !!int 1', 1, /tags/],
  ['a: |\n  text', 1, /block scalars/],
  ['a: >\n  text', 1, /block scalars/],
  ['a: {b: 1}', 1, /flow mappings/],
  ['a: 1\n---\nb: 2', 2, /second document/],
  ['a: 1\n...', 2, /document end/],
  ['a:\n\tb: 1', 2, /tab in the indentation/],
  ['a: 1\na: 2', 2, /duplicate key 'a' \(first on line 1\)/],
  ['a: 1\n  b: 2', 2, /unexpected indentation/],
  ['a:\n  - 1\n  b: 2', 3, /mapping entry where a sequence item/],
  ['a:\n  b: 1\n  - 2', 3, /sequence item where a mapping entry/],
  ['a: "open', 1, /unterminated double-quoted/],
  ["a: 'open", 1, /unterminated single-quoted/],
  ['a: "x" y', 1, /text after the closing quote/],
  ['a: [1, [2]]', 1, /nested flow sequences/],
  ['a: [1, 2', 1, /must end with '\]'/],
  ['a: [1, , 2]', 1, /empty item/],
  ['a: [1,]', 1, /trailing comma/],
  ['a: b: c', 1, /mapping on one line/],
  ['? a\n: 1', 1, /complex keys/],
  ['<<: 1', 1, /merge keys/],
  ['a: "\\x41"', 1, /escape \\x/],
  ['a: 99999999999999999999', 1, /beyond 2\^53/],
  ['  a: 1', 1, /start at column 1/],
  ['a:\n  b\n  c', 3, /multi-line plain scalar/],
])('%j is refused at line %i', (text, line, message) => {
  const e = errorOf(text);
  expect(e.code).toBe('ROCE_ERR_PROBE_YAML');
  expect(e.line).toBe(line);
  expect(e.message).toMatch(message);
  expect(e.message.startsWith(`line ${line}: `)).toBe(true);
});

/** Writes a value in the subset's block style (the inverse the property below checks). */
function emit(v: YamlValue, indent: number): string[] {
  const pad = ' '.repeat(indent);
  if (Array.isArray(v)) {
    if (v.length === 0) return [`${pad}[]`];
    return v.flatMap((item) => {
      if (item !== null && typeof item === 'object') {
        const inner = emit(item, indent + 2);
        if (Array.isArray(item) && item.length === 0) return [`${pad}- []`];
        if (!Array.isArray(item) && Object.keys(item).length === 0) return [`${pad}-`];
        return [`${pad}-`, ...inner];
      }
      return [`${pad}- ${scalar(item)}`];
    });
  }
  if (v !== null && typeof v === 'object') {
    return Object.entries(v).flatMap(([k, item]) => {
      const key = JSON.stringify(k);
      if (item !== null && typeof item === 'object') {
        if (Array.isArray(item) && item.length === 0) return [`${pad}${key}: []`];
        if (!Array.isArray(item) && Object.keys(item).length === 0) return [`${pad}${key}:`];
        return [`${pad}${key}:`, ...emit(item, indent + 2)];
      }
      return [`${pad}${key}: ${scalar(item)}`];
    });
  }
  return [`${pad}${scalar(v)}`];
}

function scalar(v: YamlValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  return String(v);
}

/** Values the block emitter above writes unambiguously: an empty mapping inside a sequence reads back as null, so none are generated. */
const scalarArb = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.string().filter((s) => [...s].every((c) => c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f)),
);
const valueArb = fc.letrec<{ value: YamlValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    scalarArb,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ minLength: 1 }), tie('value'), { maxKeys: 4 }).filter((d) => Object.keys(d).length > 0),
  ),
})).value;

test('property: a mapping written in the subset reads back equal', () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string({ minLength: 1 }), valueArb, { minKeys: 1, maxKeys: 5 }), (doc) => {
      const clean = JSON.parse(JSON.stringify(doc)) as YamlValue;
      const text = emit(clean, 0).join('\n');
      expect(read(text)).toEqual(clean);
    }),
    { numRuns: 300 },
  );
});

test('property: any text parses or fails with ROCE_ERR_PROBE_YAML and a line inside it', () => {
  const pieces = fc.constantFrom(
    'a',
    'b:',
    ': ',
    '- ',
    '  ',
    '\t',
    '#',
    '"',
    "'",
    '[',
    ']',
    ',',
    '{',
    '&',
    '*',
    '!',
    '|',
    '>',
    '\n',
    '---',
    '1',
    '0x',
    '~',
    '?',
    '<<',
  );
  fc.assert(
    fc.property(fc.array(pieces, { maxLength: 40 }), (parts) => {
      const text = parts.join('');
      try {
        parseYaml(text);
      } catch (e) {
        expect(e).toBeInstanceOf(ProbeError);
        const p = e as ProbeError;
        expect(p.code).toBe('ROCE_ERR_PROBE_YAML');
        expect(p.line).toBeGreaterThanOrEqual(1);
        expect(p.line).toBeLessThanOrEqual(text.split('\n').length);
      }
    }),
    { numRuns: 2000 },
  );
});
