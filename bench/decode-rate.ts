/**
 * Decode-rate benchmark: frames per second through the decoder loop (no
 * printing), with and without the ICRC check, and `roce decode --json` against
 * tshark on the same file, run side by side.
 *
 *   npm run build && node dist/bench/decode-rate.js [--frames N] [--cli-frames N] [--json] [--no-tshark]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { hasTshark, median, timeCommand } from './command-timing';
import { buildRoceV2Frame, type RoceV2Spec } from '../packets/build';
import { decodeAt } from '../packets/decode';
import { Opcode } from '../packets/opcodes';
import { PCAP_HEADER_LEN, PcapWriter, readCapture } from '../packets/pcap';

interface Mix {
  name: string;
  spec: (i: number) => RoceV2Spec;
  /** Changes the built frame (the bench's imperfect captures). */
  spoil?: (frame: Uint8Array) => Uint8Array;
}

/** The ICRC zeroed, as a capture tool that does not keep it writes it. */
const zeroIcrc = (f: Uint8Array): Uint8Array => {
  f.fill(0, f.length - 4);
  return f;
};

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const ip = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };

const MIXES: Mix[] = [
  {
    name: 'ACK (62 B frames)',
    spec: (i) => ({ eth, ip, bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn: i & 0xffffff }, aeth: { syndrome: 0x1f, msn: i & 0xffffff } }),
  },
  {
    name: 'SEND MIDDLE 1 KiB',
    spec: (i) => ({ eth, ip, bth: { opcode: Opcode.RC_SEND_MIDDLE, destQp: 0x11, psn: i & 0xffffff }, payload: new Uint8Array(1024).fill(i & 0xff) }),
  },
  {
    name: 'WRITE FIRST 4 KiB',
    spec: (i) => ({
      eth,
      ip,
      bth: { opcode: Opcode.RC_RDMA_WRITE_FIRST, destQp: 0x11, psn: i & 0xffffff },
      reth: { va: BigInt(i) * 4096n, rkey: 0x1234, dmaLength: 1 << 20 },
      payload: new Uint8Array(4096).fill(i & 0xff),
    }),
  },
  {
    name: 'mixed (1 ACK : 1 x 1 KiB SEND)',
    spec: (i) => (i % 2 === 0 ? MIXES[0]!.spec(i) : MIXES[1]!.spec(i)),
  },
  // Imperfect captures, every frame a decode error.
  { name: 'ACK, ICRC not kept (zeroed)', spec: (i) => MIXES[0]!.spec(i), spoil: zeroIcrc },
  {
    name: 'READ RESPONSE MIDDLE of 64 B (not a path MTU)',
    spec: (i) => ({
      eth,
      ip,
      bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, destQp: 0x11, psn: i & 0xffffff },
      payload: new Uint8Array(64).fill(i & 0xff),
    }),
  },
  // Frames a capture tool cut, writing the cut length as the original length too (the record does not say).
  { name: 'WRITE FIRST 4 KiB cut to 243 B', spec: (i) => MIXES[2]!.spec(i), spoil: (f) => f.slice(0, 243) },
  { name: 'WRITE FIRST cut to 60 B (inside the RETH)', spec: (i) => MIXES[2]!.spec(i), spoil: (f) => f.slice(0, 60) },
];

const frameOf = (mix: Mix, i: number): Uint8Array => {
  const f = buildRoceV2Frame(mix.spec(i));
  return mix.spoil === undefined ? f : mix.spoil(f);
};

function makeCapture(mix: Mix, frames: number): Uint8Array {
  const w = new PcapWriter();
  // Build a small ring of distinct frames and repeat it: building is not what is measured.
  const ring = Array.from({ length: 256 }, (_, i) => frameOf(mix, i));
  for (let i = 0; i < frames; i++) w.add(ring[i % ring.length]!, 1_700_000_000_000_000_000n + BigInt(i) * 1000n);
  return w.toBytes();
}

/** Writes a capture of `frames` frames of `mix` to `file` a batch at a time (it may not fit in memory twice). */
function writeCaptureFile(mix: Mix, frames: number, file: string): void {
  const ring = Array.from({ length: 256 }, (_, i) => frameOf(mix, i));
  const fd = fs.openSync(file, 'w');
  try {
    for (let from = 0; from < frames; from += 50_000) {
      const w = new PcapWriter();
      for (let i = from; i < Math.min(frames, from + 50_000); i++) w.add(ring[i % ring.length]!, 1_700_000_000_000_000_000n + BigInt(i) * 1000n);
      const bytes = w.toBytes();
      fs.writeSync(fd, from === 0 ? bytes : bytes.subarray(PCAP_HEADER_LEN));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Frames/s of the decode loop over an in-memory capture (median of `runs`). */
function decodeLoopRate(file: Uint8Array, verifyIcrc: boolean, runs = 5): number {
  const cap = readCapture(file);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const rates: number[] = [];
  let sink = 0;
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    for (const rec of cap.records) {
      const start = rec.data.byteOffset - file.byteOffset;
      const d = decodeAt(view, file, start, start + rec.data.byteLength, rec.linkType, { verifyIcrc }, rec.origLen);
      if (d.roce && d.bth !== null) sink += d.bth.psn;
    }
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    rates.push(cap.records.length / secs);
  }
  if (sink === -1) console.log(sink);
  return median(rates);
}

function main(): void {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  const fi = argv.indexOf('--frames');
  const frames = fi >= 0 ? Number(argv[fi + 1]) : 200_000;
  const results: Record<string, unknown>[] = [];
  // Warm the JIT on every mix first so the first measured mix is not penalised.
  for (const mix of MIXES) decodeLoopRate(makeCapture(mix, 20_000), true, 2);
  for (const mix of MIXES) {
    const file = makeCapture(mix, frames);
    results.push({
      mix: mix.name,
      frames,
      decodeWithIcrcFps: Math.round(decodeLoopRate(file, true)),
      decodeNoIcrcFps: Math.round(decodeLoopRate(file, false)),
    });
  }
  // Whole-program comparison on one file: roce decode in each mode against tshark, side by side.
  // Start-up (node, loading the CLI, opening the file) is timed as `--count 1` and also reported
  // taken out, so a figure for a file of any size can be read off.
  const ci = argv.indexOf('--cli-frames');
  const cliFrames = ci >= 0 ? Number(argv[ci + 1]) : 1_000_000;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-'));
  const pcap = path.join(tmp, 'mixed.pcap');
  writeCaptureFile(MIXES[3]!, cliFrames, pcap);
  const roceBin = path.join(__dirname, '..', '..', 'bin', 'roce.js');
  const startup = timeCommand(process.execPath, [roceBin, 'decode', '--count', '1', pcap]);
  const side: Record<string, unknown> = {
    file: `${cliFrames} frames, mixed ACK / 1 KiB SEND, ${(fs.statSync(pcap).size / 2 ** 20).toFixed(0)} MiB`,
    roceStartupSec: Number(startup.toFixed(3)),
  };
  const rows: [string, string, string[]][] = [
    ['roceSummary', process.execPath, [roceBin, 'decode', pcap]],
    ['roceSummaryNoIcrc', process.execPath, [roceBin, 'decode', '--no-icrc', pcap]],
    ['roceJson', process.execPath, [roceBin, 'decode', '--json', pcap]],
    ['roceJsonNoIcrc', process.execPath, [roceBin, 'decode', '--json', '--no-icrc', pcap]],
    // The same on the command's own thread only (the default uses one per core, up to 4).
    ['roceSummaryOneThread', process.execPath, [roceBin, 'decode', '--threads', '1', pcap]],
    ['roceJsonOneThread', process.execPath, [roceBin, 'decode', '--json', '--threads', '1', pcap]],
  ];
  if (!argv.includes('--no-tshark') && hasTshark()) {
    // tshark shows the ICRC field but does not check it.
    rows.push(['tsharkSummary', 'tshark', ['-n', '-r', pcap]], ['tsharkFields', 'tshark', ['-n', '-r', pcap, '-T', 'fields', '-e', 'infiniband.bth.psn']]);
  } else {
    side['tshark'] = 'not run (tshark missing or --no-tshark)';
  }
  // Alternate the commands run by run, so a slow minute of the machine falls on all of them.
  const times = new Map<string, number[]>(rows.map(([name]) => [name, []]));
  for (let r = 0; r < 3; r++) for (const [name, cmd, args] of rows) times.get(name)?.push(timeCommand(cmd, args, 1));
  for (const [name] of rows) {
    const t = median(times.get(name) ?? []);
    side[`${name}Fps`] = Math.round(cliFrames / t);
    if (name.startsWith('roce')) side[`${name}FpsAfterStartup`] = Math.round(cliFrames / Math.max(t - startup, 1e-3));
  }
  const ts = side['tsharkSummaryFps'];
  const tf = side['tsharkFieldsFps'];
  if (typeof ts === 'number' && typeof tf === 'number') {
    side['summaryOverTshark'] = Number((Number(side['roceSummaryFps']) / ts).toFixed(2));
    side['jsonOverTsharkFields'] = Number((Number(side['roceJsonFps']) / tf).toFixed(2));
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  if (json) {
    console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, loop: results, cli: side }, null, 2));
    return;
  }
  console.log(`decode loop (no printing), node ${process.version}, ${frames} frames per mix, median of 5 runs`);
  console.log(`${'mix'.padEnd(46)} ${'with ICRC'.padStart(14)} ${'without ICRC'.padStart(14)}`);
  for (const r of results) {
    console.log(
      `${String(r['mix']).padEnd(46)} ${`${(Number(r['decodeWithIcrcFps']) / 1e6).toFixed(2)} M/s`.padStart(14)} ${`${(Number(r['decodeNoIcrcFps']) / 1e6).toFixed(2)} M/s`.padStart(14)}`,
    );
  }
  console.log(`\nwhole program on ${String(side['file'])} (median of 3 runs, output to /dev/null):`);
  for (const [k, v] of Object.entries(side)) {
    if (k === 'file') continue;
    const text = typeof v !== 'number' ? String(v) : k.endsWith('Sec') ? `${v} s` : k.includes('Over') ? `${v}x` : `${(v / 1e3).toFixed(0)} k frames/s`;
    console.log(`  ${k.padEnd(30)} ${text}`);
  }
}

main();
