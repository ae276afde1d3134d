/**
 * ACK coalescing per receive burst (stack/ack-coalescer.ts, DeviceConfig.coalesceAcks). Off, the
 * responder ACKs every AckReq packet, as rxe; on, one ACK per QP per burst, for the latest PSN owed,
 * and the requester completes every earlier message from it (implied ACKs). A held ACK leaves before
 * any other response of its QP, so PSNs never go backwards on the wire.
 */
import type { AckCoalescer } from '../../stack/ack-coalescer';
import { createSimPair, type SimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus, type WorkCompletion } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import { decodeFrame } from '../../packets/decode';
import { Opcode } from '../../packets/opcodes';
import type { Direction } from '../../nic-driver/faults';
import { decodeSyndrome } from '../../packets/aeth';

interface Wire {
  opcode: number;
  psn: number;
  /** The AETH's kind (ACK, NAK, ...), when there is one. */
  aeth?: string;
}

interface Rig {
  sim: SimPair;
  qp: QueuePair;
  mrA: MemoryRegion;
  mrB: MemoryRegion;
  cqA: CompletionQueue;
  /** Frames b sent to a: opcode and PSN, in wire order. */
  fromB: Wire[];
}

function rig(coalesceAcks: boolean): Rig {
  const fromB: Wire[] = [];
  const tap = {
    record(frame: Uint8Array, _t: number, direction: Direction): void {
      if (direction !== 'b->a') return;
      const d = decodeFrame(frame);
      const bth = d.roce ? d.bth : null;
      if (!d.roce || bth === null) return;
      fromB.push({ opcode: bth.opcode, psn: bth.psn, ...(d.aeth !== null ? { aeth: decodeSyndrome(d.aeth.syndrome).kind } : {}) });
    },
    close(): void {},
  };
  // Bandwidth 0: a burst of the requester arrives at one instant, as one receive run.
  const sim = createSimPair({ seed: 5, bandwidthBps: 0, coalesceAcks, tap });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const mrA = sim.a.regMr(pdA, new Uint8Array(64 * 1024), Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, new Uint8Array(64 * 1024), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
  const cqA = sim.a.createCq(1024);
  const cqB = sim.b.createCq(16);
  const qp = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
  const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
  const ea = endpointOf(sim.a, qp, 1000);
  const eb = endpointOf(sim.b, qpB, 2000);
  connectQp(qp, ea, eb, { pathMtu: Mtu.MTU_1024 });
  connectQp(qpB, eb, ea, { pathMtu: Mtu.MTU_1024 });
  return { sim, qp, mrA, mrB, cqA, fromB };
}

function writes(r: Rig, n: number, size = 8): void {
  const wrs = [];
  for (let i = 0; i < n; i++) {
    r.mrA.buffer.fill(i + 1, i * size, (i + 1) * size);
    wrs.push({
      wrId: i,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [r.mrA.sge(i * size, size)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: r.mrB.addr(i * size), rkey: r.mrB.rkey },
    });
  }
  r.qp.postSend(wrs);
}

function drain(r: Rig, want: number): WorkCompletion[] {
  const out: WorkCompletion[] = [];
  r.sim.clock.runWhile(() => {
    out.push(...r.cqA.poll(256));
    return out.length < want;
  }, 1_000_000);
  return out;
}

test('off (the default, as rxe): 64 WRITEs in one burst get 64 ACKs', () => {
  const r = rig(false);
  writes(r, 64);
  const wcs = drain(r, 64);
  expect(wcs.map((w) => w.status)).toEqual(Array(64).fill(WcStatus.SUCCESS));
  expect(r.fromB.filter((f) => f.opcode === Opcode.RC_ACKNOWLEDGE)).toHaveLength(64);
});

test('on: the same burst gets one ACK, for the last PSN, and all 64 WRITEs complete in order with their data placed', () => {
  const r = rig(true);
  writes(r, 64);
  const wcs = drain(r, 64);
  expect(wcs.map((w) => Number(w.wrId))).toEqual(Array.from({ length: 64 }, (_, i) => i));
  expect(wcs.every((w) => w.status === WcStatus.SUCCESS)).toBe(true);
  expect(r.fromB).toEqual([{ opcode: Opcode.RC_ACKNOWLEDGE, psn: 1000 + 63, aeth: 'ACK' }]);
  expect((r.sim.b.acks as AckCoalescer).coalesced).toBe(63);
  for (let i = 0; i < 64; i++) expect(r.mrB.buffer[i * 8]).toBe(i + 1);
  expect(r.sim.a.totalCounters().retransmitted_pkts).toBe(0);
});

test('on: a READ in the same burst gets its responses after the held ACK, so PSNs never go backwards', () => {
  const r = rig(true);
  writes(r, 4);
  r.qp.postSend({
    wrId: 99,
    opcode: WrOpcode.RDMA_READ,
    sgList: [r.mrA.sge(8192, 2048)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: r.mrB.addr(0), rkey: r.mrB.rkey },
  });
  const wcs = drain(r, 5);
  expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([
    [0, WcStatus.SUCCESS],
    [1, WcStatus.SUCCESS],
    [2, WcStatus.SUCCESS],
    [3, WcStatus.SUCCESS],
    [99, WcStatus.SUCCESS],
  ]);
  // The ACK of the four WRITEs (PSN 1003), then the READ's two responses (PSNs 1004, 1005).
  expect(r.fromB).toEqual([
    { opcode: Opcode.RC_ACKNOWLEDGE, psn: 1003, aeth: 'ACK' },
    { opcode: Opcode.RC_RDMA_READ_RESPONSE_FIRST, psn: 1004, aeth: 'ACK' },
    { opcode: Opcode.RC_RDMA_READ_RESPONSE_LAST, psn: 1005, aeth: 'ACK' },
  ]);
  expect(Array.from(r.mrA.buffer.subarray(8192, 8192 + 32))).toEqual(Array.from(r.mrB.buffer.subarray(0, 32)));
});

test('on: a burst that ends with a bad R_Key gets the ACK of the good WRITEs first, then the NAK', () => {
  const r = rig(true);
  writes(r, 3);
  r.qp.postSend({
    wrId: 50,
    opcode: WrOpcode.RDMA_WRITE,
    sgList: [r.mrA.sge(0, 8)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: r.mrB.addr(0), rkey: (r.mrB.rkey ^ 0x100) >>> 0 },
  });
  const wcs = drain(r, 4);
  expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([
    [0, WcStatus.SUCCESS],
    [1, WcStatus.SUCCESS],
    [2, WcStatus.SUCCESS],
    [50, WcStatus.REM_ACCESS_ERR],
  ]);
  expect(r.fromB).toEqual([
    { opcode: Opcode.RC_ACKNOWLEDGE, psn: 1002, aeth: 'ACK' },
    { opcode: Opcode.RC_ACKNOWLEDGE, psn: 1003, aeth: 'NAK' },
  ]);
});
