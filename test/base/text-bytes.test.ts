/**
 * TextBytes writes exactly what the JavaScript conversion it stands for writes (String, padStart,
 * JSON.stringify, toString(16)), whatever the value, and hands over chunks it never touches again;
 * its times are the decimals BigInt arithmetic gives.
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

/** The decimal of `sec` s + `nsec` ns from BigInt arithmetic, with `digits` decimals (9 when it has more). */
function decimalSeconds(sec: number, nsec: number, digits: number): string {
  const ns = BigInt(sec) * 1_000_000_000n + BigInt(nsec);
  const size = ns < 0n ? -ns : ns;
  const nine = String(size % 1_000_000_000n).padStart(9, '0');
  const cut = /^0*$/.test(nine.slice(digits)) ? digits : 9;
  return `${ns < 0n ? '-' : ''}${size / 1_000_000_000n}${cut > 0 ? `.${nine.slice(0, cut)}` : ''}`;
}

test('seconds writes the decimal of whole seconds and nanoseconds, digit for digit, at any size and sign', () => {
  const same = (sec: number, nsec: number, digits: number, width: number): void => {
    expect(textOf((t) => t.seconds(sec, nsec, digits, width))).toBe(decimalSeconds(sec, nsec, digits).padStart(width, ' '));
  };
  // Capture timestamps (u32 seconds, or a 64-bit pcapng time in ns) and spans of either sign.
  fc.assert(
    fc.property(
      fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: -5, max: 5 }), fc.integer({ min: -(2 ** 35), max: 2 ** 35 })),
      fc.oneof(
        fc.integer({ min: 0, max: 999_999_999 }),
        fc.integer({ min: 0, max: 999_999 }).map((us) => us * 1000),
      ),
      fc.integer({ min: 0, max: 9 }),
      fc.integer({ min: 0, max: 24 }),
      same,
    ),
    { numRuns: 5000 },
  );
  for (const [sec, nsec, digits] of [
    [1_705_320_000, 1184, 9],
    [1_705_320_000, 1000, 6],
    [1_705_320_000, 1184, 6], // more digits than the resolution says: all 9
    [0, 0, 6],
    [0, 0, 0],
    [-1, 999_999_000, 6], // −0.000001
    [-1, 0, 9],
    [-2, 500_000_000, 1],
    [4_294_967_295, 999_999_999, 9],
    [18_446_744_073, 709_551_615, 9], // 2^64 − 1 ns
  ] as const) {
    same(sec, nsec, digits, 12);
  }
  expect(textOf((t) => t.seconds(1_705_320_000, 1184, 9))).toBe('1705320000.000001184');
  expect(textOf((t) => t.seconds(0, 2000, 6, 12))).toBe('    0.000002');
  expect(textOf((t) => t.seconds(-1, 999_999_000, 6))).toBe('-0.000001');
});

test('nanoseconds writes the whole number of nanoseconds, exact beyond 2^53', () => {
  const same = (sec: number, nsec: number): void => {
    expect(textOf((t) => t.nanoseconds(sec, nsec))).toBe(String(BigInt(sec) * 1_000_000_000n + BigInt(nsec)));
  };
  fc.assert(
    fc.property(
      fc.oneof(
        fc.integer({ min: -10, max: 10 }),
        fc.integer({ min: -(2 ** 35), max: 2 ** 35 }),
        fc.integer({ min: 8_999_990, max: 9_000_010 }),
        fc.integer({ min: -9_000_010, max: -8_999_990 }),
      ),
      fc.integer({ min: 0, max: 999_999_999 }),
      same,
    ),
    { numRuns: 5000 },
  );
  for (const [sec, nsec] of [
    [0, 0],
    [-1, 999_999_999],
    [-1, 0],
    [8_999_999, 999_999_999],
    [9_000_000, 0],
    [-9_000_000, 1],
    [1_705_320_000, 1184],
    [18_446_744_073, 709_551_615],
  ] as const)
    same(sec, nsec);
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
      const json = textOf((t) => t.jsonString(s));
      // jest's matchers only on a difference: 3000 strings each.
      if (json !== JSON.stringify(s)) expect(json).toBe(JSON.stringify(s));
      const bytes: Uint8Array[] = [];
      const t = new TextBytes((c) => {
        bytes.push(c);
      }, 7);
      t.text(s);
      t.end();
      const want = Buffer.from(new TextEncoder().encode(s));
      if (!Buffer.concat(bytes).equals(want)) expect(Buffer.concat(bytes)).toEqual(want);
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
      expect(Buffer.concat(chunks).toString()).toBe(
        Buffer.from(
          pieces
            .map((p) => new TextEncoder().encode(p))
            .flatMap((b, i) => [b, Buffer.from(String(pieces[i]?.length))])
            .reduce((a, b) => Buffer.concat([a, b]), Buffer.alloc(0)),
        ).toString(),
      );
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
