/**
 * Fast registration and invalidation between two stacks over the in-memory link (IBTA vol. 1
 * §10.6.3.5-§10.6.3.6, §10.6.5; rxe_mr.c rxe_mr_init_fast(), rxe_reg_fast_mr(), rxe_invalidate_mr();
 * rxe_req.c rxe_do_local_ops(), rxe_wqe_is_fenced(); rxe_resp.c invalidate_rkey()): a REG_MR work
 * request binds a region's pages, address, length and access to a key whose low 8 bits the consumer
 * chooses; the key admits nothing before it and after LOCAL_INV or a SEND with Invalidate; ordinary
 * regions cannot be invalidated; local work requests complete in order, with LOC_QP_OP_ERR on failure.
 */
import { createSimPair, type SimPair } from '../../../apps/sim/sim-pair';
import { QpState } from '../../../stack/qp-type-and-state';
import { Access } from '../../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from '../../../stack/work-completion';
import type { QueuePair } from '../../../stack/queue-pair';
import type { MemoryRegion } from '../../../stack/memory-region';
import { NakCode } from '../../../packets/aeth';
import { summarize, type Sent } from '../../support/scripted-peer';
import { connectRc, drainCompletions, rcSide, type RcSide } from '../../support/sim-rc';

type Side = RcSide;

const ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

function setup(): { sim: SimPair; A: Side; B: Side; wire: Sent[] } {
  const wire: Sent[] = [];
  const sim = createSimPair({ seed: 5, tap: { record: (f) => wire.push(summarize(f)), close: () => undefined } });
  const A = rcSide(sim.a, ALL, 1 << 14);
  const B = rcSide(sim.b, ALL, 1 << 14);
  connectRc(sim, A.qp, B.qp, 0x100, 0x200);
  return { sim, A, B, wire };
}

const drain = drainCompletions;

/** The key `mr` takes with key byte `b` (its index kept). */
const keyOf = (mr: MemoryRegion, b: number): number => ((mr.lkey & ~0xff) | b) >>> 0;

/** A fast-registration region of B over `buf`, bound under key byte `b` by a REG_MR on B's QP. */
function fastReg(s: Side, sim: SimPair, buf: Uint8Array, b: number, access = ALL): MemoryRegion {
  const mr = s.dev.allocMr(s.pd, Math.ceil(buf.length / 4096));
  s.dev.mapMrSg(mr, buf, 0x6000_0000n);
  s.qp.postSend({ wrId: 100 + b, opcode: WrOpcode.REG_MR, sendFlags: SendFlags.SIGNALED, reg: { mr, key: keyOf(mr, b), access } });
  expect(drain(sim, s.cq, 1)).toEqual([
    {
      wrId: BigInt(100 + b),
      status: WcStatus.SUCCESS,
      opcode: WcOpcode.REG_MR,
      byteLen: 0,
      qpNum: s.qp.qpNum,
      srcQp: 0,
      wcFlags: 0,
      immData: 0,
      vendorErr: '',
    },
  ]);
  return mr;
}

const write = (A: Side, va: bigint, rkey: number, wrId = 1): Parameters<QueuePair['postSend']>[0] => ({
  wrId,
  opcode: WrOpcode.RDMA_WRITE,
  sendFlags: SendFlags.SIGNALED,
  sgList: [A.mr.sge(0, 16)],
  rdma: { remoteAddr: va, rkey },
});

describe('fast registration', () => {
  test('the key is invalid until REG_MR: a WRITE to it is NAKed remote access error', () => {
    const { sim, A, B, wire } = setup();
    const mr = B.dev.allocMr(B.pd, 1);
    expect(mr.valid).toBe(false);
    B.dev.mapMrSg(mr, new Uint8Array(4096), 0x6000_0000n);
    A.qp.postSend(write(A, 0x6000_0000n, mr.rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.REM_ACCESS_ERR }]);
    expect(wire[1]?.aeth).toMatchObject({ value: NakCode.REMOTE_ACCESS_ERROR });
    expect(B.qp.errorReason).toMatch(/invalid key/);
  });

  test("REG_MR binds pages, address, length, access and the consumer's key byte: a WRITE lands, the old key byte is refused", () => {
    const { sim, A, B } = setup();
    const pages = new Uint8Array(8192);
    const mr = fastReg(B, sim, pages, 0x5a);
    expect(mr.rkey).toBe(keyOf(mr, 0x5a));
    expect(mr.lkey).toBe(mr.rkey);
    A.buf.set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    A.qp.postSend(write(A, 0x6000_0000n + 5000n, mr.rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS }]);
    expect([...pages.subarray(5000, 5016)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    // Past the bound length: a remote access error.
    A.qp.postSend(write(A, 0x6000_0000n + 8190n, mr.rkey, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
  });

  test('the access REG_MR gives is checked: a READ of a region bound without remote read is NAKed', () => {
    const { sim, A, B } = setup();
    const mr = fastReg(B, sim, new Uint8Array(4096), 0x11, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    A.qp.postSend({ wrId: 3, opcode: WrOpcode.RDMA_READ, sgList: [A.mr.sge(0, 8)], rdma: { remoteAddr: mr.addr(0), rkey: mr.rkey } });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 3n, status: WcStatus.REM_ACCESS_ERR, opcode: WcOpcode.RDMA_READ }]);
  });

  test('REG_MR refusals complete with LOC_QP_OP_ERR and the QP goes to ERR: a valid region, another key index, no pages', () => {
    const cases: ((s: Side, sim: SimPair) => Parameters<QueuePair['postSend']>[0])[] = [
      (s, sim) => {
        const mr = fastReg(s, sim, new Uint8Array(64), 0x01);
        return { wrId: 7, opcode: WrOpcode.REG_MR, reg: { mr, key: keyOf(mr, 0x02), access: ALL } };
      },
      (s) => {
        const mr = s.dev.allocMr(s.pd, 1);
        s.dev.mapMrSg(mr, new Uint8Array(64));
        return { wrId: 7, opcode: WrOpcode.REG_MR, reg: { mr, key: (mr.lkey + 0x100) >>> 0, access: ALL } };
      },
      (s) => {
        const mr = s.dev.allocMr(s.pd, 1);
        return { wrId: 7, opcode: WrOpcode.REG_MR, reg: { mr, key: keyOf(mr, 0x03), access: ALL } };
      },
    ];
    const reasons: string[] = [];
    for (const make of cases) {
      const { sim, B } = setup();
      B.qp.postSend(make(B, sim));
      const wcs = drain(sim, B.cq, 1);
      expect(wcs).toMatchObject([{ wrId: 7n, status: WcStatus.LOC_QP_OP_ERR, opcode: WcOpcode.REG_MR }]);
      reasons.push(wcs[0]?.vendorErr ?? '');
      expect(B.qp.state).toBe(QpState.ERR);
    }
    expect(reasons[0]).toMatch(/is valid; invalidate it first/);
    expect(reasons[1]).toMatch(/must keep the region's key index/);
    expect(reasons[2]).toMatch(/no pages mapped/);
  });

  test('mapMrSg refuses an ordinary region, a valid one and too many pages with typed errors', () => {
    const { sim, B } = setup();
    expect(() => B.dev.mapMrSg(B.mr, new Uint8Array(8))).toThrow(/not a fast-registration region/);
    const mr = fastReg(B, sim, new Uint8Array(64), 0x21);
    expect(() => B.dev.mapMrSg(mr, new Uint8Array(8))).toThrow(/is valid; invalidate it first/);
    const small = B.dev.allocMr(B.pd, 1);
    expect(() => B.dev.mapMrSg(small, new Uint8Array(4097))).toThrow(/need 2 pages, the region has room for 1/);
  });
});

describe('invalidation', () => {
  test('LOCAL_INV then use of the key: NAK remote access error; REG_MR with a new key byte makes it answer again under that key only', () => {
    const { sim, A, B, wire } = setup();
    const pages = new Uint8Array(4096);
    const mr = fastReg(B, sim, pages, 0x31);
    const old = mr.rkey;
    B.qp.postSend({ wrId: 8, opcode: WrOpcode.LOCAL_INV, sendFlags: SendFlags.SIGNALED, invalidateRkey: old });
    expect(drain(sim, B.cq, 1)).toMatchObject([{ wrId: 8n, status: WcStatus.SUCCESS, opcode: WcOpcode.LOCAL_INV, byteLen: 0 }]);
    expect(mr.valid).toBe(false);
    // Local work requests never reach the wire.
    expect(wire).toEqual([]);
    // Bound again under another key byte: the old key stays refused, the new one admits the WRITE.
    B.dev.mapMrSg(mr, pages, 0x6000_0000n);
    B.qp.postSend({ wrId: 9, opcode: WrOpcode.REG_MR, sendFlags: SendFlags.SIGNALED, reg: { mr, key: keyOf(mr, 0x32), access: ALL } });
    expect(drain(sim, B.cq, 1)).toMatchObject([{ wrId: 9n, status: WcStatus.SUCCESS, opcode: WcOpcode.REG_MR }]);
    A.qp.postSend(write(A, 0x6000_0000n, mr.rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS }]);
    A.qp.postSend(write(A, 0x6000_0000n, old, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
    expect(wire.at(-1)?.aeth).toMatchObject({ value: NakCode.REMOTE_ACCESS_ERROR });
  });

  test('a LOCAL_INV waits for every earlier WQE to complete (Local Invalidate Fence), and completions stay in order', () => {
    const { sim, A, B } = setup();
    const local = A.dev.allocMr(A.pd, 1);
    const lbuf = new Uint8Array(4096).fill(7);
    A.dev.mapMrSg(local, lbuf);
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.REG_MR, reg: { mr: local, key: keyOf(local, 0x44), access: Access.LOCAL_WRITE } });
    // A WRITE from the fast-registered memory, then its LOCAL_INV: the WRITE must have read the bytes before the key goes.
    A.qp.postSend([
      {
        wrId: 2,
        opcode: WrOpcode.RDMA_WRITE,
        sendFlags: SendFlags.SIGNALED,
        sgList: [{ addr: 0n, length: 4096, lkey: keyOf(local, 0x44) }],
        rdma: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey },
      },
      { wrId: 3, opcode: WrOpcode.LOCAL_INV, sendFlags: SendFlags.SIGNALED, invalidateRkey: keyOf(local, 0x44) },
    ]);
    // Right after posting the LOCAL_INV has not run: the WRITE is unacknowledged.
    sim.clock.runUntil(sim.clock.now());
    expect(local.valid).toBe(true);
    const wcs = drain(sim, A.cq, 2);
    expect(wcs.map((w) => [w.wrId, w.status, w.opcode])).toEqual([
      [2n, WcStatus.SUCCESS, WcOpcode.RDMA_WRITE],
      [3n, WcStatus.SUCCESS, WcOpcode.LOCAL_INV],
    ]);
    expect(local.valid).toBe(false);
    expect(B.buf.subarray(0, 4096).every((x) => x === 7)).toBe(true);
  });

  test('a REG_MR behind unacknowledged requests takes effect at once for later WQEs and completes in its turn', () => {
    const { sim, A, B } = setup();
    const local = A.dev.allocMr(A.pd, 1);
    A.dev.mapMrSg(local, new Uint8Array(64).fill(9));
    A.qp.postSend([
      { wrId: 1, opcode: WrOpcode.RDMA_WRITE, sendFlags: SendFlags.SIGNALED, sgList: [A.mr.sge(0, 8)], rdma: { remoteAddr: B.mr.addr(100), rkey: B.mr.rkey } },
      { wrId: 2, opcode: WrOpcode.REG_MR, sendFlags: SendFlags.SIGNALED, reg: { mr: local, key: keyOf(local, 0x45), access: Access.LOCAL_WRITE } },
      {
        wrId: 3,
        opcode: WrOpcode.RDMA_WRITE,
        sendFlags: SendFlags.SIGNALED,
        sgList: [{ addr: 0n, length: 64, lkey: keyOf(local, 0x45) }],
        rdma: { remoteAddr: B.mr.addr(200), rkey: B.mr.rkey },
      },
    ]);
    expect(drain(sim, A.cq, 3).map((w) => [w.wrId, w.status])).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
      [3n, WcStatus.SUCCESS],
    ]);
    expect(B.buf.subarray(200, 264).every((x) => x === 9)).toBe(true);
  });

  test('LOCAL_INV of an ordinary region or of a stale key: LOC_QP_OP_ERR, the QP to ERR, later WQEs flushed', () => {
    for (const key of [(s: Side) => s.mr.rkey, (s: Side) => (s.mr.rkey ^ 0x01) >>> 0]) {
      const { sim, B } = setup();
      B.qp.postSend([
        { wrId: 1, opcode: WrOpcode.LOCAL_INV, invalidateRkey: key(B) },
        { wrId: 2, opcode: WrOpcode.SEND, sgList: [B.mr.sge(0, 4)] },
      ]);
      const wcs = drain(sim, B.cq, 2);
      expect(wcs.map((w) => [w.wrId, w.status, w.opcode])).toEqual([
        [1n, WcStatus.LOC_QP_OP_ERR, WcOpcode.LOCAL_INV],
        [2n, WcStatus.WR_FLUSH_ERR, WcOpcode.SEND],
      ]);
      expect(B.mr.valid).toBe(true);
      expect(B.qp.state).toBe(QpState.ERR);
    }
  });

  test('SEND with Invalidate of a fast-registered key: WITH_INV receive completion, then the key is refused', () => {
    const { sim, A, B } = setup();
    const mr = fastReg(B, sim, new Uint8Array(4096), 0x61);
    B.qp.postRecv({ wrId: 20, sgList: [B.mr.sge(0, 64)] });
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND_WITH_INV, sendFlags: SendFlags.SIGNALED, sgList: [A.mr.sge(0, 8)], invalidateRkey: mr.rkey });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.SEND }]);
    expect(drain(sim, B.cq, 1)).toMatchObject([
      { wrId: 20n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 8, wcFlags: WcFlags.WITH_INV, immData: mr.rkey },
    ]);
    expect(mr.valid).toBe(false);
    A.qp.postSend(write(A, mr.addr(0), mr.rkey, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
  });

  test("SEND with Invalidate of an ordinary region's key: REM_INV_REQ_ERR at the receiver (rxe class J), the region stays valid", () => {
    const { sim, A, B } = setup();
    B.qp.postRecv({ wrId: 21, sgList: [B.mr.sge(0, 64)] });
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND_WITH_INV, sendFlags: SendFlags.SIGNALED, sgList: [A.mr.sge(0, 8)], invalidateRkey: B.mr.rkey });
    const wcs = drain(sim, B.cq, 1);
    expect(wcs).toMatchObject([{ wrId: 21n, status: WcStatus.REM_INV_REQ_ERR, wcFlags: WcFlags.WITH_INV }]);
    expect(wcs[0]?.vendorErr).toMatch(/names a registered region, not a fast-registration one/);
    expect(B.mr.valid).toBe(true);
    expect(B.qp.state).toBe(QpState.ERR);
  });
});
