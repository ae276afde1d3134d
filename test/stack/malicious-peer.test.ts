/**
 * Malicious and buggy peers: every hostile request gets the IBTA reaction
 * (vol. 1 §9.9.3 responder error classes, as rxe_resp.c implements them) and
 * never an exception out of the stack:
 *   class B  PSN ahead of ePSN: one NAK PSN sequence error, QP stays up;
 *   class C  invalid request / remote access: NAK with the packet's PSN, the
 *            receive WQE in use completes in error, the QP goes to ERR;
 *   class D  silently dropped (wrong transport, duplicate without a saved
 *            request, bad ICRC, malformed header).
 * A fast-check property then throws random well-formed-but-arbitrary requests
 * at a QP and checks the stack never throws, never writes where remote
 * writes are not allowed, and only ever emits frames that decode cleanly.
 */
import fc from 'fast-check';
import { scriptedPeer, op, pattern, psnPlus, SYN, type InjectSpec, type ScriptedPeer, type Sent } from '../support/scripted-peer';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { WcFlags, WcStatus } from '../../stack/work-completion';
import { OPCODES, OpFlag } from '../../packets/opcodes';
import { creditCode } from '../../packets/aeth';

const brief = (s: Sent): [string, number, number | undefined] => [s.op, s.psn, s.aeth?.syndrome];
const NAK = (psn: number, syn: number): [string, number, number] => ['RC_ACKNOWLEDGE', psn, syn];
/** An ACK from a QP with no receive WQE posted: credit code 0 (IBTA vol. 1 §9.7.7.2). */
const ACK_NO_WQES = creditCode(0);
const ALL_REMOTE = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

function writeOnly(psn: number, va: bigint, rkey: number, data: Uint8Array, dmaLength = data.length): InjectSpec {
  return { bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn, ackReq: true }, reth: { va, rkey, dmaLength }, payload: data };
}
function readReq(psn: number, va: bigint, rkey: number, dmaLength: number): InjectSpec {
  return { bth: { opcode: op('RC_RDMA_READ_REQUEST'), psn, ackReq: true }, reth: { va, rkey, dmaLength } };
}
function fetchAdd(psn: number, va: bigint, rkey: number, add: bigint): InjectSpec {
  return { bth: { opcode: op('RC_FETCH_ADD'), psn, ackReq: true }, atomicEth: { va, rkey, swapAdd: add, compare: 0n } };
}
const snapshot = (b: Uint8Array): string => Buffer.from(b).toString('base64');

/** After a class C error: the QP is in ERR and later packets get no answer. */
function expectDead(h: ScriptedPeer): void {
  expect(h.qp.state).toBe(QpState.ERR);
  h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.qp.resp.psn, ackReq: true }, payload: pattern(4) });
  expect(h.sent()).toEqual([]);
}

describe('an R_Key or range outside the region: NAK remote access error (class C)', () => {
  test.each([
    ['an unknown R_Key', (h: ScriptedPeer) => ({ va: h.mr.addr(0), rkey: (h.mr.rkey + 0x1000) >>> 0 })],
    ['an R_Key with the wrong key byte', (h: ScriptedPeer) => ({ va: h.mr.addr(0), rkey: (h.mr.rkey ^ 0x01) >>> 0 })],
    [
      'the R_Key of another protection domain',
      (h: ScriptedPeer) => {
        const other = h.reg(4096, ALL_REMOTE, h.dev.allocPd());
        return { va: other.mr.addr(0), rkey: other.mr.rkey };
      },
    ],
    ['a VA below the region', (h: ScriptedPeer) => ({ va: h.mr.addr(0) - 8n, rkey: h.mr.rkey })],
    ['VA + length past the end', (h: ScriptedPeer, kind: string) => ({ va: h.mr.addr(h.buf.length - (kind === 'atomic' ? 0 : 8)), rkey: h.mr.rkey })],
    [
      'a region without remote access of that kind',
      (h: ScriptedPeer) => {
        const ro = h.reg(4096, Access.LOCAL_WRITE);
        return { va: ro.mr.addr(0), rkey: ro.mr.rkey };
      },
    ],
  ])('%s: WRITE, READ and atomic are each NAKed with their PSN, memory untouched, QP to ERR', (_name, target) => {
    for (const kind of ['write', 'read', 'atomic'] as const) {
      const h = scriptedPeer();
      const P = h.rqPsn;
      h.buf.set(pattern(h.buf.length, 1));
      const before = snapshot(h.buf);
      const { va, rkey } = target(h, kind);
      h.postRecv(1, 0, 64);
      const spec = kind === 'write' ? writeOnly(P, va, rkey, pattern(16, 9)) : kind === 'read' ? readReq(P, va, rkey, 16) : fetchAdd(P, va, rkey, 1n);
      expect(() => h.inject(spec)).not.toThrow();
      expect(h.sent().map(brief)).toEqual([NAK(P, SYN.NAK_REM_ACCESS)]);
      expect(snapshot(h.buf.subarray(0, h.buf.length))).toBe(before);
      expect(h.qp.counters.send_nak_rem_access).toBe(1);
      expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.WR_FLUSH_ERR }]);
      expectDead(h);
    }
  });

  test('WRITE with immediate and a bad R_Key: the receive WQE it took completes in error', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 64);
    h.postRecv(2, 64, 64);
    h.inject({
      bth: { opcode: op('RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE'), psn: h.rqPsn, ackReq: true },
      reth: { va: 0n, rkey: 0x4242, dmaLength: 4 },
      immDt: 1,
      payload: pattern(4),
    });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_REM_ACCESS)]);
    expect(h.completions().map((w) => [w.wrId, w.status])).toEqual([
      [1n, WcStatus.REM_ACCESS_ERR],
      [2n, WcStatus.WR_FLUSH_ERR],
    ]);
  });

  test('SEND with invalidate of an R_Key that cannot be invalidated: the receive WQE completes with REM_INV_REQ_ERR and the QP goes to ERR (rxe class J)', () => {
    const h = scriptedPeer();
    const foreign = h.reg(64, ALL_REMOTE, h.dev.allocPd());
    h.postRecv(1, 0, 64);
    h.postRecv(2, 64, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY_WITH_INVALIDATE'), psn: h.rqPsn, ackReq: true }, ieth: foreign.mr.rkey, payload: pattern(4) });
    expect(foreign.mr.valid).toBe(true);
    expect(h.completions().map((w) => [w.wrId, w.status, w.wcFlags & WcFlags.WITH_INV])).toEqual([
      [1n, WcStatus.REM_INV_REQ_ERR, WcFlags.WITH_INV],
      [2n, WcStatus.WR_FLUSH_ERR, 0],
    ]);
    expect(h.qp.state).toBe(QpState.ERR);
  });

  test('a zero-length WRITE or READ needs no valid R_Key (C9-88: the key is checked only when there is data)', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.inject(writeOnly(P, 0xdead_beefn, 0x999999, new Uint8Array(0)), readReq(psnPlus(P, 1), 0xdead_beefn, 0x999999, 0));
    expect(h.sent().map(brief)).toEqual([NAK(P, ACK_NO_WQES), ['RC_RDMA_READ_RESPONSE_ONLY', psnPlus(P, 1), ACK_NO_WQES]]);
    expect(h.qp.state).toBe(QpState.RTS);
  });
});

describe('lengths that disagree with the RETH or the path MTU: NAK invalid request (class C)', () => {
  test('a WRITE ONLY carrying more than its DMA length: nothing written', () => {
    const h = scriptedPeer();
    h.inject(writeOnly(h.rqPsn, h.mr.addr(0), h.mr.rkey, pattern(20, 1), 10));
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.buf.subarray(0, 32).every((b) => b === 0)).toBe(true);
    expectDead(h);
  });

  test('a WRITE LAST that runs past the DMA length: NAK at the LAST, nothing written past the range', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.inject(
      { bth: { opcode: op('RC_RDMA_WRITE_FIRST'), psn: P }, reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 300 }, payload: pattern(256, 1) },
      { bth: { opcode: op('RC_RDMA_WRITE_LAST'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(100, 2) },
    );
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, 1), SYN.NAK_INV_REQ)]);
    expect(h.buf.subarray(256).every((b) => b === 0)).toBe(true);
    expectDead(h);
  });

  test('a WRITE LAST that ends short of the DMA length', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.inject(
      { bth: { opcode: op('RC_RDMA_WRITE_FIRST'), psn: P }, reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 600 }, payload: pattern(256, 1) },
      { bth: { opcode: op('RC_RDMA_WRITE_LAST'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(20, 2) },
    );
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, 1), SYN.NAK_INV_REQ)]);
    expectDead(h);
  });

  test("a FIRST carrying two MTUs (a valid MTU, but not this path's)", () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 4096);
    h.inject({ bth: { opcode: op('RC_SEND_FIRST'), psn: h.rqPsn }, payload: pattern(512) });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.REM_INV_REQ_ERR }]);
    expectDead(h);
  });

  test('a MIDDLE shorter than the MTU after a good FIRST: NAK, the receive WQE completes in error', () => {
    const h = scriptedPeer({ pathMtu: 2 });
    const P = h.rqPsn;
    h.postRecv(1, 0, 4096);
    h.inject(
      { bth: { opcode: op('RC_SEND_FIRST'), psn: P }, payload: pattern(512) },
      { bth: { opcode: op('RC_SEND_MIDDLE'), psn: psnPlus(P, 1) }, payload: pattern(256) },
    );
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, 1), SYN.NAK_INV_REQ)]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.REM_INV_REQ_ERR }]);
  });

  test('an ONLY longer than the path MTU', () => {
    const h = scriptedPeer();
    h.inject(writeOnly(h.rqPsn, h.mr.addr(0), h.mr.rkey, pattern(300)));
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.buf.subarray(0, 300).every((b) => b === 0)).toBe(true);
  });

  test('a SEND longer than the receive buffer: NAK invalid request, LOC_LEN_ERR on the receive side', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 16);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(17) });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.LOC_LEN_ERR }]);
    expect(h.buf[16]).toBe(0);
  });

  test('a FIRST whose payload is no path MTU at all (100 bytes): NAK invalid request, as rxe check_length', () => {
    // The decoder flags the payload rule; the device still hands the (ICRC-valid) packet to the responder.
    const h = scriptedPeer();
    h.postRecv(1, 0, 4096);
    h.inject({ bth: { opcode: op('RC_SEND_FIRST'), psn: h.rqPsn }, payload: pattern(100) });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.REM_INV_REQ_ERR }]);
    expect(h.dev.counters.rcvd_malformed).toBe(0);
    expectDead(h);
  });

  test('a SEND LAST with no payload: NAK invalid request (a LAST carries 1..MTU bytes)', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 4096);
    h.inject({ bth: { opcode: op('RC_SEND_FIRST'), psn: h.rqPsn }, payload: pattern(256) });
    h.inject({ bth: { opcode: op('RC_SEND_LAST'), psn: psnPlus(h.rqPsn, 1), ackReq: true } });
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(h.rqPsn, 1), SYN.NAK_INV_REQ)]);
    expectDead(h);
  });
});

describe('a wrong opcode sequence: NAK invalid request (class C)', () => {
  test('SEND MIDDLE without a FIRST', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 4096);
    h.inject({ bth: { opcode: op('RC_SEND_MIDDLE'), psn: h.rqPsn }, payload: pattern(256) });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.completions()).toMatchObject([{ wrId: 1n, status: WcStatus.WR_FLUSH_ERR }]);
    expectDead(h);
  });

  test("WRITE LAST after SEND FIRST: NAK at the LAST, the SEND's receive WQE completes with REM_INV_REQ_ERR", () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 4096);
    h.postRecv(2, 0, 4096);
    h.inject(
      { bth: { opcode: op('RC_SEND_FIRST'), psn: P }, payload: pattern(256) },
      { bth: { opcode: op('RC_RDMA_WRITE_LAST'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(10) },
    );
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, 1), SYN.NAK_INV_REQ)]);
    expect(h.completions().map((w) => [w.wrId, w.status])).toEqual([
      [1n, WcStatus.REM_INV_REQ_ERR],
      [2n, WcStatus.WR_FLUSH_ERR],
    ]);
    expectDead(h);
  });

  test('a new SEND FIRST while a SEND is in progress', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 4096);
    h.inject(
      { bth: { opcode: op('RC_SEND_FIRST'), psn: P }, payload: pattern(256) },
      { bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, 1), ackReq: true }, payload: pattern(4) },
    );
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, 1), SYN.NAK_INV_REQ)]);
  });

  test('an operation the QP does not enable (READ without REMOTE_READ access)', () => {
    const h = scriptedPeer({ qpAccess: Access.LOCAL_WRITE | Access.REMOTE_WRITE });
    h.inject(readReq(h.rqPsn, h.mr.addr(0), h.mr.rkey, 8));
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expectDead(h);
  });

  test.each(['RC_FLUSH', 'RC_ATOMIC_WRITE'])("%s the QP refuses: a FLUSH without the QP's flush right, an ATOMIC WRITE at a misaligned address", (name) => {
    const h = scriptedPeer();
    const spec: InjectSpec =
      name === 'RC_FLUSH'
        ? {
            bth: { opcode: op(name), psn: h.rqPsn, ackReq: true },
            feth: { selectivity: 0, placementType: 1 },
            reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 8 },
          }
        : { bth: { opcode: op(name), psn: h.rqPsn, ackReq: true }, reth: { va: h.mr.addr(4), rkey: h.mr.rkey, dmaLength: 8 }, payload: pattern(8) };
    h.inject(spec);
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(h.buf.subarray(0, 16).every((b) => b === 0)).toBe(true);
  });
});

describe('a PSN far out of the window', () => {
  test('ePSN + 2^22 (invalid region): one NAK PSN sequence error with ePSN, QP stays in RTS', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.postRecv(1, 0, 64);
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, 1 << 22), ackReq: true }, payload: pattern(4) });
    h.inject(writeOnly(psnPlus(P, (1 << 22) + 1), h.mr.addr(0), h.mr.rkey, pattern(4)));
    expect(h.sent().map(brief)).toEqual([NAK(P, SYN.NAK_SEQ)]);
    expect(h.buf.subarray(0, 4).every((b) => b === 0)).toBe(true);
    expect(h.completions()).toEqual([]);
    expect(h.qp.state).toBe(QpState.RTS);
    expect(h.qp.resp.psn).toBe(P);
  });

  test('ePSN - 2^23 + 1 (oldest duplicate PSN): WRITE re-ACKed but not executed; READ and atomic without a saved request dropped', () => {
    const h = scriptedPeer();
    const P = h.rqPsn;
    h.buf.set(pattern(64, 3));
    const before = snapshot(h.buf);
    const old = psnPlus(P, -(1 << 23) + 1);
    h.inject(writeOnly(old, h.mr.addr(0), h.mr.rkey, new Uint8Array(16).fill(0xff)));
    expect(h.sent().map(brief)).toEqual([NAK(psnPlus(P, -1), ACK_NO_WQES)]);
    h.inject(readReq(old, h.mr.addr(0), h.mr.rkey, 16), fetchAdd(old, h.mr.addr(0), h.mr.rkey, 1n));
    expect(h.sent()).toEqual([]);
    expect(snapshot(h.buf)).toBe(before);
    expect(h.qp.state).toBe(QpState.RTS);
    expect(h.qp.resp.psn).toBe(P);
    expect(h.qp.counters.duplicate_request).toBe(3);
  });
});

describe('READ and atomic limits: NAK invalid request (class C)', () => {
  test.each([0x8000_0001, 0xffff_ffff])('a READ of %d bytes (over 2^31)', (len) => {
    const h = scriptedPeer();
    h.inject(readReq(h.rqPsn, h.mr.addr(0), h.mr.rkey, len));
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expectDead(h);
  });

  test.each([1n, 4n, 7n])('an atomic at an unaligned address (va %% 8 = %d)', (mis) => {
    const h = scriptedPeer();
    h.buf.set(pattern(64, 1));
    const before = snapshot(h.buf);
    h.inject({
      bth: { opcode: op('RC_COMPARE_SWAP'), psn: h.rqPsn, ackReq: true },
      atomicEth: { va: h.mr.addr(8) + mis, rkey: h.mr.rkey, swapAdd: 0n, compare: 0n },
    });
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, SYN.NAK_INV_REQ)]);
    expect(snapshot(h.buf)).toBe(before);
    expectDead(h);
  });
});

describe('silently dropped (class D)', () => {
  test('a request opcode of another transport (UC, UD) on an RC QP', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 64);
    h.inject({ bth: { opcode: op('UC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(4) });
    h.inject({
      bth: { opcode: op('UC_RDMA_WRITE_ONLY'), psn: h.rqPsn, ackReq: true },
      reth: { va: h.mr.addr(100), rkey: h.mr.rkey, dmaLength: 4 },
      payload: pattern(4),
    });
    h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, deth: { qkey: 0x11111111, srcQp: 0x99 }, payload: pattern(4) });
    expect(h.sent()).toEqual([]);
    expect(h.completions()).toEqual([]);
    expect(h.buf.subarray(100, 104).every((b) => b === 0)).toBe(true);
    expect(h.qp.state).toBe(QpState.RTS);
    expect(h.qp.resp.psn).toBe(h.rqPsn);
  });

  test('RC opcodes on a UC QP, and anything on a UD QP without a DETH', () => {
    const uc = scriptedPeer({ qpType: QpType.UC });
    uc.postRecv(1, 0, 64);
    uc.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: uc.rqPsn, ackReq: true }, payload: pattern(4) }, readReq(uc.rqPsn, uc.mr.addr(0), uc.mr.rkey, 8));
    expect(uc.sent()).toEqual([]);
    expect(uc.completions()).toEqual([]);
    const ud = scriptedPeer({ qpType: QpType.UD });
    ud.postRecv(1, 0, 256);
    ud.inject(
      { bth: { opcode: op('RC_SEND_ONLY'), psn: 0, ackReq: true }, payload: pattern(4) },
      { bth: { opcode: op('UC_SEND_ONLY'), psn: 0 }, payload: pattern(4) },
    );
    expect(ud.sent()).toEqual([]);
    expect(ud.completions()).toEqual([]);
  });

  test('a frame with a bad ICRC is dropped and counted; the same frame with a good ICRC is taken', () => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 64);
    const spec: InjectSpec = { bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(16) };
    const good = h.frame(spec);
    const bad = good.slice();
    bad[bad.length - 10] = (bad[bad.length - 10] ?? 0) ^ 0x40; // a payload bit flipped in flight
    h.injectFrames(bad);
    h.injectFrames(h.frame({ ...spec, icrc: 0x12345678 }));
    expect(h.sent()).toEqual([]);
    expect(h.dev.counters.rcvd_icrc_err).toBe(2);
    expect(h.completions()).toEqual([]);
    h.injectFrames(good);
    expect(h.sent().map(brief)).toEqual([NAK(h.rqPsn, ACK_NO_WQES)]);
  });

  test('frames for an unknown QP, truncated frames and non-RoCE frames', () => {
    const h = scriptedPeer();
    h.inject({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, destQp: 0x777, ackReq: true }, payload: pattern(4) });
    const f = h.frame({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(40) });
    const cut = [14, 30, 42, 50, 54, f.length - 5].map((n) => f.slice(0, n));
    expect(() => h.injectFrames(...cut, new Uint8Array(0), new Uint8Array(60))).not.toThrow();
    expect(h.sent()).toEqual([]);
    expect(h.dev.counters.rcvd_unknown_qp).toBe(1);
    expect(h.qp.state).toBe(QpState.RTS);
  });
});

// ---------------------------------------------------------------------------
// Property: random well-formed-but-arbitrary request packets.

const RC_REQUESTS = OPCODES.filter(
  (e) => e !== undefined && (e.flags & OpFlag.REQ) !== 0 && (e.transport === 'RC' || e.transport === 'UC' || e.transport === 'UD'),
).map((e) => e!);

interface Region {
  name: 'rw' | 'ro' | 'recv';
  mr: { rkey: number; addr(o?: number): bigint };
  buf: Uint8Array;
}

const packetArb = fc.record({
  op: fc.constantFrom(...RC_REQUESTS),
  psnOff: fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, fc.integer({ min: -3, max: 3 }), fc.constantFrom(1 << 22, -(1 << 23) + 1, 1 << 23, -1)),
  // Biased towards requests that are valid, so the property also runs the paths that execute them.
  region: fc.oneof({ arbitrary: fc.constant<Region['name']>('rw'), weight: 4 }, fc.constantFrom<Region['name'] | 'bogus'>('ro', 'recv', 'bogus')),
  vaOff: fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 500 }).map((x) => x * 8), weight: 3 },
    fc.integer({ min: -16, max: 9000 }),
    fc.constantFrom(0, 8, 4088, 4096, 8184, 8192),
  ),
  dmaLength: fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 1024 }), weight: 3 },
    fc.integer({ min: 0, max: 9000 }),
    fc.constantFrom(0, 1, 256, 257, 4096, 0x8000_0000, 0xffff_ffff),
  ),
  paySize: fc.oneof(fc.constantFrom(0, 1, 255, 256, 257, 512, 1024), fc.integer({ min: 0, max: 600 })),
  ackReq: fc.boolean(),
  imm: fc.nat(),
  swapAdd: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  compare: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  post: fc.boolean(),
});

const seen = new Set<string>();

test('property: random request packets never throw, never write where remote writes are not allowed, and every emitted frame decodes cleanly', () => {
  fc.assert(
    fc.property(fc.array(packetArb, { minLength: 1, maxLength: 30 }), fc.constantFrom(1, 3) as fc.Arbitrary<1 | 3>, (pkts, pathMtu) => {
      const h = scriptedPeer({ pathMtu, bufSize: 8192 });
      const rw: Region = { name: 'rw', mr: h.mr, buf: h.buf };
      const ro = h.reg(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
      const recv = h.reg(8192, Access.LOCAL_WRITE);
      ro.buf.set(pattern(4096, 17));
      const roCopy = snapshot(ro.buf);
      const regions: Region[] = [rw, { name: 'ro', ...ro }, { name: 'recv', ...recv }];
      let recvSlot = 0;
      for (const k of pkts) {
        if (k.post) {
          h.qp.postRecv({ wrId: recvSlot, sgList: [recv.mr.sge((recvSlot % 8) * 1024, 1024)] });
          recvSlot++;
        }
        const r = regions.find((x) => x.name === k.region);
        const va = r !== undefined ? r.mr.addr(0) + BigInt(k.vaOff) : 0x1234_5678n + BigInt(k.vaOff);
        const rkey = r !== undefined ? r.mr.rkey : 0x00ab_cd12;
        const info = k.op;
        const t: InjectSpec = { bth: { opcode: info.opcode, psn: psnPlus(h.qp.resp.psn, k.psnOff), ackReq: k.ackReq } };
        const has = (n: string): boolean =>
          (info.hdrs & (1 << ['XRCETH', 'RDETH', 'DETH', 'FETH', 'RETH', 'ATOMIC_ETH', 'AETH', 'ATOMIC_ACK_ETH', 'IMMDT', 'IETH', 'CNP'].indexOf(n))) !== 0;
        if (has('RETH')) t.reth = { va: BigInt.asUintN(64, va), rkey, dmaLength: k.dmaLength };
        if (has('ATOMIC_ETH')) t.atomicEth = { va: BigInt.asUintN(64, va), rkey, swapAdd: k.swapAdd, compare: k.compare };
        if (has('IMMDT')) t.immDt = k.imm >>> 0;
        if (has('IETH')) t.ieth = rkey;
        if (has('DETH')) t.deth = { qkey: 0x11111111, srcQp: 0x99 };
        if (has('FETH')) t.feth = { selectivity: 0, placementType: 1 };
        if (info.payload === 'fixed') t.payload = pattern(info.fixedPayload, k.imm);
        else if (info.payload !== 'none') t.payload = pattern(k.paySize, k.imm);
        h.inject(t); // must not throw
        // every frame decodes, with a good ICRC and the right addresses
        for (const s of h.sent())
          seen.add(s.aeth !== undefined && s.op === 'RC_ACKNOWLEDGE' ? `${s.aeth.kind}/${s.aeth.kind === 'RNR_NAK' ? 't' : s.aeth.value}` : s.op);
        if (h.qp.state === QpState.ERR) h.reconnect();
      }
      h.advance(1e9); // timers too
      h.sent();
      for (const w of h.completions()) seen.add(`wc/${w.status}`);
      return snapshot(ro.buf) === roCopy;
    }),
    { numRuns: 150, seed: 0x5eed },
  );
  // The random packets reach every kind of answer (so the property tests the paths it claims to).
  expect([...seen].sort()).toEqual(
    expect.arrayContaining([
      'ACK/0',
      'NAK/0',
      'NAK/1',
      'NAK/2',
      'RNR_NAK/t',
      'RC_ATOMIC_ACKNOWLEDGE',
      'RC_RDMA_READ_RESPONSE_ONLY',
      'RC_RDMA_READ_RESPONSE_FIRST',
      `wc/${WcStatus.SUCCESS}`,
      `wc/${WcStatus.WR_FLUSH_ERR}`,
    ]),
  );
});

// ---------------------------------------------------------------------------
// Property: a buggy responder. Random work on the QP, then random responses
// (ACKs, NAKs of every code, RNR NAKs, READ responses, atomic ACKs) at PSNs
// around the retry point, with time passing in between.

const workArb = fc.record({
  kind: fc.constantFrom('send', 'write', 'read', 'cas', 'fadd'),
  len: fc.oneof(fc.integer({ min: 0, max: 1200 }), fc.constantFrom(0, 1, 256, 257, 1024)),
  signaled: fc.boolean(),
  fence: fc.boolean(),
});
const respArb = fc.record({
  kind: fc.oneof(
    { arbitrary: fc.constant('ACKNOWLEDGE'), weight: 4 },
    fc.constantFrom('ATOMIC_ACKNOWLEDGE', 'RDMA_READ_RESPONSE_FIRST', 'RDMA_READ_RESPONSE_MIDDLE', 'RDMA_READ_RESPONSE_LAST', 'RDMA_READ_RESPONSE_ONLY'),
  ),
  base: fc.constantFrom('comp', 'first', 'sent'),
  psnOff: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, fc.integer({ min: -3, max: 12 }), fc.constantFrom(1 << 22, -(1 << 23))),
  syndrome: fc.oneof(
    { arbitrary: fc.constant(SYN.ACK), weight: 4 },
    fc.integer({ min: 0, max: 30 }), // ACK with credits
    { arbitrary: fc.oneof(fc.constantFrom(1, 2, 3), fc.integer({ min: 0, max: 31 })).map((t) => SYN.rnr(t)), weight: 2 },
    { arbitrary: fc.integer({ min: 0, max: 4 }).map((c) => 0x60 | c), weight: 2 }, // NAK codes
    fc.integer({ min: 5, max: 31 }).map((c) => 0x60 | c), // reserved NAK codes
    fc.integer({ min: 0, max: 31 }).map((c) => 0x40 | c), // reserved kind
  ),
  msn: fc.integer({ min: 0, max: 0xffffff }),
  payLen: fc.oneof(fc.constantFrom(0, 1, 100, 256, 1024), fc.integer({ min: 0, max: 1100 })),
  orig: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  advanceNs: fc.constantFrom(0, 0, 0, 10_000, 1_100_000, 50_000_000),
});

const seenResp = new Set<number>();

test('property: random responses never throw, every WQE completes exactly once and in order, and only READ/atomic targets are written', () => {
  fc.assert(
    fc.property(
      fc.array(workArb, { minLength: 1, maxLength: 8 }),
      fc.array(respArb, { minLength: 1, maxLength: 25 }),
      fc.constantFrom(1, 3) as fc.Arbitrary<1 | 3>,
      fc.integer({ min: 0, max: 3 }),
      (work, resps, pathMtu, retries) => {
        const h = scriptedPeer({ pathMtu, timeout: 8, retryCnt: retries, rnrRetry: retries, maxRdAtomic: 2 });
        const src = h.reg(4096, 0);
        src.buf.set(pattern(4096, 5));
        const srcCopy = snapshot(src.buf);
        const dst = h.reg(8 * 1200, Access.LOCAL_WRITE);
        const sendKinds: Record<string, number> = { send: 2, write: 0, read: 4, cas: 5, fadd: 6 };
        work.forEach((w, i) => {
          const atomic = w.kind === 'cas' || w.kind === 'fadd';
          const len = atomic ? 8 : w.len;
          const local = w.kind === 'read' || atomic ? dst.mr.sge(i * 1200, len) : src.mr.sge(0, len);
          const sendFlags = (w.signaled ? 2 : 0) | (w.fence ? 1 : 0);
          const base = { wrId: i, opcode: sendKinds[w.kind] as 0, sgList: [local], sendFlags };
          if (atomic) h.qp.postSend({ ...base, atomic: { remoteAddr: 0x1000n, rkey: 7, compareAdd: 1n, swap: 2n } });
          else if (w.kind === 'send') h.qp.postSend(base);
          else h.qp.postSend({ ...base, rdma: { remoteAddr: 0x2000n, rkey: 7 } });
        });
        h.sent();
        for (const r of resps) {
          const c = h.qp.comp;
          const base = r.base === 'comp' ? c.psn : r.base === 'first' ? h.sqPsn : h.qp.req.sentHigh;
          const psn = psnPlus(base, r.psnOff);
          const opcode = op(`RC_${r.kind}`);
          const t: InjectSpec = { bth: { opcode, psn } };
          if (r.kind !== 'RDMA_READ_RESPONSE_MIDDLE') t.aeth = { syndrome: r.syndrome, msn: r.msn };
          if (r.kind === 'ATOMIC_ACKNOWLEDGE') t.atomicAckEth = { origData: r.orig };
          if (r.kind.startsWith('RDMA_READ')) t.payload = pattern(r.payLen, r.msn);
          h.inject(t);
          h.sent();
          if (r.advanceNs > 0) h.advance(r.advanceNs);
          h.sent();
        }
        // Silence from the peer: every WQE must end (success earlier, or retries exhausted, or flushed).
        for (let i = 0; i < 40 && h.qp.sq.length > h.qp.comp.index; i++) {
          h.advance(100_000_000);
          h.sent();
        }
        const wcs = h.completions();
        for (const w of wcs) seenResp.add(w.status);
        const ids = wcs.map((w) => Number(w.wrId));
        const errAt = wcs.findIndex((w) => w.status !== WcStatus.SUCCESS);
        const ok =
          h.qp.sq.length === h.qp.comp.index && // nothing stuck
          new Set(ids).size === ids.length && // at most once
          ids.every((id, k) => k === 0 || id > (ids[k - 1] ?? -1)) && // in posting order
          work.every((w, i) => !w.signaled || ids.includes(i)) && // every signaled WQE completes
          (errAt < 0 || wcs.slice(errAt + 1).every((w) => w.status === WcStatus.WR_FLUSH_ERR)) && // after an error, only flushes
          (errAt < 0 || ids.slice(errAt).length === work.length - (ids[errAt] ?? 0)) && // every WQE from the error on completes
          snapshot(src.buf) === srcCopy;
        return ok;
      },
    ),
    { numRuns: 200, seed: 0xbad5eed },
  );
  expect([...seenResp].sort((a, b) => a - b)).toEqual(
    expect.arrayContaining([
      WcStatus.SUCCESS,
      WcStatus.WR_FLUSH_ERR,
      WcStatus.BAD_RESP_ERR,
      WcStatus.REM_INV_REQ_ERR,
      WcStatus.REM_ACCESS_ERR,
      WcStatus.REM_OP_ERR,
      WcStatus.RETRY_EXC_ERR,
      WcStatus.RNR_RETRY_EXC_ERR,
    ]),
  );
});
