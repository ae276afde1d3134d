/**
 * Decode rate on a storage capture: `roce decode` against tshark on the same NVMe-oF file, run
 * side by side. The file is captures/nvme-rdma.pcap's I/O queue made long: its CM exchange once,
 * then its two keyed commands again and again (a Write whose data the controller fetches with an
 * RDMA READ of four responses, and a Read it answers with an RDMA WRITE of four packets and a SEND
 * with Invalidate), each frame with its own time. Every frame but the ACKs is NVMe-oF, so the
 * decoder's state pass and its words are on the measured path. The same frames without the CM
 * exchange (no conversation is NVMe-oF: every frame stays opaque) are timed too, on one thread:
 * against the row on the same thread, what decoding NVMe-oF costs.
 *
 *   npm run build && node dist/bench/decode-storage.js [--frames N] [--json] [--no-tshark]
 *   node dist/bench/decode-storage.js --write FILE [--frames N]   # the capture alone, to time other builds on
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { hasTshark, median, timeCommand } from './command-timing';
import { PcapWriter, readCapture, type CaptureRecord } from '../packets/pcap';

const SAMPLE = path.join(__dirname, '..', '..', 'captures', 'nvme-rdma.pcap');
/** The sample's I/O queue: its CM REQ, REP and RTU, then the keyed Write (42-50) and the invalidating Read (51-59). */
const CM = [26, 27, 28];
const ROUND = Array.from({ length: 59 - 42 + 1 }, (_, i) => 42 + i);

/** Writes the capture (`withCm` false: without its CM exchange) to `file`; its number of frames. */
function storageCapture(frames: number, file: string, withCm = true): number {
  const records = readCapture(new Uint8Array(fs.readFileSync(SAMPLE))).records;
  const at = (n: number): CaptureRecord => records[n - 1] as CaptureRecord;
  const w = new PcapWriter({ nanosecond: true });
  let t = at(26).timestampNs;
  let n = 0;
  const put = (r: CaptureRecord): void => {
    w.add(r.data, t);
    t += 1000n;
    n++;
  };
  if (withCm) for (const f of CM) put(at(f));
  while (n + ROUND.length <= frames) for (const f of ROUND) put(at(f));
  fs.writeFileSync(file, w.toBytes());
  return n;
}

function main(): void {
  const argv = process.argv.slice(2);
  const fi = argv.indexOf('--frames');
  const wanted = fi >= 0 ? Number(argv[fi + 1]) : 300_000;
  const wi = argv.indexOf('--write');
  const out = wi >= 0 ? argv[wi + 1] : undefined;
  if (out !== undefined) {
    console.log(`${storageCapture(wanted, out)} frames written to ${out}`);
    return;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-bench-storage-'));
  const pcap = path.join(tmp, 'nvme.pcap');
  const frames = storageCapture(wanted, pcap);
  const opaque = path.join(tmp, 'no-cm.pcap');
  const opaqueFrames = storageCapture(wanted, opaque, false);
  const roce = path.join(__dirname, '..', '..', 'bin', 'roce.js');
  const rows: [string, string, string[]][] = [
    ['roceSummary', process.execPath, [roce, 'decode', pcap]],
    ['roceJson', process.execPath, [roce, 'decode', '--json', pcap]],
    ['roceSummaryOneThread', process.execPath, [roce, 'decode', '--threads', '1', pcap]],
    ['roceSummaryOneThreadNoCm', process.execPath, [roce, 'decode', '--threads', '1', opaque]],
    ['roceAnalyze', process.execPath, [roce, 'analyze', pcap]],
  ];
  const side: Record<string, unknown> = { file: `${frames} frames of NVMe-oF over RoCE v2, ${(fs.statSync(pcap).size / 2 ** 20).toFixed(0)} MiB` };
  if (!argv.includes('--no-tshark') && hasTshark()) {
    rows.push(['tsharkSummary', 'tshark', ['-n', '-r', pcap]], ['tsharkFields', 'tshark', ['-n', '-r', pcap, '-T', 'fields', '-e', 'nvme.cmd.opc']]);
  } else side['tshark'] = 'not run (tshark missing or --no-tshark)';
  // Alternate the commands run by run, so a slow minute of the machine falls on all of them.
  const times = new Map<string, number[]>(rows.map(([name]) => [name, []]));
  for (let r = 0; r < 3; r++) for (const [name, cmd, args] of rows) times.get(name)?.push(timeCommand(cmd, args, 1));
  for (const [name] of rows) side[`${name}Fps`] = Math.round((name.endsWith('NoCm') ? opaqueFrames : frames) / median(times.get(name) ?? []));
  const ratio = (a: string, b: string): number => Number((Number(side[a]) / Number(side[b])).toFixed(2));
  if (typeof side['tsharkSummaryFps'] === 'number') {
    side['summaryOverTshark'] = ratio('roceSummaryFps', 'tsharkSummaryFps');
    side['oneThreadOverTshark'] = ratio('roceSummaryOneThreadFps', 'tsharkSummaryFps');
    side['jsonOverTsharkFields'] = ratio('roceJsonFps', 'tsharkFieldsFps');
  }
  // Above 1: how much faster the same frames decode when none of them is NVMe-oF.
  side['noCmOverCm'] = ratio('roceSummaryOneThreadNoCmFps', 'roceSummaryOneThreadFps');
  fs.rmSync(tmp, { recursive: true, force: true });
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, ...side }, null, 2));
    return;
  }
  console.log(`decode on ${String(side['file'])} (median of 3 runs, output to /dev/null), node ${process.version}:`);
  for (const [k, v] of Object.entries(side)) {
    if (k === 'file') continue;
    console.log(`  ${k.padEnd(28)} ${typeof v !== 'number' ? String(v) : k.includes('Over') ? `${v}x` : `${(v / 1e3).toFixed(0)} k frames/s`}`);
  }
}

main();
