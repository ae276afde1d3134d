/** Two stacks over the in-memory link: every RC operation end to end, with and without loss. */
import { createSimPair, type SimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion } from '../../stack/memory-region';
import type { FaultConfig } from '../../nic-driver/faults';
import { drainCompletions } from '../support/sim-rc';

interface Side {
  qp: QueuePair;
  cq: CompletionQueue;
  mr: MemoryRegion;
  buf: Uint8Array;
}

function setup(faults?: FaultConfig, seed = 7, size = 1 << 20, pathMtu: 1 | 2 | 3 | 4 | 5 = 3): { sim: SimPair; A: Side; B: Side } {
  const sim = createSimPair({ seed, faults: { aToB: faults ?? {}, bToA: faults ?? {} } });
  const make = (dev: typeof sim.a): Side => {
    const pd = dev.allocPd();
    const cq = dev.createCq(1 << 16);
    const buf = new Uint8Array(size);
    const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 4096, maxRecvWr: 4096 } });
    return { qp, cq, mr, buf };
  };
  const A = make(sim.a);
  const B = make(sim.b);
  const ea = endpointOf(sim.a, A.qp, sim.a.randomPsn());
  const eb = endpointOf(sim.b, B.qp, sim.b.randomPsn());
  connectQp(A.qp, ea, eb, { pathMtu, timeout: 10 });
  connectQp(B.qp, eb, ea, { pathMtu, timeout: 10 });
  return { sim, A, B };
}

function fill(buf: Uint8Array, seed: number): void {
  let x = seed >>> 0 || 1;
  for (let i = 0; i < buf.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf[i] = x & 0xff;
  }
}

const drain = (sim: SimPair, cq: CompletionQueue, n: number, maxEvents = 5_000_000): WorkCompletion[] => drainCompletions(sim, cq, n, maxEvents);

describe.each([
  ['no loss', undefined],
  ['10% loss', { drop: 0.1 } as FaultConfig],
])('RC over the memory link, %s', (_name, faults) => {
  test('RDMA WRITE of 256 KiB lands intact', () => {
    const { sim, A, B } = setup(faults);
    fill(A.buf.subarray(0, 256 * 1024), 1);
    A.qp.postSend({
      wrId: 1,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [A.mr.sge(0, 256 * 1024)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: B.mr.addr(4096), rkey: B.mr.rkey },
    });
    const wcs = drain(sim, A.cq, 1);
    expect(wcs).toHaveLength(1);
    expect(wcs[0]).toMatchObject({ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.RDMA_WRITE });
    expect(Buffer.compare(B.buf.subarray(4096, 4096 + 256 * 1024), A.buf.subarray(0, 256 * 1024))).toBe(0);
  });

  test('SEND/RECV, many messages, in order', () => {
    const { sim, A, B } = setup(faults);
    fill(A.buf, 2);
    const n = 50;
    for (let i = 0; i < n; i++) B.qp.postRecv({ wrId: 100 + i, sgList: [B.mr.sge(i * 8192, 8192)] });
    for (let i = 0; i < n; i++) {
      A.qp.postSend({
        wrId: i,
        opcode: i % 2 ? WrOpcode.SEND_WITH_IMM : WrOpcode.SEND,
        immData: i,
        sgList: [A.mr.sge(i * 8192, 1000 + i * 100)],
        sendFlags: SendFlags.SIGNALED,
      });
    }
    const sendWcs = drain(sim, A.cq, n);
    const recvWcs = B.cq.poll(1000);
    expect(sendWcs.map((w) => w.status)).toEqual(new Array(n).fill(WcStatus.SUCCESS));
    expect(sendWcs.map((w) => w.wrId)).toEqual([...Array(n).keys()].map(BigInt));
    expect(recvWcs.map((w) => w.wrId)).toEqual([...Array(n).keys()].map((i) => BigInt(100 + i)));
    for (let i = 0; i < n; i++) {
      expect(recvWcs[i]).toMatchObject({ status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 1000 + i * 100 });
      if (i % 2) expect(recvWcs[i]?.immData).toBe(i);
      expect(Buffer.compare(B.buf.subarray(i * 8192, i * 8192 + 1000 + i * 100), A.buf.subarray(i * 8192, i * 8192 + 1000 + i * 100))).toBe(0);
    }
  });

  test('RDMA READ of 100 KiB', () => {
    const { sim, A, B } = setup(faults);
    fill(B.buf, 3);
    A.qp.postSend({
      wrId: 9,
      opcode: WrOpcode.RDMA_READ,
      sgList: [A.mr.sge(0, 100 * 1024)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: B.mr.addr(512), rkey: B.mr.rkey },
    });
    const wcs = drain(sim, A.cq, 1);
    expect(wcs[0]).toMatchObject({ wrId: 9n, status: WcStatus.SUCCESS, opcode: WcOpcode.RDMA_READ, byteLen: 100 * 1024 });
    expect(Buffer.compare(A.buf.subarray(0, 100 * 1024), B.buf.subarray(512, 512 + 100 * 1024))).toBe(0);
  });

  test('atomics execute exactly once', () => {
    const { sim, A, B } = setup(faults);
    const v = new DataView(B.buf.buffer);
    v.setBigUint64(64, 1000n, true);
    const n = 40;
    for (let i = 0; i < n; i++) {
      A.qp.postSend({
        wrId: i,
        opcode: WrOpcode.ATOMIC_FETCH_AND_ADD,
        sgList: [A.mr.sge(i * 8, 8)],
        sendFlags: SendFlags.SIGNALED,
        atomic: { remoteAddr: B.mr.addr(64), rkey: B.mr.rkey, compareAdd: 3n },
      });
    }
    A.qp.postSend({
      wrId: 99,
      opcode: WrOpcode.ATOMIC_CMP_AND_SWP,
      sgList: [A.mr.sge(4000, 8)],
      sendFlags: SendFlags.SIGNALED,
      atomic: { remoteAddr: B.mr.addr(64), rkey: B.mr.rkey, compareAdd: 1000n + 3n * BigInt(n), swap: 7n },
    });
    const wcs = drain(sim, A.cq, n + 1);
    expect(wcs.every((w) => w.status === WcStatus.SUCCESS)).toBe(true);
    expect(v.getBigUint64(64, true)).toBe(7n);
    const av = new DataView(A.buf.buffer);
    for (let i = 0; i < n; i++) expect(av.getBigUint64(i * 8, true)).toBe(1000n + 3n * BigInt(i));
    expect(av.getBigUint64(4000, true)).toBe(1000n + 3n * BigInt(n));
  });
});

test('a dead link ends in RETRY_EXC_ERR and flushes the rest', () => {
  const { sim, A, B } = setup({ drop: 1 });
  A.qp.postSend({
    wrId: 1,
    opcode: WrOpcode.RDMA_WRITE,
    sgList: [A.mr.sge(0, 100)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey },
  });
  A.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [A.mr.sge(0, 100)], sendFlags: SendFlags.SIGNALED });
  const wcs = drain(sim, A.cq, 2);
  expect(wcs.map((w) => [w.wrId, w.status])).toEqual([
    [1n, WcStatus.RETRY_EXC_ERR],
    [2n, WcStatus.WR_FLUSH_ERR],
  ]);
  expect(A.qp.counters.local_ack_timeout_err).toBe(8); // retry_cnt 7: the first try and 7 retries all time out
});
