/**
 * Memory windows between two stacks over the in-memory link (IBTA vol. 1 §10.6.7; rxe_mw.c
 * rxe_alloc_mw(), rxe_check_bind_mw(), rxe_do_bind_mw(), rxe_invalidate_mw(), rxe_lookup_mw();
 * rxe_req.c rxe_do_local_ops(); rxe_resp.c check_rkey(), invalidate_rkey(); rxe_mr.c rxe_dereg_mr();
 * libibverbs ibv_alloc_mw / ibv_bind_mw / IBV_WR_BIND_MW): allocation, the bind verb for type 1 and the
 * BIND_MW work request for type 2 (tied to its QP), the consumer's key byte, bounds, rights and
 * zero-based addressing, invalidation, deregistration of a region with windows bound, and what each
 * failure completes with on both sides and sends on the wire.
 */
import { createSimPair, type SimPair } from '../../../apps/sim/sim-pair';
import { QpState, QpType } from '../../../stack/qp-type-and-state';
import { Access } from '../../../stack/access-flags';
import { MwType } from '../../../stack/mw-type';
import { FlushLevel, FlushType, SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from '../../../stack/work-completion';
import type { QueuePair } from '../../../stack/queue-pair';
import type { CompletionQueue } from '../../../stack/completion-queue';
import { MrTable, ProtectionDomain, type MemoryRegion } from '../../../stack/memory-region';
import type { MemoryWindow, MwBindInfo } from '../../../stack/memory-window';
import type { Device } from '../../../stack/device';
import type { SendWr } from '../../../stack/work-request';
import { VerbsErrorCode } from '../../../stack/errors';
import { AethKind, NakCode } from '../../../packets/aeth';
import { Opcode } from '../../../packets/opcodes';
import { summarize, type Sent } from '../../support/scripted-peer';
import { connectRc, drainCompletions } from '../../support/sim-rc';

interface Side {
  dev: Device;
  pd: ProtectionDomain;
  qp: QueuePair;
  /** A second QP of the same PD, connected to the other side's second QP. */
  qp2: QueuePair;
  cq: CompletionQueue;
  cq2: CompletionQueue;
  mr: MemoryRegion;
  buf: Uint8Array;
}

const ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;
const REMOTE = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

function setup(): { sim: SimPair; A: Side; B: Side; wire: Sent[] } {
  const wire: Sent[] = [];
  const sim = createSimPair({ seed: 7, tap: { record: (f) => wire.push(summarize(f)), close: () => undefined } });
  const make = (dev: Device): Side => {
    const pd = dev.allocPd();
    const cq = dev.createCq(1024);
    const cq2 = dev.createCq(1024);
    const buf = new Uint8Array(1 << 14);
    const mr = dev.regMr(pd, buf, ALL | Access.MW_BIND);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const qp2 = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq2, recvCq: cq2 });
    return { dev, pd, qp, qp2, cq, cq2, mr, buf };
  };
  const A = make(sim.a);
  const B = make(sim.b);
  const flush = Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;
  for (const [qa, qb, pa, pb] of [
    [A.qp, B.qp, 0x100, 0x200],
    [A.qp2, B.qp2, 0x300, 0x400],
  ] as const)
    connectRc(sim, qa, qb, pa, pb, { accessFlags: REMOTE | flush });
  return { sim, A, B, wire };
}

const drain = drainCompletions;

/** `mw`'s key with key byte `b` (its index kept). */
const keyOf = (mw: MemoryWindow, b: number): number => ((mw.rkey & ~0xff) | b) >>> 0;

const info = (mr: MemoryRegion | null, offset: number, length: number, mwAccessFlags: number): MwBindInfo => ({
  mr,
  addr: mr === null ? 0n : mr.addr(offset),
  length,
  mwAccessFlags,
});

/** Binds B's type 2 window `mw` under key byte `b` with a BIND_MW on `qp` (B.qp by default) and expects its success. */
function bind2(s: Side, sim: SimPair, mw: MemoryWindow, b: number, bi: MwBindInfo, qp = s.qp, cq = s.cq): number {
  const rkey = keyOf(mw, b);
  qp.postSend({ wrId: 500 + b, opcode: WrOpcode.BIND_MW, sendFlags: SendFlags.SIGNALED, bindMw: { mw, rkey, bindInfo: bi } });
  expect(drain(sim, cq, 1)).toEqual([
    { wrId: BigInt(500 + b), status: WcStatus.SUCCESS, opcode: WcOpcode.BIND_MW, byteLen: 0, qpNum: qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
  ]);
  return rkey;
}

/** An RDMA WRITE of `bytes` from A's region (offset 0) on `qp`. */
const write = (A: Side, va: bigint, rkey: number, bytes = 16, wrId = 1): Parameters<QueuePair['postSend']>[0] => ({
  wrId,
  opcode: WrOpcode.RDMA_WRITE,
  sendFlags: SendFlags.SIGNALED,
  sgList: [A.mr.sge(0, bytes)],
  rdma: { remoteAddr: va, rkey },
});

/** The last NAK on the wire. */
const lastNak = (wire: Sent[]): Sent | undefined => wire.filter((w) => w.opcode === Opcode.RC_ACKNOWLEDGE && w.aeth?.kind === AethKind.NAK).at(-1);

describe('allocation', () => {
  test('a type 1 window is valid and bound to nothing, a type 2 window free: neither key admits a WRITE (NAK remote access error)', () => {
    for (const type of [MwType.TYPE_1, MwType.TYPE_2]) {
      const { sim, A, B, wire } = setup();
      const mw = B.dev.allocMw(B.pd, type);
      expect(mw.valid).toBe(type === MwType.TYPE_1);
      expect(mw.mr).toBeNull();
      A.qp.postSend(write(A, 0n, mw.rkey));
      expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.REM_ACCESS_ERR, opcode: WcOpcode.RDMA_WRITE }]);
      expect(lastNak(wire)?.aeth?.value).toBe(NakCode.REMOTE_ACCESS_ERROR);
      expect(B.qp.errorReason).toMatch(/invalid key/);
    }
  });

  test('keys share one index space with regions; a chosen key is kept; dealloc frees the index; bad type and the max_mw limit are typed errors', () => {
    const { B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2, 0x77_0042);
    expect(mw.rkey).toBe(0x77_0042);
    expect(() => B.dev.allocMw(B.pd, MwType.TYPE_2, 0x77_0099)).toThrow(expect.objectContaining({ code: VerbsErrorCode.Busy }));
    expect(() => B.dev.regMr(B.pd, new Uint8Array(8), ALL, 0n, 0x77_0001)).toThrow(/key index 0x7700 is already in use/);
    expect(() => B.dev.allocMw(B.pd, 3 as MwType)).toThrow(expect.objectContaining({ code: VerbsErrorCode.InvalidArgument }));
    expect(() => B.dev.allocMw(B.pd, MwType.TYPE_2, B.mr.rkey)).toThrow(/already in use/);
    B.dev.deallocMw(mw);
    expect(mw.allocated).toBe(false);
    expect(() => B.dev.deallocMw(mw)).toThrow(expect.objectContaining({ code: VerbsErrorCode.NotFound }));
    expect(B.dev.allocMw(B.pd, MwType.TYPE_1, 0x77_0043).rkey).toBe(0x77_0043);
    const table = new MrTable(8, 1);
    const pd = new ProtectionDomain();
    table.allocWindow(pd, MwType.TYPE_1);
    expect(() => table.allocWindow(pd, MwType.TYPE_2)).toThrow(
      expect.objectContaining({ code: VerbsErrorCode.Limit, message: expect.stringMatching(/max_mw/) }),
    );
  });
});

describe('type 1: the bind verb', () => {
  test('qp.bindMw posts a bind that completes with BIND_MW; the window takes the next key byte and admits WRITE and READ on every QP of its PD', () => {
    const { sim, A, B, wire } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_1);
    const rkey = B.qp.bindMw(mw, { wrId: 9, sendFlags: SendFlags.SIGNALED, bindInfo: info(B.mr, 1024, 256, REMOTE) });
    expect(rkey).toBe(keyOf(mw, (mw.rkey + 1) & 0xff));
    expect(drain(sim, B.cq, 1)).toEqual([
      { wrId: 9n, status: WcStatus.SUCCESS, opcode: WcOpcode.BIND_MW, byteLen: 0, qpNum: B.qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
    ]);
    expect(mw.rkey).toBe(rkey);
    // The bind is local: nothing on the wire.
    expect(wire).toEqual([]);
    A.buf.set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    A.qp.postSend(write(A, B.mr.addr(1024 + 8), rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS }]);
    expect([...B.buf.subarray(1032, 1048)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    // Type 1 is not tied to a QP: the second QP of the PD reads through it.
    A.qp2.postSend({
      wrId: 2,
      opcode: WrOpcode.RDMA_READ,
      sendFlags: SendFlags.SIGNALED,
      sgList: [A.mr.sge(4096, 16)],
      rdma: { remoteAddr: B.mr.addr(1032), rkey },
    });
    expect(drain(sim, A.cq2, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.SUCCESS, opcode: WcOpcode.RDMA_READ, byteLen: 16 }]);
    expect([...A.buf.subarray(4096, 4112)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
  });

  test('binding again moves the window at once (no invalidation) and retires the old key; a bind to no region unbinds it', () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_1);
    const k1 = B.qp.bindMw(mw, { bindInfo: info(B.mr, 0, 64, REMOTE) });
    const k2 = B.qp.bindMw(mw, { bindInfo: info(B.mr, 4096, 64, REMOTE) });
    expect(k2).toBe(keyOf(mw, (k1 + 1) & 0xff));
    sim.clock.runUntilIdle(1000);
    expect([mw.rkey, mw.addr]).toEqual([k2, B.mr.addr(4096)]);
    expect(B.mr.windows).toBe(1);
    A.qp.postSend(write(A, B.mr.addr(4096), k2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    A.qp.postSend(write(A, B.mr.addr(0), k1, 16, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
    // Unbound (bound to no region): the window stays valid but admits nothing, and the region is free of it.
    const { sim: sim2, A: A2, B: B2 } = setup();
    const w = B2.dev.allocMw(B2.pd, MwType.TYPE_1);
    B2.qp.bindMw(w, { bindInfo: info(B2.mr, 0, 64, REMOTE) });
    const k3 = B2.qp.bindMw(w, { sendFlags: SendFlags.SIGNALED, bindInfo: info(null, 0, 0, 0) });
    expect(drain(sim2, B2.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS, opcode: WcOpcode.BIND_MW }]);
    expect([w.valid, w.mr, B2.mr.windows]).toEqual([true, null, 0]);
    A2.qp.postSend(write(A2, B2.mr.addr(0), k3));
    expect(drain(sim2, A2.cq, 1)).toMatchObject([{ status: WcStatus.REM_ACCESS_ERR }]);
  });

  test('the verb refuses what the provider refuses, with typed errors: a type 2 window, zero-based, a range without a region, another PD; BIND_MW work requests refuse type 1', () => {
    const { B } = setup();
    const w1 = B.dev.allocMw(B.pd, MwType.TYPE_1);
    const w2 = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const otherPd = B.dev.allocPd();
    const otherMr = B.dev.regMr(otherPd, new Uint8Array(64), ALL | Access.MW_BIND);
    expect(() => B.qp.bindMw(w2, { bindInfo: info(B.mr, 0, 8, REMOTE) })).toThrow(/type 2 window is bound by a BIND_MW work request/);
    expect(() => B.qp.bindMw(w1, { bindInfo: info(B.mr, 0, 8, REMOTE | Access.ZERO_BASED) })).toThrow(/cannot be zero-based/);
    expect(() => B.qp.bindMw(w1, { bindInfo: { mr: null, addr: 0n, length: 8, mwAccessFlags: REMOTE } })).toThrow(/needs a region/);
    expect(() => B.qp.bindMw(w1, { bindInfo: info(otherMr, 0, 8, REMOTE) })).toThrow(/different protection domains/);
    expect(() => B.qp.postSend({ opcode: WrOpcode.BIND_MW, bindMw: { mw: w1, rkey: keyOf(w1, 1), bindInfo: info(B.mr, 0, 8, REMOTE) } })).toThrow(
      /type 1 window is bound with qp.bindMw/,
    );
    expect(() => B.qp.postSend({ opcode: WrOpcode.BIND_MW })).toThrow(/BIND_MW needs `bindMw/);
    expect(w1.postedRkey).toBe(w1.rkey);
  });
});

describe('type 2: the BIND_MW work request', () => {
  test("the consumer chooses the key byte; WRITE, READ, atomic and FLUSH land in the window's part of the region", () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0xa5, info(B.mr, 2048, 512, REMOTE | Access.FLUSH_PERSISTENT));
    expect(rkey & 0xff).toBe(0xa5);
    expect(mw.rkey).toBe(rkey);
    expect([mw.qp, mw.mr, B.mr.windows]).toEqual([B.qp, B.mr, 1]);
    A.buf.fill(0x3c, 0, 16);
    A.qp.postSend(write(A, mw.remoteAddr(100), rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    expect(B.buf.subarray(2148, 2164).every((x) => x === 0x3c)).toBe(true);
    B.buf.set([9, 8, 7, 6], 2048 + 500);
    A.qp.postSend({
      wrId: 2,
      opcode: WrOpcode.RDMA_READ,
      sendFlags: SendFlags.SIGNALED,
      sgList: [A.mr.sge(8192, 4)],
      rdma: { remoteAddr: mw.remoteAddr(500), rkey },
    });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.SUCCESS }]);
    expect([...A.buf.subarray(8192, 8196)]).toEqual([9, 8, 7, 6]);
    new DataView(B.buf.buffer).setBigUint64(2048 + 16, 40n, true);
    A.qp.postSend({
      wrId: 3,
      opcode: WrOpcode.ATOMIC_FETCH_AND_ADD,
      sendFlags: SendFlags.SIGNALED,
      sgList: [A.mr.sge(8200, 8)],
      atomic: { remoteAddr: mw.remoteAddr(16), rkey, compareAdd: 2n },
    });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 3n, status: WcStatus.SUCCESS, opcode: WcOpcode.FETCH_ADD }]);
    expect(new DataView(B.buf.buffer).getBigUint64(2048 + 16, true)).toBe(42n);
    // A FLUSH of the whole "region" the key names covers the window only.
    const persisted: [number, number][] = [];
    B.mr.persist = (offset, length) => persisted.push([offset, length]);
    A.qp.postSend({
      wrId: 4,
      opcode: WrOpcode.FLUSH,
      sendFlags: SendFlags.SIGNALED,
      flush: { remoteAddr: 0n, rkey, length: 0, placementType: FlushType.PERSISTENT, selectivity: FlushLevel.MR },
    });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 4n, status: WcStatus.SUCCESS, opcode: WcOpcode.FLUSH }]);
    expect(persisted).toEqual([[2048, 512]]);
  });

  test('zero-based: the address a peer names is an offset into the window', () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0x10, info(B.mr, 3000, 100, REMOTE | Access.ZERO_BASED));
    expect(mw.remoteAddr(40)).toBe(40n);
    A.buf.fill(0x77, 0, 16);
    A.qp.postSend(write(A, 40n, rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    expect(B.buf.subarray(3040, 3056).every((x) => x === 0x77)).toBe(true);
    // The region's own virtual address means nothing to a zero-based window: out of its bounds.
    A.qp.postSend(write(A, B.mr.addr(3040), rkey, 16, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
    expect(B.qp.errorReason).toMatch(/out of bounds/);
  });

  test('used from another QP of the same PD: NAK remote access error; REM_ACCESS_ERR at the requester; at the responder the receive WQE in use completes REM_ACCESS_ERR, the QP goes to ERR and its other receives are flushed', () => {
    const { sim, A, B, wire } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0x21, info(B.mr, 0, 256, REMOTE));
    B.qp2.postRecv([
      { wrId: 30, sgList: [B.mr.sge(8192, 64)] },
      { wrId: 31, sgList: [B.mr.sge(8192, 64)] },
    ]);
    A.qp2.postSend({
      wrId: 5,
      opcode: WrOpcode.RDMA_WRITE_WITH_IMM,
      sendFlags: SendFlags.SIGNALED,
      sgList: [A.mr.sge(0, 16)],
      immData: 0x1234,
      rdma: { remoteAddr: mw.remoteAddr(0), rkey },
    });
    expect(drain(sim, A.cq2, 1)).toMatchObject([{ wrId: 5n, status: WcStatus.REM_ACCESS_ERR, opcode: WcOpcode.RDMA_WRITE }]);
    const nak = lastNak(wire);
    expect(nak).toMatchObject({ opcode: Opcode.RC_ACKNOWLEDGE, destQp: A.qp2.qpNum, aeth: { kind: AethKind.NAK, value: NakCode.REMOTE_ACCESS_ERROR } });
    const recvs = drain(sim, B.cq2, 2);
    expect(recvs.map((w) => [w.wrId, w.status])).toEqual([
      [30n, WcStatus.REM_ACCESS_ERR],
      [31n, WcStatus.WR_FLUSH_ERR],
    ]);
    expect(recvs[0]?.vendorErr).toMatch(/memory window bound to another QP/);
    expect(B.qp2.state).toBe(QpState.ERR);
    // The QP that bound it is untouched and still admits the same request.
    A.qp.postSend(write(A, mw.remoteAddr(0), rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    expect(B.qp.state).toBe(QpState.RTS);
  });

  test("bounds are the window's, not the region's: a WRITE one byte past the window's end is refused although the region covers it", () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0x33, info(B.mr, 1000, 64, REMOTE));
    A.qp.postSend(write(A, mw.remoteAddr(48), rkey));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    A.qp.postSend(write(A, mw.remoteAddr(49), rkey, 16, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
    expect(B.qp.errorReason).toMatch(/out of bounds/);
  });

  test("rights are the window's: a read-only window refuses WRITE and atomics although the region allows them", () => {
    for (const wr of [
      (A: Side, mw: MemoryWindow, rkey: number) => write(A, mw.remoteAddr(0), rkey),
      (A: Side, mw: MemoryWindow, rkey: number): Parameters<QueuePair['postSend']>[0] => ({
        wrId: 1,
        opcode: WrOpcode.ATOMIC_CMP_AND_SWP,
        sendFlags: SendFlags.SIGNALED,
        sgList: [A.mr.sge(0, 8)],
        atomic: { remoteAddr: mw.remoteAddr(0), rkey, compareAdd: 0n, swap: 1n },
      }),
    ]) {
      const { sim, A, B, wire } = setup();
      const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
      const rkey = bind2(B, sim, mw, 0x44, info(B.mr, 0, 64, Access.REMOTE_READ));
      A.qp.postSend({
        wrId: 0,
        opcode: WrOpcode.RDMA_READ,
        sendFlags: SendFlags.SIGNALED,
        sgList: [A.mr.sge(0, 8)],
        rdma: { remoteAddr: mw.remoteAddr(0), rkey },
      });
      expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 0n, status: WcStatus.SUCCESS }]);
      A.qp.postSend(wr(A, mw, rkey));
      expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.REM_ACCESS_ERR }]);
      expect(lastNak(wire)?.aeth?.value).toBe(NakCode.REMOTE_ACCESS_ERROR);
      expect(B.qp.errorReason).toMatch(/access not allowed/);
    }
  });

  test('bind refusals complete with MW_BIND_ERR and move the QP to ERR, later work requests flushed', () => {
    const cases: [string, RegExp, (B: Side, sim: SimPair) => SendWr][] = [
      [
        'no MW_BIND on the region (C10-73)',
        /without MW_BIND access/,
        (B) => {
          const mr = B.dev.regMr(B.pd, new Uint8Array(64), ALL);
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(mr, 0, 8, REMOTE) } };
        },
      ],
      [
        'remote write on a region without local write (C10-74)',
        /no local write access/,
        (B) => {
          const mr = B.dev.regMr(B.pd, new Uint8Array(64), Access.REMOTE_READ | Access.MW_BIND);
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(mr, 0, 8, Access.REMOTE_WRITE) } };
        },
      ],
      [
        'a range outside the region (C10-75)',
        /is not inside region/,
        (B) => {
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(B.mr, B.mr.length - 8, 16, REMOTE) } };
        },
      ],
      [
        'a type 2 window bound already (o10-37.2.30)',
        /bound: invalidate it first/,
        (B, sim) => {
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          bind2(B, sim, mw, 1, info(B.mr, 0, 8, REMOTE));
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 2), bindInfo: info(B.mr, 0, 8, REMOTE) } };
        },
      ],
      [
        'a type 2 window of zero length (o10-37.2.40)',
        /non-empty range/,
        (B) => {
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(B.mr, 0, 0, REMOTE) } };
        },
      ],
      [
        'a window of another PD than the QP (C10-72)',
        /another protection domain than the QP/,
        (B) => {
          const mw = B.dev.allocMw(B.dev.allocPd(), MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(B.mr, 0, 8, REMOTE) } };
        },
      ],
      [
        'a key of another index',
        /must keep the window/,
        (B) => {
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: (mw.rkey + 0x100) >>> 0, bindInfo: info(B.mr, 0, 8, REMOTE) } };
        },
      ],
      [
        'a deregistered region',
        /not a valid region of this device/,
        (B) => {
          const mr = B.dev.regMr(B.pd, new Uint8Array(64), ALL | Access.MW_BIND);
          B.dev.deregMr(mr);
          const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
          return { opcode: WrOpcode.BIND_MW, bindMw: { mw, rkey: keyOf(mw, 1), bindInfo: info(mr, 0, 8, REMOTE) } };
        },
      ],
    ];
    for (const [what, reason, make] of cases) {
      const { sim, B } = setup();
      B.qp.postSend([
        { ...make(B, sim), wrId: 7 },
        { wrId: 8, opcode: WrOpcode.SEND, sgList: [B.mr.sge(0, 4)] },
      ]);
      const wcs = drain(sim, B.cq, 2);
      expect([what, wcs.map((w) => [w.wrId, w.status, w.opcode])]).toEqual([
        what,
        [
          [7n, WcStatus.MW_BIND_ERR, WcOpcode.BIND_MW],
          [8n, WcStatus.WR_FLUSH_ERR, WcOpcode.SEND],
        ],
      ]);
      expect(wcs[0]?.vendorErr).toMatch(reason);
      expect(B.qp.state).toBe(QpState.ERR);
    }
  });
});

describe('invalidation', () => {
  test('LOCAL_INV frees a type 2 window: its key is refused (used after invalidation: NAK remote access error), and a BIND_MW with a new key byte makes it answer again', () => {
    const { sim, A, B, wire } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const old = bind2(B, sim, mw, 0x51, info(B.mr, 0, 64, REMOTE));
    B.qp.postSend({ wrId: 60, opcode: WrOpcode.LOCAL_INV, sendFlags: SendFlags.SIGNALED, invalidateRkey: old });
    expect(drain(sim, B.cq, 1)).toMatchObject([{ wrId: 60n, status: WcStatus.SUCCESS, opcode: WcOpcode.LOCAL_INV }]);
    expect([mw.valid, mw.mr, B.mr.windows]).toEqual([false, null, 0]);
    const fresh = bind2(B, sim, mw, 0x52, info(B.mr, 0, 64, REMOTE));
    A.qp.postSend(write(A, mw.remoteAddr(0), fresh));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    A.qp.postSend(write(A, mw.remoteAddr(0), old, 16, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
    expect(lastNak(wire)?.aeth?.value).toBe(NakCode.REMOTE_ACCESS_ERROR);
    expect(B.qp.errorReason).toMatch(/invalid key/);
  });

  test('SEND with Invalidate frees a type 2 window bound on the receiving QP: WITH_INV receive completion, then its key is refused', () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0x61, info(B.mr, 0, 64, REMOTE));
    B.qp.postRecv({ wrId: 20, sgList: [B.mr.sge(8192, 64)] });
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND_WITH_INV, sendFlags: SendFlags.SIGNALED, sgList: [A.mr.sge(0, 8)], invalidateRkey: rkey });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.SEND }]);
    expect(drain(sim, B.cq, 1)).toMatchObject([
      { wrId: 20n, status: WcStatus.SUCCESS, opcode: WcOpcode.RECV, byteLen: 8, wcFlags: WcFlags.WITH_INV, immData: rkey },
    ]);
    expect(mw.valid).toBe(false);
    A.qp.postSend(write(A, mw.remoteAddr(0), rkey, 16, 2));
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.REM_ACCESS_ERR }]);
  });

  test('a type 1 window cannot be invalidated (o10-37.2.26): remotely REM_INV_REQ_ERR at the receiver, locally LOC_QP_OP_ERR; the window keeps working for others', () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_1);
    const rkey = B.qp.bindMw(mw, { bindInfo: info(B.mr, 0, 64, REMOTE) });
    B.qp.postRecv({ wrId: 21, sgList: [B.mr.sge(8192, 64)] });
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND_WITH_INV, sendFlags: SendFlags.SIGNALED, sgList: [A.mr.sge(0, 8)], invalidateRkey: rkey });
    const wcs = drain(sim, B.cq, 1);
    expect(wcs).toMatchObject([{ wrId: 21n, status: WcStatus.REM_INV_REQ_ERR, wcFlags: WcFlags.WITH_INV }]);
    expect(wcs[0]?.vendorErr).toMatch(/type 1 memory window, which cannot be invalidated/);
    expect(B.qp.state).toBe(QpState.ERR);
    expect(mw.valid && mw.mr === B.mr).toBe(true);
    // Still valid: the other QP of the PD writes through it.
    A.qp2.postSend(write(A, B.mr.addr(0), rkey));
    expect(drain(sim, A.cq2, 1)).toMatchObject([{ status: WcStatus.SUCCESS }]);
    B.qp2.postSend({ wrId: 2, opcode: WrOpcode.LOCAL_INV, invalidateRkey: rkey });
    expect(drain(sim, B.cq2, 1)).toMatchObject([{ wrId: 2n, status: WcStatus.LOC_QP_OP_ERR, opcode: WcOpcode.LOCAL_INV }]);
    expect(mw.valid && mw.rkey === rkey).toBe(true);
  });

  test('a type 2 window cannot be invalidated from another QP: LOCAL_INV there is LOC_QP_OP_ERR, a SEND with Invalidate arriving there REM_INV_REQ_ERR', () => {
    const { sim, A, B } = setup();
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const rkey = bind2(B, sim, mw, 0x71, info(B.mr, 0, 64, REMOTE));
    B.qp2.postRecv({ wrId: 22, sgList: [B.mr.sge(8192, 64)] });
    A.qp2.postSend({ wrId: 1, opcode: WrOpcode.SEND_WITH_INV, sgList: [A.mr.sge(0, 8)], invalidateRkey: rkey });
    const wcs = drain(sim, B.cq2, 1);
    expect(wcs).toMatchObject([{ wrId: 22n, status: WcStatus.REM_INV_REQ_ERR }]);
    expect(wcs[0]?.vendorErr).toMatch(/bound on another QP/);
    expect(mw.valid).toBe(true);
    const { sim: sim2, B: B2 } = setup();
    const w2 = B2.dev.allocMw(B2.pd, MwType.TYPE_2);
    const k2 = bind2(B2, sim2, w2, 0x72, info(B2.mr, 0, 64, REMOTE));
    B2.qp2.postSend({ wrId: 3, opcode: WrOpcode.LOCAL_INV, invalidateRkey: k2 });
    const inv = drain(sim2, B2.cq2, 1);
    expect(inv).toMatchObject([{ wrId: 3n, status: WcStatus.LOC_QP_OP_ERR, opcode: WcOpcode.LOCAL_INV }]);
    expect(inv[0]?.vendorErr).toMatch(/bound on another QP/);
    expect(w2.valid).toBe(true);
  });
});

describe('the region behind a window', () => {
  test('deregMr is refused (ROCE_ERR_EBUSY) while a window is bound, and allowed once it is invalidated, unbound or deallocated', () => {
    const { sim, B } = setup();
    const mr = B.dev.regMr(B.pd, new Uint8Array(4096), ALL | Access.MW_BIND);
    const w2 = B.dev.allocMw(B.pd, MwType.TYPE_2);
    const k2 = bind2(B, sim, w2, 0x81, info(mr, 0, 64, REMOTE));
    const w1 = B.dev.allocMw(B.pd, MwType.TYPE_1);
    B.qp.bindMw(w1, { bindInfo: info(mr, 64, 64, REMOTE) });
    const w1b = B.dev.allocMw(B.pd, MwType.TYPE_1);
    B.qp.bindMw(w1b, { bindInfo: info(mr, 128, 64, REMOTE) });
    sim.clock.runUntilIdle(1000);
    expect(mr.windows).toBe(3);
    expect(() => B.dev.deregMr(mr)).toThrow(
      expect.objectContaining({ code: VerbsErrorCode.Busy, message: expect.stringMatching(/3 memory window\(s\) bound/) }),
    );
    B.qp.postSend({ opcode: WrOpcode.LOCAL_INV, invalidateRkey: k2 });
    B.qp.bindMw(w1, { bindInfo: info(null, 0, 0, 0) });
    sim.clock.runUntilIdle(1000);
    expect(mr.windows).toBe(1);
    B.dev.deallocMw(w1b);
    expect(mr.windows).toBe(0);
    B.dev.deregMr(mr);
    expect(mr.valid).toBe(false);
  });

  test('a fast-registration region cannot be invalidated while a window is bound to it (rxe_invalidate_mr(): num_mw)', () => {
    const { sim, B } = setup();
    const fr = B.dev.allocMr(B.pd, 1);
    B.dev.mapMrSg(fr, new Uint8Array(4096), 0x5000_0000n);
    B.qp.postSend({ opcode: WrOpcode.REG_MR, reg: { mr: fr, key: fr.lkey, access: ALL | Access.MW_BIND } });
    sim.clock.runUntilIdle(1000);
    expect(fr.valid).toBe(true);
    const mw = B.dev.allocMw(B.pd, MwType.TYPE_2);
    bind2(B, sim, mw, 0x91, info(fr, 0, 64, REMOTE));
    B.qp.postSend({ wrId: 4, opcode: WrOpcode.LOCAL_INV, invalidateRkey: fr.rkey });
    const wcs = drain(sim, B.cq, 1);
    expect(wcs).toMatchObject([{ wrId: 4n, status: WcStatus.LOC_QP_OP_ERR, opcode: WcOpcode.LOCAL_INV }]);
    expect(wcs[0]?.vendorErr).toMatch(/memory window\(s\) bound to it/);
    expect(fr.valid).toBe(true);
  });
});
