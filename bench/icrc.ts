/**
 * ICRC and raw CRC-32 throughput.
 *
 *   npm run build && node dist/bench/icrc.js [--json] [--runs N] [--seconds S] [--threshold]
 *
 * Each figure is the median of `--runs` runs (default 5); each run repeats the operation for about
 * `--seconds` (default 0.3 s). GB/s = bytes covered / time, 1 GB = 1e9 bytes. For ICRC the bytes are
 * the whole Ethernet frame (14 + 20 IPv4 + 8 UDP + 12 BTH + payload + 4 ICRC).
 * `--threshold` instead prints ns per call for the JS table walk and zlib.crc32 (through a view, as
 * `crc32UpdateFast` calls it) at run lengths 16..1024, to place `ZLIB_MIN_LEN`.
 */
import * as zlib from 'node:zlib';
import * as CRC32 from 'crc-32';
import { CRC32_TABLES, crc32Update, crc32UpdateFast, crc32UpdateZlib, ZLIB_MIN_LEN } from '../packets/crc32';
import { icrcV2, writeIcrc } from '../packets/icrc';

const args = process.argv.slice(2);
function option(name: string, fallback: number): number {
  const i = args.indexOf(name);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
const json = args.includes('--json');
const runs = Math.floor(option('--runs', 5));
const seconds = option('--seconds', 0.3);

let sink = 0;

/** Seconds for `iters` calls of `fn` over the buffers in turn. */
function time(fn: (b: Uint8Array) => number, bufs: Uint8Array[], iters: number): number {
  const n = bufs.length;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iters; i++) sink ^= fn(bufs[i % n]!);
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** Median seconds per call: calibrates the iteration count to `seconds` per run. */
function measure(fn: (b: Uint8Array) => number, bufs: Uint8Array[]): number {
  let iters = 1000;
  for (;;) {
    const t = time(fn, bufs, iters);
    if (t > 0.03) {
      iters = Math.max(1, Math.round((iters * seconds) / t));
      break;
    }
    iters *= 4;
  }
  const perCall: number[] = [];
  for (let r = 0; r < runs; r++) perCall.push(time(fn, bufs, iters) / iters);
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(perCall.length / 2)]!;
}

// A bench-only slicing-by-8 walk, to compare with the slicing-by-16 `crc32Update` of packets/crc32.ts.
const T = CRC32_TABLES;
function crc32Slice8(state: number, buf: Uint8Array, start: number, end: number): number {
  let s = state | 0;
  let i = start;
  const end8 = end - ((end - start) & 7);
  while (i < end8) {
    const a = s ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    const b = buf[i + 4]! | (buf[i + 5]! << 8) | (buf[i + 6]! << 16) | (buf[i + 7]! << 24);
    s =
      T[1792 + (a & 0xff)]! ^
      T[1536 + ((a >>> 8) & 0xff)]! ^
      T[1280 + ((a >>> 16) & 0xff)]! ^
      T[1024 + (a >>> 24)]! ^
      T[768 + (b & 0xff)]! ^
      T[512 + ((b >>> 8) & 0xff)]! ^
      T[256 + ((b >>> 16) & 0xff)]! ^
      T[b >>> 24]!;
    i += 8;
  }
  while (i < end) s = (s >>> 8) ^ T[(s ^ buf[i++]!) & 0xff]!;
  return s >>> 0;
}

function randomBytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

const ETH = 14;
const HDRS = 20 + 8 + 12;

/** Ethernet ‖ IPv4 ‖ UDP (dport 4791) ‖ BTH (SEND ONLY) ‖ payload ‖ ICRC, inside a larger pooled buffer. */
function roceFrame(payload: number, seed: number): Uint8Array {
  const len = ETH + HDRS + payload + 4;
  const pool = Buffer.alloc(len + 64);
  const f = pool.subarray(13, 13 + len); // an odd byte offset, as in a receive slab
  f.set(randomBytes(len, seed));
  f.writeUInt16BE(0x0800, 12);
  f[ETH] = 0x45;
  f.writeUInt16BE(len - ETH, ETH + 2);
  f[ETH + 9] = 17;
  f.writeUInt16BE(4791, ETH + 22);
  f.writeUInt16BE(len - ETH - 20, ETH + 24);
  f[ETH + 28] = 0x04;
  writeIcrc(f, len - 4, icrcV2(f, ETH, len - 4));
  return f;
}

interface Row {
  name: string;
  gbps: number[];
  nsPerCall: number[];
}

const SIZES = [64, 1024, 4096];
const LABELS = ['64 B', '1 KiB', '4 KiB'];
const rows: Row[] = [];

function row(name: string, bufsFor: (size: number) => Uint8Array[], fn: (b: Uint8Array) => number, bytes: (size: number) => number): void {
  const r: Row = { name, gbps: [], nsPerCall: [] };
  for (const size of SIZES) {
    const s = measure(fn, bufsFor(size));
    r.nsPerCall.push(s * 1e9);
    r.gbps.push(bytes(size) / s / 1e9);
  }
  rows.push(r);
  if (!json) process.stderr.write(`  measured ${name}\n`);
}

function thresholdTable(): void {
  const lens = [16, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 512, 768, 1024];
  const out: Array<{ len: number; jsNs: number; zlibNs: number; crc32pkgNs: number }> = [];
  for (const len of lens) {
    const bufs = [0, 1, 2, 3].map((k) => randomBytes(len + 7, k + 1));
    // Runs at offset 7 of a larger buffer, as the payload of a frame.
    const js = measure((b) => crc32Update(0xffffffff, b, 7, b.length), bufs);
    const zl = measure((b) => crc32UpdateZlib(0xffffffff, b, 7, b.length), bufs);
    const pk = measure((b) => CRC32.buf(b.subarray(7), 0), bufs);
    out.push({ len, jsNs: js * 1e9, zlibNs: zl * 1e9, crc32pkgNs: pk * 1e9 });
  }
  if (json) {
    console.log(JSON.stringify({ node: process.version, zlibMinLen: ZLIB_MIN_LEN, threshold: out }, null, 2));
    return;
  }
  console.log(`ns per call over a run at offset 7 (current ZLIB_MIN_LEN = ${ZLIB_MIN_LEN})`);
  console.log('| length | JS slicing-by-16 | zlib.crc32 via view | crc-32 via subarray |');
  console.log('|---|---|---|---|');
  for (const r of out) {
    console.log(`| ${r.len} | ${r.jsNs.toFixed(0)} | ${r.zlibNs.toFixed(0)} | ${r.crc32pkgNs.toFixed(0)} |`);
  }
}

function main(): void {
  if (args.includes('--threshold')) {
    thresholdTable();
    return;
  }
  const frames = new Map<number, Uint8Array[]>();
  const raws = new Map<number, Uint8Array[]>();
  for (const size of SIZES) {
    frames.set(
      size,
      [0, 1, 2, 3, 4, 5, 6, 7].map((k) => roceFrame(size, 100 + k)),
    );
    raws.set(
      size,
      [0, 1, 2, 3, 4, 5, 6, 7].map((k) => randomBytes(size, 200 + k)),
    );
  }
  const frameBytes = (size: number): number => ETH + HDRS + size + 4;
  const rawBytes = (size: number): number => size;
  const fr = (size: number): Uint8Array[] => frames.get(size)!;
  const rw = (size: number): Uint8Array[] => raws.get(size)!;

  row('ICRC icrcV2 (full RoCE v2 frame)', fr, (f) => icrcV2(f, ETH, f.length - 4), frameBytes);
  row('npm crc-32 CRC32.buf', rw, (b) => CRC32.buf(b, 0), rawBytes);
  row('Node zlib.crc32', rw, (b) => zlib.crc32(b, 0), rawBytes);
  row('JS slicing-by-16 (crc32Update)', rw, (b) => crc32Update(0xffffffff, b, 0, b.length), rawBytes);
  row('JS slicing-by-8 (bench only)', rw, (b) => crc32Slice8(0xffffffff, b, 0, b.length), rawBytes);
  row('crc32UpdateFast (chosen per length)', rw, (b) => crc32UpdateFast(0xffffffff, b, 0, b.length), rawBytes);

  if (sink === 0x7fffffff) console.log(''); // keep results alive
  if (json) {
    const out = {
      node: process.version,
      runs,
      secondsPerRun: seconds,
      zlibMinLen: ZLIB_MIN_LEN,
      sizes: SIZES,
      rows: rows.map((r) => ({ name: r.name, gbps: r.gbps, nsPerCall: r.nsPerCall })),
    };
    console.log(JSON.stringify(out, null, 2));
    return;
  }
  console.log(`GB/s (ns per call), median of ${runs} runs of ~${seconds} s, Node ${process.version}`);
  console.log(`| implementation | ${LABELS.join(' | ')} |`);
  console.log(`|---|${LABELS.map(() => '---').join('|')}|`);
  for (const r of rows) {
    const cells = r.gbps.map((g, i) => `${g.toFixed(2)} (${r.nsPerCall[i]!.toFixed(0)} ns)`);
    console.log(`| ${r.name} | ${cells.join(' | ')} |`);
  }
}

main();
