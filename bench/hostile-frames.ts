/**
 * Memory under attack: a live RC QP pair on the in-memory link, and a third party that
 * sends the victim's QP 10 M bad frames with valid ICRCs: PSNs outside the window, duplicates,
 * reserved opcodes, bad ICRCs, ghost ACKs and NAKs, forged CNPs, WRITEs with a wrong R_Key or a
 * VA outside the region ahead of the expected PSN. Every 250 000 frames the process's RSS and its
 * live heap (after a full collection) are sampled; they must stay flat. The reference, measured
 * in the same run, is the same process before the attack. The legitimate pair then still moves
 * data. Writes a CSV of the samples and an SVG plot next to it.
 *
 *   npm run build && node --expose-gc dist/bench/hostile-frames.js [--frames N] [--out DIR]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSimPair, SIM_IP_A, SIM_IP_B, SIM_MAC_A, SIM_MAC_B } from '../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../stack/connect';
import { QpType } from '../stack/qp-type-and-state';
import { Access } from '../stack/access-flags';
import { WrOpcode, SendFlags } from '../stack/work-request-codes';
import { WcStatus } from '../stack/work-completion';
import { buildRoceV2Frame, type TransportSpec } from '../packets/build';
import { Opcode } from '../packets/opcodes';

const gc = (globalThis as { gc?: () => void }).gc;

function sample(): { rssMiB: number; heapMiB: number } {
  gc?.();
  const m = process.memoryUsage();
  return { rssMiB: Math.round((m.rss / 1048576) * 10) / 10, heapMiB: Math.round((m.heapUsed / 1048576) * 10) / 10 };
}

function main(): void {
  const argv = process.argv.slice(2);
  const fi = argv.indexOf('--frames');
  const total = fi >= 0 ? Number(argv[fi + 1]) : 10_000_000;
  const oi = argv.indexOf('--out');
  const outDir = oi >= 0 ? (argv[oi + 1] as string) : path.resolve(__dirname, '..', '..', 'docs', 'images');
  const sim = createSimPair({ seed: 9 });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const cqA = sim.a.createCq(4096);
  const cqB = sim.b.createCq(4096);
  const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: 256, maxRecvWr: 256 } });
  const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, cap: { maxSendWr: 256, maxRecvWr: 256 } });
  const bufA = new Uint8Array(1 << 16);
  const bufB = new Uint8Array(1 << 16);
  const mrA = sim.a.regMr(pdA, bufA, Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, bufB, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
  const epA = endpointOf(sim.a, qpA, 1000);
  const epB = endpointOf(sim.b, qpB, 5000);
  connectQp(qpA, epA, epB);
  connectQp(qpB, epB, epA);

  /** The legitimate traffic: `n` RDMA WRITEs of 4 KiB from A to B, all completed. */
  const legit = (n: number): boolean => {
    for (let i = 0; i < n; i++)
      qpA.postSend({
        wrId: BigInt(i),
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [mrA.sge(0, 4096)],
        rdma: { remoteAddr: mrB.addr(0), rkey: mrB.rkey },
        sendFlags: SendFlags.SIGNALED,
      });
    let done = 0;
    sim.clock.runWhile(() => {
      for (const wc of cqA.poll(64)) if (wc.status === WcStatus.SUCCESS) done++;
      return done < n;
    }, 10_000_000);
    return done === n;
  };
  if (!legit(64)) throw new Error('the pair does not work before the attack');
  const before = sample();

  // The bad frames: each kind at several PSNs, built once with a valid ICRC (a bad ICRC kind has a wrong one on purpose).
  const ePsn = (): number => qpB.resp.psn;
  const frames: Uint8Array[] = [];
  const from = { eth: { src: SIM_MAC_A, dst: SIM_MAC_B }, ip: { version: 4 as const, src: SIM_IP_A, dst: SIM_IP_B } };
  const add = (t: TransportSpec, icrc?: number): void => void frames.push(buildRoceV2Frame({ ...from, ...t, ...(icrc !== undefined ? { icrc } : {}) }));
  for (let k = 0; k < 64; k++) {
    const ahead = (ePsn() + (1 << 22) + k * 977) & 0xffffff; // far outside the window
    const behind = (ePsn() - 1 - k) & 0xffffff; // duplicates
    const dest = qpB.qpNum;
    add({ bth: { opcode: Opcode.RC_SEND_ONLY, destQp: dest, psn: ahead, ackReq: true }, payload: new Uint8Array(64) });
    add({
      bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: dest, psn: behind, ackReq: true },
      reth: { va: mrB.addr(0), rkey: mrB.rkey, dmaLength: 8 },
      payload: new Uint8Array(8),
    });
    add({
      bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: dest, psn: ahead, ackReq: true },
      reth: { va: 0xdead0000n, rkey: 0x4242, dmaLength: 8 },
      payload: new Uint8Array(8),
    });
    add({
      bth: { opcode: Opcode.RC_RDMA_READ_REQUEST, destQp: dest, psn: ahead, ackReq: true },
      reth: { va: mrB.addr(0), rkey: mrB.rkey, dmaLength: 0x8000_0000 },
    });
    add({ bth: { opcode: Opcode.RC_SEND_ONLY, destQp: dest, psn: ePsn(), ackReq: true }, payload: new Uint8Array(32) }, 0x12345678);
    add({ bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: dest, psn: (qpB.attr.sqPsn + 100 + k) & 0xffffff }, aeth: { syndrome: 0x1f, msn: k } });
    add({ bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: dest, psn: (qpB.attr.sqPsn + 100 + k) & 0xffffff }, aeth: { syndrome: 0x60, msn: k } });
    add({ bth: { opcode: Opcode.CNP, destQp: dest, psn: 0 }, payload: new Uint8Array(16) });
    add({ bth: { opcode: Opcode.RC_SEND_ONLY, destQp: (dest + 1 + k) & 0xffffff, psn: ahead, ackReq: true }, payload: new Uint8Array(64) });
  }
  const samples: { frames: number; rssMiB: number; heapMiB: number }[] = [{ frames: 0, ...before }];
  const BURST = 64;
  const burst: Uint8Array[] = [];
  const t0 = process.hrtime.bigint();
  for (let sent = 0; sent < total; ) {
    burst.length = 0;
    for (let i = 0; i < BURST; i++) burst.push(frames[(sent + i) % frames.length] as Uint8Array);
    sim.link.a.txBurst(burst);
    sent += BURST;
    sim.clock.runUntil(sim.clock.now() + 1000);
    for (; cqB.poll(64).length > 0; );
    if (sent % 249_984 === 0 || sent >= total) samples.push({ frames: sent, ...sample() });
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  sim.clock.runUntil(sim.clock.now() + 10_000_000);
  const stillWorks = legit(64);
  const c = sim.b.totalCounters();
  const after = samples[samples.length - 1] as (typeof samples)[number];
  const peak = samples.reduce((m, s) => Math.max(m, s.rssMiB), 0);
  const heapPeak = samples.reduce((m, s) => Math.max(m, s.heapMiB), 0);
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(
    path.join(outDir, 'rss-under-attack.csv'),
    `frames,rss_mib,heap_mib\n${samples.map((s) => `${s.frames},${s.rssMiB},${s.heapMiB}`).join('\n')}\n`,
  );
  fs.writeFileSync(path.join(outDir, 'rss-under-attack.svg'), plot(samples));
  const summary = {
    frames: total,
    seconds: Math.round(secs * 10) / 10,
    framesPerSec: Math.round(total / secs),
    before,
    after,
    peakRssMiB: peak,
    peakHeapMiB: heapPeak,
    legitimateTrafficAfter: stillWorks,
    victimQpState: qpB.state,
    counters: {
      rcvd_icrc_err: c.rcvd_icrc_err,
      rcvd_unknown_qp: c.rcvd_unknown_qp,
      out_of_seq_request: c.out_of_seq_request,
      duplicate_request: c.duplicate_request,
      send_seq_err_nak: c.send_seq_err_nak,
      rcvd_malformed: c.rcvd_malformed,
    },
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

/** A small line plot of RSS and live heap against frames sent. */
function plot(samples: readonly { frames: number; rssMiB: number; heapMiB: number }[]): string {
  const W = 640;
  const H = 320;
  const L = 60;
  const B = 40;
  const maxX = Math.max(1, ...samples.map((s) => s.frames));
  const maxY = Math.max(1, ...samples.map((s) => s.rssMiB)) * 1.2;
  const x = (v: number): number => L + ((W - L - 20) * v) / maxX;
  const y = (v: number): number => H - B - ((H - B - 20) * v) / maxY;
  const line = (k: 'rssMiB' | 'heapMiB', color: string): string =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${samples.map((s) => `${x(s.frames).toFixed(1)},${y(s[k]).toFixed(1)}`).join(' ')}"/>`;
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => `<text x="${x(f * maxX).toFixed(1)}" y="${H - B + 16}" font-size="11" text-anchor="middle">${((f * maxX) / 1e6).toFixed(1)} M</text>`)
    .join('');
  const yticks = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => `<text x="${L - 6}" y="${y(f * maxY).toFixed(1)}" font-size="11" text-anchor="end">${(f * maxY).toFixed(0)}</text>`)
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/><text x="${L}" y="14" font-size="13">Memory while a live QP receives bad frames (MiB)</text><line x1="${L}" y1="${H - B}" x2="${W - 20}" y2="${H - B}" stroke="#999"/><line x1="${L}" y1="20" x2="${L}" y2="${H - B}" stroke="#999"/>${ticks}${yticks}<text x="${(W + L) / 2}" y="${H - 6}" font-size="12" text-anchor="middle">bad frames sent</text>${line('rssMiB', '#c0392b')}${line('heapMiB', '#2471a3')}<text x="${W - 150}" y="40" font-size="12" fill="#c0392b">RSS</text><text x="${W - 150}" y="56" font-size="12" fill="#2471a3">live heap after GC</text></svg>\n`;
}

if (require.main === module) main();
