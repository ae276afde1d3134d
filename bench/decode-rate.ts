/**
 * Decode-rate benchmark: frames per second through the decoder loop (no
 * printing), with and without the ICRC check, and `roce decode --json` against
 * tshark on the same file, run side by side.
 *
 *   npm run build && node dist/bench/decode-rate.js [--frames N] [--json] [--no-tshark]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { buildRoceV2Frame, type RoceV2Spec } from '../packets/build';
import { decodeAt } from '../packets/decode';
import { Opcode } from '../packets/opcodes';
import { PcapWriter, readCapture } from '../packets/pcap';

interface Mix {
  name: string;
  spec: (i: number) => RoceV2Spec;
}

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const ip = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };

const MIXES: Mix[] = [
  { name: 'ACK (62 B frames)', spec: (i) => ({ eth, ip, bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn: i & 0xffffff }, aeth: { syndrome: 0x1f, msn: i & 0xffffff } }) },
  { name: 'SEND MIDDLE 1 KiB', spec: (i) => ({ eth, ip, bth: { opcode: Opcode.RC_SEND_MIDDLE, destQp: 0x11, psn: i & 0xffffff }, payload: new Uint8Array(1024).fill(i & 0xff) }) },
  { name: 'WRITE FIRST 4 KiB', spec: (i) => ({ eth, ip, bth: { opcode: Opcode.RC_RDMA_WRITE_FIRST, destQp: 0x11, psn: i & 0xffffff }, reth: { va: BigInt(i) * 4096n, rkey: 0x1234, dmaLength: 1 << 20 }, payload: new Uint8Array(4096).fill(i & 0xff) }) },
  {
    name: 'mixed (1 ACK : 1 x 1 KiB SEND)',
    spec: (i) => (i % 2 === 0 ? MIXES[0]!.spec(i) : MIXES[1]!.spec(i)),
  },
];

function makeCapture(mix: Mix, frames: number): Uint8Array {
  const w = new PcapWriter();
  // Build a small ring of distinct frames and repeat it: building is not what is measured.
  const ring = Array.from({ length: 256 }, (_, i) => buildRoceV2Frame(mix.spec(i)));
  for (let i = 0; i < frames; i++) w.add(ring[i % ring.length]!, 1_700_000_000_000_000_000n + BigInt(i) * 1000n);
  return w.toBytes();
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
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
      const d = decodeAt(view, file, start, start + rec.data.byteLength, rec.linkType, { verifyIcrc });
      if (d.roce && d.bth !== null) sink += d.bth.psn;
    }
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    rates.push(cap.records.length / secs);
  }
  if (sink === -1) console.log(sink);
  return median(rates);
}

function timeCommand(cmd: string, args: string[], runs = 3): number {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    const res = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'], timeout: 300_000 });
    if (res.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${res.status}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return median(times);
}

function hasTshark(): boolean {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
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
  // Whole-program comparison on one file: roce decode --json vs tshark, side by side.
  const cliFrames = Math.min(frames, 100_000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-'));
  const pcap = path.join(tmp, 'mixed.pcap');
  fs.writeFileSync(pcap, makeCapture(MIXES[3]!, cliFrames));
  const roceBin = path.join(__dirname, '..', '..', 'bin', 'roce.js');
  const roceJson = timeCommand(process.execPath, [roceBin, 'decode', '--json', pcap]);
  const roceLines = timeCommand(process.execPath, [roceBin, 'decode', pcap]);
  const side: Record<string, unknown> = {
    file: `${cliFrames} frames, mixed ACK / 1 KiB SEND`,
    roceDecodeJsonFps: Math.round(cliFrames / roceJson),
    roceDecodeSummaryFps: Math.round(cliFrames / roceLines),
  };
  if (!argv.includes('--no-tshark') && hasTshark()) {
    side['tsharkFieldsFps'] = Math.round(cliFrames / timeCommand('tshark', ['-n', '-r', pcap, '-T', 'fields', '-e', 'infiniband.bth.psn']));
    side['tsharkSummaryFps'] = Math.round(cliFrames / timeCommand('tshark', ['-n', '-r', pcap]));
  } else {
    side['tshark'] = 'not run (tshark missing or --no-tshark)';
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  if (json) {
    console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, loop: results, cli: side }, null, 2));
    return;
  }
  console.log(`decode loop (no printing), node ${process.version}, ${frames} frames per mix, median of 5 runs`);
  console.log(`${'mix'.padEnd(34)} ${'with ICRC'.padStart(14)} ${'without ICRC'.padStart(14)}`);
  for (const r of results) {
    console.log(`${String(r['mix']).padEnd(34)} ${`${(Number(r['decodeWithIcrcFps']) / 1e6).toFixed(2)} M/s`.padStart(14)} ${`${(Number(r['decodeNoIcrcFps']) / 1e6).toFixed(2)} M/s`.padStart(14)}`);
  }
  console.log(`\nwhole program on ${String(side['file'])} (median of 3 runs, output to /dev/null):`);
  for (const [k, v] of Object.entries(side)) if (k !== 'file') console.log(`  ${k.padEnd(22)} ${typeof v === 'number' ? `${(v / 1e3).toFixed(0)} k frames/s` : String(v)}`);
}

main();
