/**
 * `roce analyze` benchmark: frames per second of the streaming analysis
 * (chunked file reader + decode with ICRC check + conversation, flag,
 * episode and rule tracking, keeping only counts) on a generated capture of
 * 1 M frames, and peak memory at 250 K and 1 M frames to show it does not
 * grow with the file. Each measurement runs in a fresh child process.
 *
 *   npm run build && node dist/bench/analyze.js [--frames N] [--json] [--keep-file]
 *
 * Then the whole program, `roce analyze FILE` (its text summary), on one thread and on two
 * (capture-engine/analyze-workers.ts), alternating, three runs each: wall time from start to exit, node's
 * start-up included, and peak RSS, on the 1/4, 1 and 3 times N pcap files.
 *
 * The capture: two RC QP pairs, 64-byte RDMA WRITE ONLY requests, AckReq on
 * every 4th, one coalesced ACK per 4 requests, and every 997th request lost
 * after the capture point: the responder NAKs and the requester goes back N. Also, at N frames,
 * a capture of requests only with every other PSN missing: every frame is out of sequence.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildRoceV2Frame, type RoceV2Spec } from '../packets/build';
import { Opcode } from '../packets/opcodes';
import { analyzeFile } from '../analysis/analyzer';
import { streamCaptureFile } from '../analysis/capture-stream';

const ETH_A = 0x020000000001;
const ETH_B = 0x020000000002;

/**
 * Writes a classic nanosecond pcap of about `frames` frames; returns the count written. `holes`:
 * instead, only requests, every other PSN of them missing, so that every one is out of sequence and
 * its flags stay open (the analysis holds up to 65 536 such frames, analysis/pending-frames.ts).
 */
export function writeBenchCapture(file: string, frames: number, holes = false): number {
  const fd = fs.openSync(file, 'w');
  const buf = Buffer.alloc(4 << 20);
  let off = 0;
  const flush = (): void => {
    fs.writeSync(fd, buf, 0, off);
    off = 0;
  };
  buf.writeUInt32LE(0xa1b23c4d, 0);
  buf.writeUInt16LE(2, 4);
  buf.writeUInt16LE(4, 6);
  buf.writeUInt32LE(262144, 16);
  buf.writeUInt32LE(1, 20);
  off = 24;
  let t = 1_700_000_000_000_000_000n;
  let n = 0;
  const put = (f: Uint8Array): void => {
    if (off + 16 + f.length > buf.length) flush();
    buf.writeUInt32LE(Number(t / 1_000_000_000n), off);
    buf.writeUInt32LE(Number(t % 1_000_000_000n), off + 4);
    buf.writeUInt32LE(f.length, off + 8);
    buf.writeUInt32LE(f.length, off + 12);
    buf.set(f, off + 16);
    off += 16 + f.length;
    t += 100n;
    n++;
  };
  const payload = new Uint8Array(64).fill(0x5a);
  const qps = [
    { a: 0x11, b: 0x12, psn: 1000, sent: 0 },
    { a: 0x13, b: 0x14, psn: 0xfff000, sent: 0 }, // wraps past 2^24 on the way
  ];
  const req = (q: (typeof qps)[number], psn: number, ackReq: boolean): Uint8Array => {
    const s: RoceV2Spec = {
      eth: { src: ETH_A, dst: ETH_B },
      ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2' },
      bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: q.b, psn, ackReq },
      reth: { va: 0x1000n, rkey: 7, dmaLength: 64 },
      payload,
    };
    return buildRoceV2Frame(s);
  };
  const resp = (q: (typeof qps)[number], psn: number, syndrome: number): Uint8Array =>
    buildRoceV2Frame({
      eth: { src: ETH_B, dst: ETH_A },
      ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1' },
      bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: q.a, psn },
      aeth: { syndrome, msn: psn & 0xffffff },
    });
  let i = 0;
  if (holes) {
    const q = qps[0]!;
    for (let psn = q.psn; n < frames; psn += 2) put(req(q, psn & 0xffffff, false));
  }
  while (n < frames) {
    const q = qps[i++ % qps.length]!;
    const base = q.psn;
    // Four requests, the last asks for an ACK.
    for (let k = 0; k < 4; k++) put(req(q, (base + k) & 0xffffff, k === 3));
    q.sent += 4;
    if (q.sent % 996 === 0) {
      // The second of the four was lost after the capture point: NAK, then go back to it.
      const lost = (base + 1) & 0xffffff;
      put(resp(q, lost, 0x60));
      for (let k = 1; k < 4; k++) put(req(q, (base + k) & 0xffffff, k === 3));
    }
    put(resp(q, (base + 3) & 0xffffff, 0x1f));
    q.psn = (base + 4) & 0xffffff;
  }
  flush();
  fs.closeSync(fd);
  return n;
}

/** Rewrites a classic pcap as pcapng (one section, one interface at ns resolution, an EPB per frame), streaming. */
export function convertToPcapng(pcapFile: string, outFile: string): void {
  const fd = fs.openSync(outFile, 'w');
  const buf = Buffer.alloc(4 << 20);
  let off = 0;
  const room = (n: number): void => {
    if (off + n > buf.length) {
      fs.writeSync(fd, buf, 0, off);
      off = 0;
    }
  };
  const blockStart = (type: number, total: number): void => {
    room(total);
    buf.writeUInt32LE(type, off);
    buf.writeUInt32LE(total, off + 4);
  };
  // Section Header Block (pcapng §4.1) and an Interface Description Block with if_tsresol 9 (§4.2).
  blockStart(0x0a0d0d0a, 28);
  buf.writeUInt32LE(0x1a2b3c4d, off + 8);
  buf.writeUInt16LE(1, off + 12);
  buf.writeUInt16LE(0, off + 14);
  buf.writeBigInt64LE(-1n, off + 16);
  buf.writeUInt32LE(28, off + 24);
  off += 28;
  blockStart(1, 32);
  buf.writeUInt16LE(1, off + 8);
  buf.writeUInt16LE(0, off + 10);
  buf.writeUInt32LE(0, off + 12);
  buf.writeUInt16LE(9, off + 16);
  buf.writeUInt16LE(1, off + 18);
  buf.writeUInt32LE(9, off + 20);
  buf.writeUInt32LE(0, off + 24);
  buf.writeUInt32LE(32, off + 28);
  off += 32;
  for (const r of streamCaptureFile(pcapFile)) {
    const padded = (r.data.length + 3) & ~3;
    const total = 32 + padded;
    blockStart(6, total);
    buf.writeUInt32LE(0, off + 8);
    buf.writeUInt32LE(Number(r.timestampNs >> 32n), off + 12);
    buf.writeUInt32LE(Number(r.timestampNs & 0xffffffffn), off + 16);
    buf.writeUInt32LE(r.data.length, off + 20);
    buf.writeUInt32LE(r.origLen, off + 24);
    buf.set(r.data, off + 28);
    buf.fill(0, off + 28 + r.data.length, off + 28 + padded);
    buf.writeUInt32LE(total, off + total - 4);
    off += total;
  }
  fs.writeSync(fd, buf, 0, off);
  fs.closeSync(fd);
}

interface ChildResult {
  frames: number;
  seconds: number;
  framesPerSec: number;
  maxRssMiB: number;
  /** Largest heap in use right after a full GC, sampled every 64 K frames. */
  heapUsedMiB: number;
  retransmissions: number;
  episodes: number;
  violations: number;
}

function child(file: string): void {
  const t0 = process.hrtime.bigint();
  let heap = 0;
  let seen = 0;
  const gc = (globalThis as { gc?: () => void }).gc;
  const r = analyzeFile(file, {
    keep: false,
    onFrame: () => {
      // Live heap (after a full collection) every 64 K frames: what the analysis keeps, not its garbage.
      if (++seen % 65536 === 0 && gc !== undefined) {
        gc();
        heap = Math.max(heap, process.memoryUsage().heapUsed);
      }
    },
  });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const out: ChildResult = {
    frames: r.frames.total,
    seconds: Math.round(secs * 100) / 100,
    framesPerSec: Math.round(r.frames.total / secs),
    maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    heapUsedMiB: Math.round((heap / 1048576) * 10) / 10,
    retransmissions: r.flagCounts.retransmission,
    episodes: r.episodeCount,
    violations: r.violationCount,
  };
  process.stdout.write(JSON.stringify(out));
}

function measure(file: string): ChildResult {
  const r = spawnSync(process.execPath, ['--expose-gc', __filename, '--child', file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as ChildResult;
}

interface ProgramRun {
  seconds: number;
  maxRssMiB: number;
  stdout: string;
}

const ROCE = path.resolve(__dirname, '..', '..', 'bin', 'roce.js');
const REPORT_RSS = path.join(__dirname, 'report-peak-rss.js');

/** `roce analyze --threads N file`, timed from spawn to exit. */
function program(file: string, threads: number): ProgramRun {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-r', REPORT_RSS, ROCE, 'analyze', '--threads', String(threads), file], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const rss = /\{"maxRssMiB":(\d+)\}/.exec(r.stderr);
  if (r.status !== 0 || rss === null) throw new Error(`roce analyze failed: ${r.stderr}`);
  return { seconds, maxRssMiB: Number(rss[1]), stdout: r.stdout };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The whole program on one and two threads, alternating; the two must print the same. */
function programRows(files: { file: string; frames: number; sizeMiB: number }[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const times: Record<number, number[]> = { 1: [], 2: [] };
    const rss: Record<number, number> = { 1: 0, 2: 0 };
    let text: string | null = null;
    for (let i = 0; i < 3; i++) {
      for (const t of [1, 2]) {
        const r = program(f.file, t);
        if (text !== null && r.stdout !== text) throw new Error(`roce analyze --threads ${t} printed something else than --threads 1 on ${f.file}`);
        text = r.stdout;
        (times[t] as number[]).push(r.seconds);
        rss[t] = Math.max(rss[t] as number, r.maxRssMiB);
      }
    }
    const one = median(times[1] as number[]);
    const two = median(times[2] as number[]);
    const fps = (s: number): string => Math.round(f.frames / s).toLocaleString('en-US');
    out.push(
      `| ${f.frames} frames | ${f.sizeMiB} MiB | ${fps(one)} (${one.toFixed(2)} s, ${rss[1]} MiB) | ${fps(two)} (${two.toFixed(2)} s, ${rss[2]} MiB) | ${(one / two).toFixed(2)}x |`,
    );
  }
  return out;
}

function main(): void {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') {
    child(argv[1] ?? '');
    return;
  }
  const fi = argv.indexOf('--frames');
  const big = fi >= 0 ? Number(argv[fi + 1]) : 1_000_000;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-analyze-'));
  try {
    const rows: { file: string; sizeMiB: number; result: ChildResult }[] = [];
    const pcaps: { file: string; frames: number; sizeMiB: number }[] = [];
    for (const n of [Math.round(big / 4), big]) {
      const file = path.join(dir, `bench-${n}.pcap`);
      const written = writeBenchCapture(file, n);
      const sizeMiB = Math.round(fs.statSync(file).size / 1048576);
      pcaps.push({ file, frames: written, sizeMiB });
      rows.push({ file: `${written} frames, pcap`, sizeMiB, result: measure(file) });
      const ng = path.join(dir, `bench-${n}.pcapng`);
      convertToPcapng(file, ng);
      rows.push({ file: `${written} frames, pcapng`, sizeMiB: Math.round(fs.statSync(ng).size / 1048576), result: measure(ng) });
    }
    const holes = path.join(dir, `holes-${big}.pcap`);
    const holeFrames = writeBenchCapture(holes, big, true);
    rows.push({ file: `${holeFrames} frames, every other PSN missing`, sizeMiB: Math.round(fs.statSync(holes).size / 1048576), result: measure(holes) });
    fs.rmSync(holes);
    const three = path.join(dir, `bench-${3 * big}.pcap`);
    const threeFrames = writeBenchCapture(three, 3 * big);
    pcaps.push({ file: three, frames: threeFrames, sizeMiB: Math.round(fs.statSync(three).size / 1048576) });
    const program = programRows(pcaps);
    if (argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify({ library: rows, program }, null, 2)}\n`);
    } else {
      process.stdout.write(`roce analyze, streaming (keep: false), node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'}\n`);
      process.stdout.write(
        '| capture | file | frames/s | time | peak RSS | live heap | retransmissions | episodes | violations |\n|---|---|---|---|---|---|---|---|---|\n',
      );
      for (const r of rows) {
        const x = r.result;
        process.stdout.write(
          `| ${r.file} | ${r.sizeMiB} MiB | ${x.framesPerSec.toLocaleString('en-US')} | ${x.seconds} s | ${x.maxRssMiB} MiB | ${x.heapUsedMiB} MiB | ${x.retransmissions} | ${x.episodes} | ${x.violations} |\n`,
        );
      }
      process.stdout.write(
        '\nroce analyze FILE (the whole program, text summary, every ICRC checked), median of 3 alternating runs: frames/s (time, peak RSS)\n',
      );
      process.stdout.write('| capture | file | --threads 1 | --threads 2 | speed-up |\n|---|---|---|---|---|\n');
      for (const line of program) process.stdout.write(`${line}\n`);
    }
  } finally {
    if (!argv.includes('--keep-file')) fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) main();
