/**
 * Many RC QPs between two stacks (how the stack scales with QPs), in one process over the in-memory link
 * on the virtual clock: N QP pairs on one CQ per side, each moving a little data (64-byte RDMA
 * WRITEs, one outstanding per QP), measured in wall-clock time on one core.
 *
 * Reported per N:
 *  - setup: wall time to create and connect one QP pair (both ends), mean over the N;
 *  - memory: the heap and external bytes one QP pair adds (after a forced GC, so run with
 *    --expose-gc; without it the figure is marked rough);
 *  - the aggregate message rate, with N = 1 in the same run as the reference.
 * Every WRITE's data is checked at the end: a slot of the responder's region holds the last
 * value its QP wrote.
 *
 *   npm run build && node --expose-gc dist/bench/many-qps.js [--qps 1,1000,10000] [--seconds S] [--json]
 */
import { createSimPair } from '../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../stack/connect';
import { QpType } from '../stack/qp-type-and-state';
import { Access } from '../stack/access-flags';
import { SendFlags, WrOpcode } from '../stack/work-request-codes';
import { WcStatus } from '../stack/work-completion';
import { Mtu } from '../stack/mtu';
import type { QueuePair } from '../stack/queue-pair';
import { applyNativeSwitch } from '../apps/host/environment';

const MSG = 64;

interface Result {
  qps: number;
  setupUsPerQp: number;
  /** After setup, and after the traffic once its timers have run out (what use grows: queues, scratch). */
  bytesPerQpPair: number;
  bytesPerQpPairAfterTraffic: number;
  gcForced: boolean;
  messages: number;
  seconds: number;
  msgsPerSec: number;
  /** Messages per second of CPU time (steadier than wall time on a busy machine). */
  msgsPerCpuSec: number;
  /** Completions that did not arrive for some QP (0 when every QP moved data). */
  idleQps: number;
}

function heapNow(gc: (() => void) | undefined): number {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
}

function runCase(n: number, seconds: number): Result {
  const depth = 1;
  const gc = (globalThis as { gc?: () => void }).gc;
  const sim = createSimPair({ seed: 1, latencyNs: 1000, bandwidthBps: 0 });
  const acc = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const src = new Uint8Array(n * MSG);
  const dst = new Uint8Array(n * MSG);
  const mrA = sim.a.regMr(pdA, src, acc);
  const mrB = sim.b.regMr(pdB, dst, acc);
  const cqA = sim.a.createCq(Math.max(4096, n * depth * 2));
  const cqB = sim.b.createCq(1024);
  const qps: QueuePair[] = [];
  const before = heapNow(gc);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: depth + 1, maxRecvWr: 1 } });
    const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, cap: { maxSendWr: 1, maxRecvWr: 1 } });
    const ea = endpointOf(sim.a, qpA, (i * 7919 + 1) & 0xffffff);
    const eb = endpointOf(sim.b, qpB, (i * 104729 + 3) & 0xffffff);
    connectQp(qpA, ea, eb, { pathMtu: Mtu.MTU_4096, timeout: 14 });
    connectQp(qpB, eb, ea, { pathMtu: Mtu.MTU_4096, timeout: 14 });
    qps.push(qpA);
  }
  const setupNs = Number(process.hrtime.bigint() - t0);
  const bytesPerQpPair = (heapNow(gc) - before) / n;
  // Each QP writes an increasing counter into its own 64-byte slot.
  const sent = new Uint32Array(n);
  const completed = new Uint32Array(n);
  const post = (q: number): void => {
    const v = ++sent[q]!;
    new DataView(src.buffer, q * MSG, 4).setUint32(0, v);
    qps[q]!.postSend({
      wrId: q,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [mrA.sge(q * MSG, MSG)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: mrB.addr(q * MSG), rkey: mrB.rkey },
    });
  };
  // One outstanding at a time per QP keeps each slot's value checkable (RC completes in order,
  // and the next post overwrites the source only after the previous completed).
  for (let q = 0; q < n; q++) post(q);
  const cpu0 = process.cpuUsage();
  const w0 = process.hrtime.bigint();
  const deadline = w0 + BigInt(Math.round(seconds * 1e9));
  let stop = false;
  let done = 0;
  let outstanding = n;
  let checks = 0;
  sim.clock.runWhile(() => {
    for (const wc of cqA.poll(256)) {
      if (wc.status !== WcStatus.SUCCESS) throw new Error(`completion error ${wc.status} on QP ${String(wc.wrId)}`);
      const q = Number(wc.wrId);
      completed[q]!++;
      done++;
      outstanding--;
      if (!stop) {
        post(q);
        outstanding++;
      }
    }
    if ((++checks & 63) === 0 && process.hrtime.bigint() > deadline) stop = true;
    return !(stop && outstanding === 0);
  });
  const secs = Number(process.hrtime.bigint() - w0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  // Let the virtual clock pass every timer the traffic left (cancelled retransmission timers
  // leave the event queue when they come due), so what remains is what the QPs hold.
  sim.clock.runUntil(sim.clock.now() + 1e9);
  const bytesAfter = (heapNow(gc) - before) / n;
  let idle = 0;
  for (let q = 0; q < n; q++) {
    if (completed[q] === 0) idle++;
    const got = new DataView(dst.buffer, q * MSG, 4).getUint32(0);
    if (got !== sent[q]) throw new Error(`QP ${q}: the responder's slot holds ${got}, the last WRITE carried ${sent[q]}`);
  }
  return {
    qps: n,
    setupUsPerQp: setupNs / n / 1000,
    bytesPerQpPair,
    bytesPerQpPairAfterTraffic: bytesAfter,
    gcForced: gc !== undefined,
    messages: done,
    seconds: secs,
    msgsPerSec: done / secs,
    msgsPerCpuSec: done / ((cpu.user + cpu.system) / 1e6),
    idleQps: idle,
  };
}

function main(): void {
  applyNativeSwitch(process.env); // ROCE_NO_NATIVE=1: the TypeScript ICRC
  const argv = process.argv.slice(2);
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const counts = (arg('--qps') ?? '1,100,1000,10000').split(',').map(Number);
  if (counts.some((c) => !Number.isInteger(c) || c < 1 || c > 100_000)) throw new Error('--qps: a list of integers 1..100000');
  const seconds = Number(arg('--seconds') ?? 2);
  runCase(Math.min(100, Math.max(...counts)), 0.3); // warm-up
  const results = counts.map((n) => runCase(n, seconds));
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, msgBytes: MSG, results }, null, 2));
    return;
  }
  const ref = results.find((r) => r.qps === 1) ?? results[0]!;
  console.log(
    `many RC QPs, two stacks in one process, in-memory link, one CQ per side, ${MSG}-byte WRITEs, one outstanding per QP, node ${process.version}${ref.gcForced ? '' : ' (no --expose-gc: memory figures are rough)'}`,
  );
  console.log(
    `${'QPs'.padStart(7)} ${'setup µs/QP pair'.padStart(17)} ${'bytes/QP pair'.padStart(14)} ${'after traffic'.padStart(14)} ${'msgs/s'.padStart(10)} ${'msgs/CPU-s'.padStart(11)} ${'vs 1 QP'.padStart(8)}`,
  );
  for (const r of results) {
    console.log(
      `${String(r.qps).padStart(7)} ${r.setupUsPerQp.toFixed(1).padStart(17)} ${Math.round(r.bytesPerQpPair).toString().padStart(14)} ${Math.round(r.bytesPerQpPairAfterTraffic).toString().padStart(14)} ${Math.round(r.msgsPerSec).toString().padStart(10)} ${Math.round(r.msgsPerCpuSec).toString().padStart(11)} ${(r.msgsPerCpuSec / ref.msgsPerCpuSec).toFixed(2).padStart(8)}`,
    );
  }
}

main();
