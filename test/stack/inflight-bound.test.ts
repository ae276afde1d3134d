/**
 * The device-wide bound on packets in flight (stack/inflight-bound.ts, for many QPs).
 * Many QPs that post at once overflow the peer's receive ring without it; with it, the device never
 * has more in flight than the bound, no frame is lost, and every message completes. The count is
 * kept exact through READs, errors, resets and destroyed QPs.
 */
import { createSimPair, type SimPair, type SimPairOptions } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus, type WorkCompletion } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import { packetsInFlight } from '../../stack/inflight-bound';
import { VerbsError } from '../../stack/errors';
import { Device } from '../../stack/device';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';

const SLOT = 64;

interface Rig {
  sim: SimPair;
  qps: QueuePair[];
  mrA: MemoryRegion;
  mrB: MemoryRegion;
  cqA: CompletionQueue;
  src: Uint8Array;
  dst: Uint8Array;
}

/** N RC QP pairs a -> b over the memory link, one CQ per side, a slot of SLOT bytes per message. */
function rig(n: number, slots: number, o: SimPairOptions, retryCnt = 7, timeout = 12): Rig {
  const sim = createSimPair({ seed: 3, ...o });
  const acc = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const src = new Uint8Array(n * slots * SLOT);
  const dst = new Uint8Array(n * slots * SLOT);
  const mrA = sim.a.regMr(pdA, src, acc);
  const mrB = sim.b.regMr(pdB, dst, acc);
  const cqA = sim.a.createCq(n * slots * 2 + 16);
  const cqB = sim.b.createCq(16);
  const qps: QueuePair[] = [];
  for (let i = 0; i < n; i++) {
    const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: slots, maxRecvWr: 1 } });
    const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, cap: { maxSendWr: 1, maxRecvWr: 1 } });
    const ea = endpointOf(sim.a, qpA, (i * 7919 + 1) & 0xffffff);
    const eb = endpointOf(sim.b, qpB, (i * 104729 + 3) & 0xffffff);
    connectQp(qpA, ea, eb, { pathMtu: Mtu.MTU_1024, timeout, retryCnt });
    connectQp(qpB, eb, ea, { pathMtu: Mtu.MTU_1024, timeout, retryCnt });
    qps.push(qpA);
  }
  return { sim, qps, mrA, mrB, cqA, src, dst };
}

/** Posts `slots` 64-byte WRITEs on every QP at once, each carrying its own (QP, slot) tag. */
function postAll(r: Rig, slots: number): void {
  r.qps.forEach((qp, q) => {
    const wrs = [];
    for (let s = 0; s < slots; s++) {
      const at = (q * slots + s) * SLOT;
      new DataView(r.src.buffer).setUint32(at, q * 1000 + s + 1);
      wrs.push({
        wrId: q * slots + s,
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [r.mrA.sge(at, SLOT)],
        sendFlags: SendFlags.SIGNALED,
        rdma: { remoteAddr: r.mrB.addr(at), rkey: r.mrB.rkey },
      });
    }
    qp.postSend(wrs);
  });
}

/** Runs the clock until `want` completions came, sampling the device's in-flight count after every event. */
function runTo(r: Rig, want: number, maxNs = 10e9): { wcs: WorkCompletion[]; maxSeen: number } {
  const wcs: WorkCompletion[] = [];
  let maxSeen = 0;
  const end = r.sim.clock.now() + maxNs;
  while (wcs.length < want && r.sim.clock.now() < end && r.sim.clock.step()) {
    const inf = r.sim.a.inflight;
    if (inf !== null) maxSeen = Math.max(maxSeen, inf.stats.inFlight);
    for (const wc of r.cqA.poll(1024)) wcs.push(wc);
  }
  return { wcs, maxSeen };
}

const N = 2000;
const SLOTS = 4;

test('without a bound, 2 000 QPs posting 4 WRITEs each overflow a 1 024-frame receive ring and fall back on their ACK timers', () => {
  const r = rig(N, SLOTS, { rxRing: 1024, bandwidthBps: 0 });
  expect(r.sim.a.inflight).toBeNull();
  postAll(r, SLOTS);
  const { wcs } = runTo(r, N * SLOTS);
  expect(wcs.length).toBe(N * SLOTS);
  expect(r.sim.link.b.stats.rxDropped).toBeGreaterThan(0);
  expect(r.sim.a.totalCounters().local_ack_timeout_err).toBeGreaterThan(0);
  expect(r.sim.a.totalCounters().retransmitted_pkts).toBeGreaterThan(0);
});

test('with a bound of 512, the same run loses no frame, never has more than 512 in flight, and every WRITE lands', () => {
  const r = rig(N, SLOTS, { rxRing: 1024, bandwidthBps: 0, maxInflightPackets: 512 });
  postAll(r, SLOTS);
  const { wcs, maxSeen } = runTo(r, N * SLOTS);
  expect(wcs.length).toBe(N * SLOTS);
  expect(wcs.every((wc) => wc.status === WcStatus.SUCCESS)).toBe(true);
  expect(r.sim.link.a.stats.rxDropped + r.sim.link.b.stats.rxDropped).toBe(0);
  const c = r.sim.a.totalCounters();
  expect(c.retransmitted_pkts).toBe(0);
  expect(c.local_ack_timeout_err).toBe(0);
  expect(c.rc_inflight_waits).toBeGreaterThan(0);
  const inf = r.sim.a.inflight!;
  expect(maxSeen).toBeLessThanOrEqual(512);
  expect(inf.stats.peak).toBe(512);
  expect(inf.stats.inFlight).toBe(0);
  expect(inf.stats.waiting).toBe(0);
  // Every WRITE's tag is where it was sent to.
  for (let q = 0; q < N; q++) {
    for (let s = 0; s < SLOTS; s++) expect(new DataView(r.dst.buffer).getUint32((q * SLOTS + s) * SLOT)).toBe(q * 1000 + s + 1);
  }
  // The running count was exact all along: a recount changes nothing.
  inf.recount();
  expect(inf.stats.corrections).toBe(0);
});

test('the waiting QPs go in the order they stopped: the first to wait is the first to finish', () => {
  const r = rig(64, 1, { maxInflightPackets: 8 });
  postAll(r, 1);
  const { wcs } = runTo(r, 64);
  // One WRITE per QP, each QP a wrId: completions come in the order the QPs were let go.
  expect(wcs.map((wc) => Number(wc.wrId))).toEqual(Array.from({ length: 64 }, (_, i) => i));
});

test('QPs take turns: a QP whose ACK freed the room goes behind the QPs already waiting, as under a round-robin send scheduler', () => {
  const r = rig(2, 3, { maxInflightPackets: 1 });
  postAll(r, 3); // QP 0: wrIds 0, 1, 2; QP 1: wrIds 3, 4, 5
  const { wcs } = runTo(r, 6);
  // QP 0 sends 0 and stops at 1, first in the FIFO; QP 1 stops behind it. From then on each QP
  // that sends goes to the back: 1, then 3, then 2 (not 2 right after 1, which QP 0's own ACK
  // would allow if it could jump the queue), then 4, 5.
  expect(wcs.map((wc) => Number(wc.wrId))).toEqual([0, 1, 3, 2, 4, 5]);
});

test('time a QP spends waiting for room is no local ACK timeout: with retry_cnt 0 and a 33 µs timeout, 100 QPs wait far longer and all succeed', () => {
  // Each QP's first WRITE is acknowledged within a round trip (4 µs); its next ones then wait
  // behind the other QPs for about 100 µs, with no packet of theirs on the wire.
  const r = rig(100, 4, { maxInflightPackets: 4 }, 0, 3);
  postAll(r, 4);
  const { wcs } = runTo(r, 400);
  expect(wcs.filter((wc) => wc.status !== WcStatus.SUCCESS)).toEqual([]);
  expect(wcs.length).toBe(400);
  expect(r.sim.clock.now()).toBeGreaterThan(100_000);
  expect(r.sim.a.totalCounters().local_ack_timeout_err).toBe(0);
});

test('a READ whose responses exceed the bound goes alone, and counts its responses while they are due', () => {
  const r = rig(2, 1, { maxInflightPackets: 4 });
  const len = 16 * 1024; // 16 responses at MTU 1024
  const local = new Uint8Array(len);
  const mr = r.sim.a.regMr(r.qps[0]!.pd, local, Access.LOCAL_WRITE);
  const remote = new Uint8Array(len).map((_, i) => (i * 31) & 0xff);
  const mrB = r.sim.b.regMr(r.sim.b.qp(r.qps[0]!.attr.destQpNum)!.pd, remote, Access.REMOTE_READ);
  r.qps[0]!.postSend({
    wrId: 1,
    opcode: WrOpcode.RDMA_READ,
    sgList: [mr.sge(0, len)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: mrB.addr(0), rkey: mrB.rkey },
  });
  // Right after the READ request left, its 16 response PSNs are in flight, over the bound of 4.
  r.sim.clock.runWhile(() => r.qps[0]!.req.sentAny === false);
  expect(packetsInFlight(r.qps[0]!)).toBe(16);
  expect(r.sim.a.inflight!.stats.inFlight).toBe(16);
  const { wcs } = runTo(r, 1);
  expect(wcs[0]?.status).toBe(WcStatus.SUCCESS);
  expect(local).toEqual(remote);
  expect(r.sim.a.inflight!.stats.inFlight).toBe(0);
});

test('a QP whose peer is gone holds its packets only until its retries run out; the QPs waiting behind it then go', () => {
  // QP 0 writes to a responder QP that no longer exists: b drops its packets as for an unknown QP.
  const r = rig(3, 4, { maxInflightPackets: 4 }, 1);
  r.sim.b.destroyQp(r.sim.b.qp(r.qps[0]!.attr.destQpNum)!);
  postAll(r, 4);
  const { wcs } = runTo(r, 12, 60e9);
  const byQp = (q: number): WorkCompletion[] => wcs.filter((wc) => Math.floor(Number(wc.wrId) / 4) === q);
  expect(byQp(0)[0]?.status).toBe(WcStatus.RETRY_EXC_ERR);
  expect(r.qps[0]!.state).toBe(QpState.ERR);
  expect(byQp(1).map((wc) => wc.status)).toEqual([WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.SUCCESS]);
  expect(byQp(2).map((wc) => wc.status)).toEqual([WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.SUCCESS]);
  expect(r.sim.a.inflight!.stats.inFlight).toBe(0);
});

test('destroying a QP with packets in flight gives its room to the QPs waiting', () => {
  const r = rig(2, 4, { maxInflightPackets: 4 });
  r.sim.b.destroyQp(r.sim.b.qp(r.qps[0]!.attr.destQpNum)!); // QP 0's packets will never be acknowledged
  postAll(r, 4);
  r.sim.clock.runUntil(r.sim.clock.now() + 100_000); // well inside QP 0's ACK timeout
  expect(r.sim.a.inflight!.stats.inFlight).toBe(4);
  expect(r.sim.a.inflight!.stats.waiting).toBe(1);
  r.sim.a.destroyQp(r.qps[0]!);
  expect(r.sim.a.inflight!.stats.inFlight).toBe(0);
  const { wcs } = runTo(r, 4);
  expect(wcs.map((wc) => [Number(wc.wrId), wc.status])).toEqual([4, 5, 6, 7].map((id) => [id, WcStatus.SUCCESS]));
});

test('moving a QP to RESET or ERR takes its packets off the count', () => {
  const r = rig(1, 4, { maxInflightPackets: 100 });
  r.sim.b.destroyQp(r.sim.b.qp(r.qps[0]!.attr.destQpNum)!);
  postAll(r, 4);
  r.sim.clock.runUntil(r.sim.clock.now() + 100_000);
  expect(r.sim.a.inflight!.stats.inFlight).toBe(4);
  r.qps[0]!.modify({ qpState: QpState.ERR });
  expect(r.sim.a.inflight!.stats.inFlight).toBe(0);
  r.qps[0]!.modify({ qpState: QpState.RESET });
  expect(r.sim.a.inflight!.stats.inFlight).toBe(0);
  r.sim.a.inflight!.recount();
  expect(r.sim.a.inflight!.stats.corrections).toBe(0);
});

test('a bound that is not a positive integer is refused with a typed error', () => {
  const clock = new VirtualClock(0);
  const link = createMemoryLink({ clock });
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    expect(() => new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], maxInflightPackets: bad })).toThrow(VerbsError);
  }
  expect(() => new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], maxInflightPackets: 0 })).toThrow(
    'maxInflightPackets must be an integer 1..2147483647, not 0',
  );
});
