/**
 * TextBytes writes exactly what the JavaScript conversion it stands for writes (String, toFixed,
 * padStart, JSON.stringify, toString(16)), whatever the value, and hands over chunks it never
 * touches again.
 */
import fc from 'fast-check';
import { TextBytes, textOf } from '../../base/text-bytes';
import { ipv4ToString } from '../../packets/bytes';

const RUNS = { numRuns: 3000 };

test('uint and padUint equal String(n) and its padStart', () => {
  fc.assert(
    fc.property(fc.oneof(fc.nat(), fc.maxSafeNat(), fc.integer({ min: 0, max: 99 })), fc.integer({ min: 0, max: 20 }), (n, width) => {
      expect(textOf((t) => t.uint(n))).toBe(String(n));
      expect(textOf((t) => t.padUint(n, width))).toBe(String(n).padStart(width, ' '));
    }),
    RUNS,
  );
  for (let d = 1; d <= 16; d++) {
    for (const n of [10 ** d - 1, 10 ** d, 10 ** d + 1]) expect(textOf((t) => t.uint(n))).toBe(String(n));
  }
  for (const odd of [-1, 1.5, NaN, Infinity, 2 ** 60]) expect(textOf((t) => t.uint(odd))).toBe(String(odd));
});

test('jsonNumber equals JSON.stringify for every double', () => {
  fc.assert(
    fc.property(fc.oneof(fc.double(), fc.integer(), fc.maxSafeInteger()), (x) => {
      expect(textOf((t) => t.jsonNumber(x))).toBe(JSON.stringify(x));
    }),
    RUNS,
  );
  for (const x of [0, -0, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21, 5e-324]) {
    expect(textOf((t) => t.jsonNumber(x))).toBe(JSON.stringify(x));
  }
});

test('jsonSeconds equals JSON.stringify: capture timestamps in µs and ns, binade edges, and any double', () => {
  const same = (x: number): void => {
    expect(textOf((t) => t.jsonSeconds(x))).toBe(JSON.stringify(x));
  };
  // What a capture reader makes: sec + frac / 10^6 (µs) or / 10^9 (ns), over the whole u32 range.
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 999_999 }), fc.integer({ min: 0, max: 999_999_999 }), (sec, us, ns) => {
      same(sec + us / 1e6);
      same(sec + ns / 1e9);
    }),
    { numRuns: 20_000 },
  );
  // Powers of two and their neighbours (the gap below a power of two is half the one above), and
  // microseconds near each.
  for (let e = -3; e <= 33; e++) {
    for (const x of [2 ** e, 2 ** e * (1 - Number.EPSILON / 2), 2 ** e * (1 + Number.EPSILON)]) {
      same(x);
      for (const us of [-2, -1, 1, 2]) same(x + us / 1e6);
    }
  }
  fc.assert(
    fc.property(fc.oneof(fc.double(), fc.double({ min: 0, max: 2 ** 33 }), fc.integer()), (x) => same(x)),
    RUNS,
  );
  for (const x of [0, -0, 1, 0.000001, 1.000001, 1_700_000_000, 1_700_000_000.000001, 1_700_000_000.00001, 4_294_967_295.999999, NaN, Infinity]) same(x);
});

test('fixed6 equals toFixed(6).padStart(width), ties and near-ties included', () => {
  const same = (x: number, width: number): void => {
    expect(textOf((t) => t.fixed6(x, width))).toBe(x.toFixed(6).padStart(width, ' '));
  };
  fc.assert(
    fc.property(fc.oneof(fc.double({ min: -1e12, max: 1e12, noNaN: true }), fc.double({ min: 0, max: 100 }), fc.double()), fc.integer({ min: 0, max: 14 }), (x, w) => same(x, w)),
    RUNS,
  );
  // Values whose seventh decimal is exactly or nearly 5: where the fast path must give way.
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: -4, max: 4 }), (k, ulps) => {
      let x = (k + 0.5) / 1e6;
      for (let i = 0; i < Math.abs(ulps); i++) x = ulps > 0 ? x + Number.EPSILON * x : x - Number.EPSILON * x;
      same(x, 12);
    }),
    RUNS,
  );
  for (const x of [0, -0, 0.0000005, 0.0000015, 1.0000005, 8_796_093.022207, 8_796_093.022209, 1_700_000_000.123456, 1e21, NaN, -Infinity]) same(x, 12);
});

test('hex equals 0x + toString(16).padStart', () => {
  fc.assert(
    fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.integer({ min: 1, max: 8 }), (n, digits) => {
      expect(textOf((t) => t.hex(n, digits))).toBe(`0x${(n >>> 0).toString(16).padStart(digits, '0')}`);
    }),
    RUNS,
  );
});

test('ipv4 equals ipv4ToString for every octet value and any address', () => {
  for (let b = 0; b < 256; b++) {
    const a = ((b << 24) | (((b + 1) & 0xff) << 16) | (((b * 7) & 0xff) << 8) | (255 - b)) >>> 0;
    expect(textOf((t) => t.ipv4(a))).toBe(ipv4ToString(a));
  }
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 0xffffffff }), (a) => textOf((t) => t.ipv4(a)) === ipv4ToString(a)),
    { numRuns: 2000 },
  );
});

test('jsonString equals JSON.stringify and text equals TextEncoder, for any string', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme-ascii' }), fc.string()), (s) => {
      expect(textOf((t) => t.jsonString(s))).toBe(JSON.stringify(s));
      const bytes: Uint8Array[] = [];
      const t = new TextBytes((c) => {
        bytes.push(c);
      }, 7);
      t.text(s);
      t.end();
      expect(Buffer.concat(bytes)).toEqual(Buffer.from(new TextEncoder().encode(s)));
    }),
    RUNS,
  );
});

test('chunks: small ones, pieces larger than a chunk, and no chunk touched after hand-over', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { maxLength: 30 }), fc.integer({ min: 4, max: 32 }), (pieces, size) => {
      const chunks: Uint8Array[] = [];
      const copies: Buffer[] = [];
      const t = new TextBytes((c) => {
        chunks.push(c);
        copies.push(Buffer.from(c));
      }, size);
      for (const p of pieces) {
        t.text(p);
        t.uint(p.length);
      }
      t.end();
      chunks.forEach((c, i) => expect(Buffer.from(c)).toEqual(copies[i]));
      expect(Buffer.concat(chunks).toString()).toBe(Buffer.from(pieces.map((p) => new TextEncoder().encode(p)).flatMap((b, i) => [b, Buffer.from(String(pieces[i]?.length))]).reduce((a, b) => Buffer.concat([a, b]), Buffer.alloc(0))).toString());
      // No chunk is empty, and `end` with nothing pending hands over nothing.
      expect(chunks.every((c) => c.length > 0)).toBe(true);
      const before = chunks.length;
      t.end();
      expect(chunks.length).toBe(before);
    }),
    { numRuns: 500 },
  );
});

test('a sink that is done with each chunk gets the same buffer back, written again from the start', () => {
  const seen: string[] = [];
  const buffers = new Set<ArrayBufferLike>();
  const t = new TextBytes((c) => {
    seen.push(Buffer.from(c).toString());
    buffers.add(c.buffer);
    return true;
  }, 8);
  for (let i = 0; i < 10; i++) t.text(`line ${i};`);
  t.text('a piece longer than a chunk');
  t.text('!');
  t.end();
  expect(seen.join('')).toBe(`${Array.from({ length: 10 }, (_, i) => `line ${i};`).join('')}a piece longer than a chunk!`);
  // One buffer for the 8-byte chunks, one for the oversized piece, and a fresh 8-byte one after it.
  expect(buffers.size).toBe(3);
});
