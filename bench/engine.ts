/**
 * Engine benchmark: two stacks in one process over the in-memory link (no
 * faults), on one core, measured in wall-clock time. RDMA WRITE of 64 KiB at
 * path MTU 4096 (Gbit/s of payload), 8-byte WRITE message rate, READ of 64 KiB.
 *
 *   npm run build && node dist/bench/engine.js [--seconds S] [--repeat N] [--only CASE] [--json]
 *   node --cpu-prof dist/bench/engine.js --only write64k   (profile)
 */
import { createSimPair } from '../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../stack/connect';
import { QpType } from '../stack/qp-type-and-state';
import { Access } from '../stack/access-flags';
import { SendFlags, WrOpcode } from '../stack/work-request-codes';
import { WcStatus } from '../stack/work-completion';
import type { Mtu } from '../stack/mtu';
import { nativeAvailable } from '../nic-driver/native-binding';
import { applyNativeSwitch } from '../apps/host/environment';

interface Case {
  name: string;
  opcode: number;
  size: number;
  mtu: Mtu;
}

const CASES: Case[] = [
  { name: 'write64k', opcode: WrOpcode.RDMA_WRITE, size: 64 * 1024, mtu: 5 },
  { name: 'write8', opcode: WrOpcode.RDMA_WRITE, size: 8, mtu: 5 },
  { name: 'read64k', opcode: WrOpcode.RDMA_READ, size: 64 * 1024, mtu: 5 },
];

interface Result {
  name: string;
  messages: number;
  seconds: number;
  gbps: number;
  msgsPerSec: number;
  packetsPerSec: number;
  /** Packets per second of CPU time used by this process (all its threads): steadier than wall time on a busy machine. */
  packetsPerCpuSec: number;
  cpuSeconds: number;
  virtualSeconds: number;
}

function runCase(c: Case, seconds: number, depth = 32): Result {
  const sim = createSimPair({ seed: 1, latencyNs: 1000, bandwidthBps: 0, maxUnackedPsns: 512 });
  const acc = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const bufA = new Uint8Array(c.size * depth);
  const bufB = new Uint8Array(c.size * depth);
  bufA.fill(0x5a);
  bufB.fill(0xa5);
  const mrA = sim.a.regMr(pdA, bufA, acc);
  const mrB = sim.b.regMr(pdB, bufB, acc);
  const cqA = sim.a.createCq(depth * 4);
  const cqB = sim.b.createCq(depth * 4);
  const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: depth * 2 } });
  const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
  const ea = endpointOf(sim.a, qpA, 1);
  const eb = endpointOf(sim.b, qpB, 1000);
  connectQp(qpA, ea, eb, { pathMtu: c.mtu, timeout: 14 });
  connectQp(qpB, eb, ea, { pathMtu: c.mtu, timeout: 14 });
  let posted = 0;
  let done = 0;
  const post = (slot: number): void => {
    qpA.postSend({
      wrId: posted++,
      opcode: c.opcode as 0,
      sgList: [mrA.sge(slot * c.size, c.size)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: mrB.addr(slot * c.size), rkey: mrB.rkey },
    });
  };
  for (let i = 0; i < depth; i++) post(i);
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const deadline = t0 + BigInt(Math.round(seconds * 1e9));
  let stop = false;
  let checks = 0;
  sim.clock.runWhile(() => {
    for (const wc of cqA.poll(64)) {
      if (wc.status !== WcStatus.SUCCESS) throw new Error(`completion error ${wc.status}`);
      done++;
      if (!stop) post(Number(wc.wrId % BigInt(depth)));
    }
    if ((++checks & 255) === 0 && process.hrtime.bigint() > deadline) stop = true;
    return !(stop && done === posted);
  });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuSecs = (cpu.user + cpu.system) / 1e6;
  const pkts = sim.a.totalCounters().sent_pkts + sim.b.totalCounters().sent_pkts;
  return {
    name: c.name,
    messages: done,
    seconds: secs,
    gbps: (done * c.size * 8) / secs / 1e9,
    msgsPerSec: done / secs,
    packetsPerSec: pkts / secs,
    packetsPerCpuSec: pkts / cpuSecs,
    cpuSeconds: cpuSecs,
    virtualSeconds: sim.clock.now() / 1e9,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function main(): void {
  applyNativeSwitch(process.env); // ROCE_NO_NATIVE=1: the TypeScript ICRC
  const argv = process.argv.slice(2);
  const si = argv.indexOf('--seconds');
  const seconds = si >= 0 ? Number(argv[si + 1]) : 3;
  const oi = argv.indexOf('--only');
  const only = oi >= 0 ? argv[oi + 1] : undefined;
  const ri = argv.indexOf('--repeat');
  const repeat = ri >= 0 && Number(argv[ri + 1]) >= 1 ? Math.floor(Number(argv[ri + 1])) : 1;
  const cases = CASES.filter((c) => only === undefined || c.name === only);
  if (cases.length === 0) throw new Error(`--only: no case named ${JSON.stringify(only)} (cases: ${CASES.map((c) => c.name).join(', ')})`);
  for (const c of cases) runCase(c, 0.3); // warm-up
  // With --repeat, the cases take turns (a, b, c, a, b, c, ...), so a slow spell of the machine
  // hits every case rather than one; the summary gives each case's median and range.
  const runs: Result[][] = cases.map(() => []);
  for (let r = 0; r < repeat; r++) cases.forEach((c, i) => runs[i]?.push(runCase(c, seconds)));
  const results = runs.map((rs) => rs[0] as Result);
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, icrc: nativeAvailable() ? 'native' : 'js', results, ...(repeat > 1 ? { runs } : {}) }, null, 2));
    return;
  }
  if (repeat > 1) {
    console.log(
      `engine alone, one core, in-memory link, no faults, node ${process.version}, ${repeat} runs of ${seconds} s per case in turn, ICRC ${nativeAvailable() ? 'native, batched per burst' : 'TypeScript (zlib.crc32)'}`,
    );
    console.log(
      `${'case'.padEnd(10)} ${'packets/s: median'.padStart(18)} ${'min'.padStart(10)} ${'max'.padStart(10)} ${'Gbit/s median'.padStart(14)}   runs (packets/s)`,
    );
    runs.forEach((rs, i) => {
      const pps = rs.map((r) => r.packetsPerSec);
      const g = median(rs.map((r) => r.gbps));
      console.log(
        `${(cases[i]?.name ?? '').padEnd(10)} ${Math.round(median(pps)).toString().padStart(18)} ${Math.round(Math.min(...pps))
          .toString()
          .padStart(10)} ${Math.round(Math.max(...pps))
          .toString()
          .padStart(10)} ${g.toFixed(2).padStart(14)}   ${pps.map((x) => Math.round(x / 1000)).join(' ')} k`,
      );
    });
    return;
  }
  console.log(
    `engine alone, one core, in-memory link, no faults, node ${process.version}, ${seconds} s per case, ICRC ${nativeAvailable() ? 'native, batched per burst' : 'TypeScript (zlib.crc32)'}`,
  );
  console.log(
    `${'case'.padEnd(10)} ${'messages'.padStart(9)} ${'payload Gbit/s'.padStart(15)} ${'msgs/s'.padStart(11)} ${'packets/s'.padStart(11)} ${'pkts/CPU-s'.padStart(11)}`,
  );
  for (const r of results) {
    console.log(
      `${r.name.padEnd(10)} ${String(r.messages).padStart(9)} ${r.gbps.toFixed(2).padStart(15)} ${Math.round(r.msgsPerSec).toString().padStart(11)} ${Math.round(r.packetsPerSec).toString().padStart(11)} ${Math.round(r.packetsPerCpuSec).toString().padStart(11)}`,
    );
  }
}

main();
