/**
 * FLUSH and ATOMIC WRITE (IBTA vol. 1 annex A19; rxe since Linux 6.2: rxe_req.c, rxe_resp.c
 * process_flush() and atomic_write_reply(), rxe_comp.c) between two stacks over the in-memory link,
 * and against a scripted requester or responder where the exact frames matter: the request packets,
 * the RDMA READ response of no data that answers each, the completions, the access checks and their
 * NAKs, the order an ATOMIC WRITE lands in, and duplicates answered without a second execution.
 */
import { createSimPair, type SimPair } from '../../../apps/sim/sim-pair';
import { connectQp, endpointOf, type ConnectOptions } from '../../../stack/connect';
import { QpState, QpType } from '../../../stack/qp-type-and-state';
import { Access } from '../../../stack/access-flags';
import { FlushLevel, FlushType, SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcOpcode, WcStatus } from '../../../stack/work-completion';
import type { MemoryRegion } from '../../../stack/memory-region';
import type { FaultConfig } from '../../../nic-driver/faults';
import { NakCode } from '../../../packets/aeth';
import { Opcode } from '../../../packets/opcodes';
import { scriptedPeer, summarize, sentText, psnPlus, SYN, type Sent } from '../../support/scripted-peer';
import { connectRc, drainCompletions, rcSide, type RcSide } from '../../support/sim-rc';

type Side = RcSide;

const ALL_REMOTE = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
const FLUSH_BOTH = Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

interface Pair {
  sim: SimPair;
  A: Side;
  B: Side;
  /** Every frame the link carried, decoded, in order. */
  wire: Sent[];
}

function setup(o: { mrAccessB?: number; qpAccessB?: number; faults?: FaultConfig; connect?: ConnectOptions; seed?: number } = {}): Pair {
  const wire: Sent[] = [];
  const sim = createSimPair({
    seed: o.seed ?? 3,
    faults: { aToB: o.faults ?? {}, bToA: o.faults ?? {} },
    tap: { record: (f) => wire.push(summarize(f)), close: () => undefined },
  });
  const A = rcSide(sim.a, ALL_REMOTE, 1 << 16);
  const B = rcSide(sim.b, o.mrAccessB ?? ALL_REMOTE | FLUSH_BOTH, 1 << 16);
  connectRc(sim, A.qp, B.qp, 0x100, 0x200, { ...o.connect }, { ...o.connect, accessFlags: o.qpAccessB ?? ALL_REMOTE | FLUSH_BOTH });
  return { sim, A, B, wire };
}

const drain = drainCompletions;

const le64 = (buf: Uint8Array, off: number): bigint => new DataView(buf.buffer, buf.byteOffset).getBigUint64(off, true);
const brief = (s: Sent): string => sentText(s);

describe('FLUSH', () => {
  test('global visibility over a range: RC_FLUSH (FETH + RETH, no payload), answered by a READ response of no data; a FLUSH completion', () => {
    const { sim, A, B, wire } = setup();
    A.qp.postSend({
      wrId: 1,
      opcode: WrOpcode.FLUSH,
      sendFlags: SendFlags.SIGNALED,
      flush: { remoteAddr: B.mr.addr(4096), rkey: B.mr.rkey, length: 8192, placementType: FlushType.GLOBAL },
    });
    expect(drain(sim, A.cq, 1)).toEqual([
      { wrId: 1n, status: WcStatus.SUCCESS, opcode: WcOpcode.FLUSH, byteLen: 8192, qpNum: A.qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
    ]);
    expect(wire.map(brief)).toEqual([`RC_FLUSH 256 A va=+0x${B.mr.addr(4096).toString(16)} len=8192`, 'RC_RDMA_READ_RESPONSE_ONLY 256 ACK/0 msn=1']);
    const req = wire[0]?.pkt;
    expect(req?.feth).toEqual({ selectivity: FlushLevel.RANGE, placementType: FlushType.GLOBAL });
    expect(req?.reth).toEqual({ va: B.mr.addr(4096), rkey: B.mr.rkey, dmaLength: 8192 });
    expect(req?.bth?.ackReq).toBe(true);
    expect(B.qp.resp.msn).toBe(1);
    expect(B.qp.state).toBe(QpState.RTS);
  });

  test('persistence: the region persist hook gets the range, or the whole region at selectivity MR (whose VA need not lie in it)', () => {
    const { sim, A, B } = setup();
    const calls: [number, number][] = [];
    B.mr.persist = (off, len) => calls.push([off, len]);
    A.qp.postSend([
      { wrId: 1, opcode: WrOpcode.FLUSH, flush: { remoteAddr: B.mr.addr(100), rkey: B.mr.rkey, length: 300, placementType: FlushType.PERSISTENT } },
      {
        wrId: 2,
        opcode: WrOpcode.FLUSH,
        flush: { remoteAddr: 0n, rkey: B.mr.rkey, length: 0, placementType: FlushType.GLOBAL | FlushType.PERSISTENT, selectivity: FlushLevel.MR },
      },
      // Global visibility alone asks nothing of persistence.
      {
        wrId: 3,
        opcode: WrOpcode.FLUSH,
        sendFlags: SendFlags.SIGNALED,
        flush: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey, length: 16, placementType: FlushType.GLOBAL },
      },
    ]);
    expect(drain(sim, A.cq, 1).map((w) => [w.wrId, w.status])).toEqual([[3n, WcStatus.SUCCESS]]);
    expect(calls).toEqual([
      [100, 300],
      [0, B.buf.length],
    ]);
  });

  test('a region without the flush right of the placement type: NAK remote access error, FLUSH completes REM_ACCESS_ERR, both QPs to ERR', () => {
    // The region allows global visibility only; the FLUSH asks for persistence.
    const { sim, A, B, wire } = setup({ mrAccessB: ALL_REMOTE | Access.FLUSH_GLOBAL });
    A.qp.postSend({ wrId: 5, opcode: WrOpcode.FLUSH, flush: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey, length: 64, placementType: FlushType.PERSISTENT } });
    const wcs = drain(sim, A.cq, 1);
    expect(wcs).toMatchObject([{ wrId: 5n, status: WcStatus.REM_ACCESS_ERR, opcode: WcOpcode.FLUSH }]);
    expect(wire.map(brief)).toEqual([
      `RC_FLUSH 256 A va=+0x${B.mr.addr(0).toString(16)} len=64`,
      `RC_ACKNOWLEDGE 256 NAK/${NakCode.REMOTE_ACCESS_ERROR} msn=0`,
    ]);
    expect(B.qp.state).toBe(QpState.ERR);
    expect(B.qp.errorReason).toMatch(/FLUSH \(placement type 2\) rkey 0x[0-9a-f]+ va 0x[0-9a-f]+ len 64: access not allowed/);
    expect(A.qp.state).toBe(QpState.ERR);
    expect(B.qp.counters.send_nak_rem_access).toBe(1);
  });

  test('a QP without the flush right: NAK invalid request (rxe check_qp_attr_access()), REM_INV_REQ_ERR', () => {
    const { sim, A, B, wire } = setup({ qpAccessB: ALL_REMOTE | Access.FLUSH_PERSISTENT });
    A.qp.postSend({ wrId: 6, opcode: WrOpcode.FLUSH, flush: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey, length: 64, placementType: FlushType.GLOBAL } });
    expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 6n, status: WcStatus.REM_INV_REQ_ERR, opcode: WcOpcode.FLUSH }]);
    expect(wire.map(brief)[1]).toBe(`RC_ACKNOWLEDGE 256 NAK/${NakCode.INVALID_REQUEST} msn=0`);
    expect(B.qp.state).toBe(QpState.ERR);
  });

  test('a range outside the region, or an unknown R_Key: NAK remote access error', () => {
    for (const bad of [
      (mr: MemoryRegion) => ({ remoteAddr: mr.addr(mr.length - 8), rkey: mr.rkey, length: 16 }),
      (mr: MemoryRegion) => ({ remoteAddr: mr.addr(0), rkey: (mr.rkey ^ 0x80) >>> 0, length: 16 }),
    ]) {
      const { sim, A, B, wire } = setup();
      A.qp.postSend({ wrId: 7, opcode: WrOpcode.FLUSH, flush: { ...bad(B.mr), placementType: FlushType.GLOBAL } });
      expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 7n, status: WcStatus.REM_ACCESS_ERR }]);
      expect(wire[1]?.aeth).toMatchObject({ value: NakCode.REMOTE_ACCESS_ERROR });
    }
  });

  test('bad work requests are refused at post time with a typed error', () => {
    const { A, B } = setup();
    const base = { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey, length: 8 };
    expect(() => A.qp.postSend({ opcode: WrOpcode.FLUSH })).toThrow(/FLUSH needs `flush/);
    expect(() => A.qp.postSend({ opcode: WrOpcode.FLUSH, flush: { ...base, placementType: 0 } })).toThrow(/placement type 0/);
    expect(() => A.qp.postSend({ opcode: WrOpcode.FLUSH, flush: { ...base, placementType: 4 } })).toThrow(/placement type 4/);
    expect(() => A.qp.postSend({ opcode: WrOpcode.FLUSH, flush: { ...base, placementType: 1, selectivity: 2 } })).toThrow(/selectivity 2/);
    expect(() => A.qp.postSend({ opcode: WrOpcode.FLUSH, sgList: [A.mr.sge(0, 8)], flush: { ...base, placementType: 1 } })).toThrow(/no data/);
    expect(() => A.qp.postSend({ opcode: WrOpcode.ATOMIC_WRITE })).toThrow(/ATOMIC_WRITE needs/);
  });

  test('on a UC QP FLUSH and ATOMIC WRITE are not allowed (RC only)', () => {
    const sim = createSimPair();
    const pd = sim.a.allocPd();
    const cq = sim.a.createCq();
    const qp = sim.a.createQp(pd, { qpType: QpType.UC, sendCq: cq, recvCq: cq });
    const peer = sim.b.createQp(sim.b.allocPd(), { qpType: QpType.UC, sendCq: cq, recvCq: cq });
    connectQp(qp, endpointOf(sim.a, qp, 1), endpointOf(sim.b, peer, 2));
    expect(() => qp.postSend({ opcode: WrOpcode.FLUSH, flush: { remoteAddr: 0n, rkey: 1, length: 0, placementType: 1 } })).toThrow(/not allowed on a UC QP/);
    expect(() => qp.postSend({ opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: 0n, rkey: 1, value: 1n } })).toThrow(/not allowed on a UC QP/);
  });

  test('with 30% loss each way, each FLUSH persists its range once: resends are answered from the saved resource', () => {
    const { sim, A, B } = setup({ faults: { drop: 0.3 }, seed: 11 });
    const calls: number[] = [];
    B.mr.persist = (off) => calls.push(off);
    A.qp.postSend(
      Array.from({ length: 20 }, (_, i) => ({
        wrId: i,
        opcode: WrOpcode.FLUSH,
        sendFlags: SendFlags.SIGNALED,
        flush: { remoteAddr: B.mr.addr(i * 64), rkey: B.mr.rkey, length: 64, placementType: FlushType.PERSISTENT },
      })),
    );
    const wcs = drain(sim, A.cq, 20);
    expect(wcs.map((w) => w.status)).toEqual(new Array(20).fill(WcStatus.SUCCESS));
    expect(A.qp.counters.retransmitted_pkts).toBeGreaterThan(0);
    expect(calls).toEqual(Array.from({ length: 20 }, (_, i) => i * 64));
  });

  test('a duplicate FLUSH (its answer lost) is answered again from the saved resource without flushing again', () => {
    const h = scriptedPeer({ qpAccess: ALL_REMOTE | FLUSH_BOTH, mrAccess: ALL_REMOTE | FLUSH_BOTH });
    const calls: [number, number][] = [];
    h.mr.persist = (off, len) => calls.push([off, len]);
    const P = h.rqPsn;
    const flush = {
      bth: { opcode: Opcode.RC_FLUSH, psn: P, ackReq: true },
      feth: { selectivity: 0, placementType: FlushType.PERSISTENT },
      reth: { va: h.mr.addr(64), rkey: h.mr.rkey, dmaLength: 128 },
    };
    h.inject(flush);
    h.inject(flush);
    expect(h.sentText()).toEqual([`RC_RDMA_READ_RESPONSE_ONLY ${P} ACK/0 msn=1`, `RC_RDMA_READ_RESPONSE_ONLY ${P} ACK/0 msn=1`]);
    expect(calls).toEqual([[64, 128]]);
    expect(h.qp.resp.psn).toBe(psnPlus(P, 1));
  });
});

describe('ATOMIC WRITE', () => {
  test('the 8 bytes land as one at the address, answered by a READ response of no data; an ATOMIC_WRITE completion of 8 bytes', () => {
    const { sim, A, B, wire } = setup();
    A.qp.postSend({
      wrId: 9,
      opcode: WrOpcode.ATOMIC_WRITE,
      sendFlags: SendFlags.SIGNALED,
      atomicWrite: { remoteAddr: B.mr.addr(64), rkey: B.mr.rkey, value: 0x1122334455667788n },
    });
    expect(drain(sim, A.cq, 1)).toEqual([
      { wrId: 9n, status: WcStatus.SUCCESS, opcode: WcOpcode.ATOMIC_WRITE, byteLen: 8, qpNum: A.qp.qpNum, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' },
    ]);
    expect(le64(B.buf, 64)).toBe(0x1122334455667788n);
    expect([...B.buf.subarray(56, 64), ...B.buf.subarray(72, 80)].every((x) => x === 0)).toBe(true);
    expect(wire.map(brief)).toEqual([`RC_ATOMIC_WRITE 256 A va=+0x${B.mr.addr(64).toString(16)} len=8 data=8`, 'RC_RDMA_READ_RESPONSE_ONLY 256 ACK/0 msn=1']);
    expect(wire[0]?.pkt.reth).toEqual({ va: B.mr.addr(64), rkey: B.mr.rkey, dmaLength: 8 });
    expect([...(wire[0]?.payload ?? [])]).toEqual([0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
  });

  test('ordering: data written before it is in place when its value is, and a READ after it sees it, with 20% loss each way', () => {
    for (const seed of [1, 2, 3]) {
      const { sim, A, B } = setup({ faults: { drop: 0.2 }, seed });
      const data = A.buf.subarray(0, 20000);
      for (let i = 0; i < data.length; i++) data[i] = (i * 7 + seed) & 0xff;
      // The responder's memory is looked at every time it changes: the flag never shows before the data.
      let flagBeforeData = false;
      const dataDone = (): boolean => B.buf[19999] === data[19999] && B.buf[0] === data[0];
      const origTransmit = B.dev.transmit.bind(B.dev);
      B.dev.transmit = (qp, t, path) => {
        if (le64(B.buf, 32768) === 1n && !dataDone()) flagBeforeData = true;
        origTransmit(qp, t, path);
      };
      A.qp.postSend([
        { wrId: 1, opcode: WrOpcode.RDMA_WRITE, sgList: [A.mr.sge(0, 20000)], rdma: { remoteAddr: B.mr.addr(0), rkey: B.mr.rkey } },
        { wrId: 2, opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: B.mr.addr(32768), rkey: B.mr.rkey, value: 1n } },
        {
          wrId: 3,
          opcode: WrOpcode.RDMA_READ,
          sendFlags: SendFlags.SIGNALED,
          sgList: [A.mr.sge(40000, 8)],
          rdma: { remoteAddr: B.mr.addr(32768), rkey: B.mr.rkey },
        },
      ]);
      expect(drain(sim, A.cq, 1).map((w) => [w.wrId, w.status])).toEqual([[3n, WcStatus.SUCCESS]]);
      expect(flagBeforeData).toBe(false);
      expect(Buffer.compare(B.buf.subarray(0, 20000), data)).toBe(0);
      expect(le64(A.buf, 40000)).toBe(1n);
    }
  });

  test("it counts against max_rd_atomic as READ and atomics do (rxe check_init_depth()): the second waits for the first one's answer", () => {
    const h = scriptedPeer({ maxRdAtomic: 1 });
    const P = h.sqPsn;
    h.qp.postSend([
      { wrId: 1, opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: 0x1000n, rkey: 0x1234, value: 5n } },
      { wrId: 2, opcode: WrOpcode.ATOMIC_WRITE, sendFlags: SendFlags.SIGNALED, atomicWrite: { remoteAddr: 0x1008n, rkey: 0x1234, value: 6n } },
    ]);
    h.advance(0);
    expect(h.sentText()).toEqual([`RC_ATOMIC_WRITE ${P} A va=+0x1000 len=8 data=8`]);
    h.inject({ bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, psn: P }, aeth: { syndrome: SYN.ACK, msn: 1 } });
    expect(h.sentText()).toEqual([`RC_ATOMIC_WRITE ${psnPlus(P, 1)} A va=+0x1008 len=8 data=8`]);
    h.inject({ bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, psn: psnPlus(P, 1) }, aeth: { syndrome: SYN.ACK, msn: 2 } });
    expect(h.completions()).toMatchObject([{ wrId: 2n, status: WcStatus.SUCCESS, opcode: WcOpcode.ATOMIC_WRITE }]);
  });

  test('a READ response carrying data for it is a bad response (BAD_RESP_ERR)', () => {
    const h = scriptedPeer();
    h.qp.postSend({ wrId: 1, opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: 0x1000n, rkey: 0x1234, value: 5n } });
    h.advance(0);
    h.sent();
    h.inject({ bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_ONLY, psn: h.sqPsn }, aeth: { syndrome: SYN.ACK, msn: 1 }, payload: new Uint8Array(8) });
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.BAD_RESP_ERR, opcode: WcOpcode.ATOMIC_WRITE }]);
  });

  test('failures: a misaligned address is an invalid request, a region without remote write a remote access error, a QP without remote write an invalid request', () => {
    const cases: { o: Parameters<typeof setup>[0]; off: number; nak: number; status: WcStatus }[] = [
      { o: {}, off: 4, nak: NakCode.INVALID_REQUEST, status: WcStatus.REM_INV_REQ_ERR },
      { o: { mrAccessB: Access.LOCAL_WRITE | Access.REMOTE_READ }, off: 8, nak: NakCode.REMOTE_ACCESS_ERROR, status: WcStatus.REM_ACCESS_ERR },
      { o: { qpAccessB: Access.LOCAL_WRITE | Access.REMOTE_READ }, off: 8, nak: NakCode.INVALID_REQUEST, status: WcStatus.REM_INV_REQ_ERR },
    ];
    for (const k of cases) {
      const { sim, A, B, wire } = setup(k.o);
      A.qp.postSend({ wrId: 4, opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: B.mr.addr(k.off), rkey: B.mr.rkey, value: 0xffn } });
      expect(drain(sim, A.cq, 1)).toMatchObject([{ wrId: 4n, status: k.status, opcode: WcOpcode.ATOMIC_WRITE }]);
      expect(wire[1]?.aeth).toMatchObject({ value: k.nak, msn: 0 });
      expect(B.buf.every((x) => x === 0)).toBe(true);
      expect(B.qp.state).toBe(QpState.ERR);
    }
  });

  test('a RETH length other than 8 is an invalid request (rxe check_rkey(): a length error)', () => {
    const h = scriptedPeer();
    h.inject({
      bth: { opcode: Opcode.RC_ATOMIC_WRITE, psn: h.rqPsn, ackReq: true },
      reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 16 },
      payload: new Uint8Array(8).fill(9),
    });
    expect(h.sent().map((s) => [s.op, s.aeth?.value])).toEqual([['RC_ACKNOWLEDGE', NakCode.INVALID_REQUEST]]);
    expect(h.buf.subarray(0, 8).every((x) => x === 0)).toBe(true);
  });

  test('a duplicate is answered again from the saved resource and not executed twice', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    const aw = {
      bth: { opcode: Opcode.RC_ATOMIC_WRITE, psn: P, ackReq: true },
      reth: { va: h.mr.addr(16), rkey: h.mr.rkey, dmaLength: 8 },
      payload: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]),
    };
    h.inject(aw);
    h.buf.fill(0, 16, 24); // changed locally since: a second execution would show
    h.inject(aw);
    expect(h.sentText()).toEqual([`RC_RDMA_READ_RESPONSE_ONLY ${P} ACK/0 msn=1`, `RC_RDMA_READ_RESPONSE_ONLY ${P} ACK/0 msn=1`]);
    expect([...h.buf.subarray(16, 24)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  });
});
