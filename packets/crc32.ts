/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) building blocks for the ICRC.
 *
 * Two conventions meet here:
 * - the *state* (Linux `crc32_le`): the running register, no inversion on entry or exit.
 *   All `crc32Update*` functions take and return a state; the start state of a standard
 *   CRC-32 is 0xFFFFFFFF.
 * - the *value* (zlib, `crc-32`, Ethernet FCS, ICRC): `~state`. `zlib.crc32(data, value)`
 *   continues from a previous value; `crc32(data, value)` below does the same.
 *
 * Speed (docs/performance.md, "ICRC"): a JS slicing-by-16 table walk wins for short runs; Node's
 * built-in `zlib.crc32` (Node >= 20.15) has ~0.2 µs of fixed cost per call but is ~3x faster per
 * byte, so `crc32UpdateFast` hands it runs of `ZLIB_MIN_LEN` bytes and more. npm `crc-32` was
 * measured too: same technique, a little faster over a whole buffer, but it cannot start at an
 * offset and the view it then needs makes it slower than one of the two above at every length,
 * so it is not used at run time (a devDependency for the benchmark only).
 */
import * as zlib from 'node:zlib';

/** Reflected CRC-32 polynomial (IEEE 802.3). */
export const CRC32_POLY_REFLECTED = 0xedb88320;

/** Number of 256-entry tables: slicing-by-16 (measured 1.25-1.45x faster than by-8, bench/icrc.ts). */
const SLICES = 16;

/**
 * CRC tables, `SLICES` × 256 entries, as signed 32-bit integers.
 * Table k maps a byte to the CRC of that byte followed by k zero bytes.
 */
export const CRC32_TABLES: Int32Array = (() => {
  const t = new Int32Array(SLICES * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CRC32_POLY_REFLECTED : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < SLICES; k++) {
      c = (c >>> 8) ^ t[c & 0xff]!;
      t[k * 256 + n] = c;
    }
  }
  return t;
})();

const T = CRC32_TABLES;
// One Int32Array view per slice, each indexed by one data byte (the state bytes XOR-ed into the
// first four): measured ~1.3x faster than assembling 32-bit words first (bench/icrc.ts, scratch runs).
const [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15] = Array.from({ length: SLICES }, (_, k) => T.subarray(k * 256, (k + 1) * 256)) as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

/**
 * Advances a CRC-32 state over `buf[start, end)` with a JS table walk (slicing-by-16: the four
 * state bytes are XOR-ed into the first four data bytes, each of the 16 bytes indexes the table for
 * its distance from the end of the block).
 * State convention (no inversion): the standard CRC-32 value of data d is
 * `~crc32Update(0xFFFFFFFF, d, 0, d.length) >>> 0`. Returns the state as an unsigned 32-bit number.
 * Offsets are not checked: the caller keeps `0 <= start <= end <= buf.length`.
 */
export function crc32Update(state: number, buf: Uint8Array, start: number, end: number): number {
  let s = state | 0;
  let i = start;
  const last16 = end - 15; // a 16-byte block fits while i < last16
  while (i < last16) {
    s =
      T15[buf[i++]! ^ (s & 0xff)]! ^
      T14[buf[i++]! ^ ((s >>> 8) & 0xff)]! ^
      T13[buf[i++]! ^ ((s >>> 16) & 0xff)]! ^
      T12[buf[i++]! ^ (s >>> 24)]! ^
      T11[buf[i++]!]! ^
      T10[buf[i++]!]! ^
      T9[buf[i++]!]! ^
      T8[buf[i++]!]! ^
      T7[buf[i++]!]! ^
      T6[buf[i++]!]! ^
      T5[buf[i++]!]! ^
      T4[buf[i++]!]! ^
      T3[buf[i++]!]! ^
      T2[buf[i++]!]! ^
      T1[buf[i++]!]! ^
      T0[buf[i++]!]!;
  }
  while (i < end) s = (s >>> 8) ^ T0[(s ^ buf[i++]!) & 0xff]!;
  return s >>> 0;
}

/**
 * Advances a CRC-32 state over 4 bytes given as a little-endian word
 * (`b0 | b1 << 8 | b2 << 16 | b3 << 24`), slicing-by-4. Lets the ICRC apply its masks
 * to whole words on the fly (`word | mask`) without copying the headers. Returns the state as a
 * signed 32-bit integer (V8 keeps it unboxed through a chain of calls); `>>> 0` gives the unsigned form.
 */
export function crc32Step4(state: number, word: number): number {
  const a = state ^ word;
  return T3[a & 0xff]! ^ T2[(a >>> 8) & 0xff]! ^ T1[(a >>> 16) & 0xff]! ^ T0[a >>> 24]!;
}

/** Reads 4 bytes at `off` as a little-endian word (signed 32-bit; feed to `crc32Step4`). */
export function wordLE(buf: Uint8Array, off: number): number {
  return buf[off]! | (buf[off + 1]! << 8) | (buf[off + 2]! << 16) | (buf[off + 3]! << 24);
}

type ZlibCrc32 = (data: NodeJS.ArrayBufferView, value?: number) => number;

/** Node's built-in `zlib.crc32` (Node >= 20.15 / 22.2), or null on older runtimes. */
const zlibCrc32: ZlibCrc32 | null = typeof (zlib as { crc32?: unknown }).crc32 === 'function' ? (zlib as { crc32: ZlibCrc32 }).crc32 : null;

/** True when Node's built-in `zlib.crc32` is available. */
export const hasZlibCrc32: boolean = zlibCrc32 !== null;

/**
 * Run length (bytes) from which `zlib.crc32` beats the JS table walk, including the cost of the
 * Uint8Array view it needs. Measured with `node dist/bench/icrc.js --threshold` (docs/performance.md).
 */
export const ZLIB_MIN_LEN = 448;

/** Same as `crc32Update`, through `zlib.crc32` (falls back to the JS walk when it is absent). */
export function crc32UpdateZlib(state: number, buf: Uint8Array, start: number, end: number): number {
  if (zlibCrc32 === null) return crc32Update(state, buf, start, end);
  // An empty view over a zero-length ArrayBuffer makes zlib.crc32 return 0 whatever `value` is.
  if (end <= start) return state >>> 0;
  const view = start === 0 && end === buf.length ? buf : new Uint8Array(buf.buffer, buf.byteOffset + start, end - start);
  // zlib continues from a value (= ~state) and returns a value.
  return ~zlibCrc32(view, ~state >>> 0) >>> 0;
}

/** Same as `crc32Update`, choosing the fastest routine for the run length. */
export function crc32UpdateFast(state: number, buf: Uint8Array, start: number, end: number): number {
  if (end - start < ZLIB_MIN_LEN || zlibCrc32 === null) return crc32Update(state, buf, start, end);
  const view = new Uint8Array(buf.buffer, buf.byteOffset + start, end - start);
  return ~zlibCrc32(view, ~state >>> 0) >>> 0;
}

/**
 * Standard CRC-32 value of `data[start, end)` (zlib-compatible), continuing from `value`
 * (a previous result, 0 to start): `crc32(b) === zlib.crc32(b)`.
 */
export function crc32(data: Uint8Array, value = 0, start = 0, end = data.length): number {
  return ~crc32UpdateFast(~value >>> 0, data, start, end) >>> 0;
}
