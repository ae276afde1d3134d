/**
 * The RPC-over-RDMA v1 header (RFC 8166 §4.2) and the ONC RPC message behind it (RFC 5531, NFSv4
 * COMPOUND): parse(emit(x)) gives x back, and short or bad input is a typed WireError.
 */
import { WireError } from '../../packets/errors';
import { type RpcRdmaHeaderSpec, RpcRdmaErrorCode, RpcRdmaProc, emitRpcRdmaHeader, parseRpcRdmaHeader, procName } from '../../ulp/rpc-rdma/rpcrdma-header';
import { AcceptStat, RejectStat, ReplyStat, XdrWriter, emitRpcCall, emitRpcReply, parseRpcMessage } from '../../ulp/rpc-rdma/rpc-message';
import { Nfs4Op, nfs4OpName, procedureName } from '../../ulp/rpc-rdma/nfs-names';

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const header = (s: RpcRdmaHeaderSpec) => {
  const b = emitRpcRdmaHeader(s);
  return { bytes: b, h: parseRpcRdmaHeader(view(b), 0, b.length) };
};
function wireError(f: () => unknown): WireError {
  try {
    f();
  } catch (e) {
    if (e instanceof WireError) return e;
    throw e;
  }
  throw new Error('no error');
}

describe('the RPC-over-RDMA header', () => {
  test('RDMA_MSG with a read list, two write chunks and a reply chunk round trips', () => {
    const s = {
      xid: 0x5e1d0a01,
      credits: 128,
      proc: RpcRdmaProc.MSG,
      readList: [
        { position: 0, handle: 0x1234, length: 300, offset: 0x7f0000001000n },
        { position: 0, handle: 0x1235, length: 20, offset: 0x7f0000002000n },
      ],
      writeList: [
        [{ handle: 0x99, length: 4096, offset: 0xffff_0000_0000_0010n }],
        [
          { handle: 0x9a, length: 8, offset: 1n },
          { handle: 0x9b, length: 9, offset: 2n },
        ],
      ],
      replyChunk: [{ handle: 0xabcdef01, length: 1024, offset: 0n }],
    };
    const { bytes, h } = header(s);
    expect(bytes.length).toBe(16 + 2 * 24 + 4 + (4 + 4 + 16) + (4 + 4 + 32) + 4 + 4 + 4 + 16);
    expect(h).toMatchObject({ ...s, vers: 1, align: null, errorCode: null, length: bytes.length });
    expect(procName(h.proc)).toBe('RDMA_MSG');
  });
  test('RDMA_NOMSG with empty lists, RDMA_MSGP with align and threshold, RDMA_DONE', () => {
    expect(header({ xid: 1, credits: 2, proc: RpcRdmaProc.NOMSG }).h).toMatchObject({ readList: [], writeList: [], replyChunk: null, length: 28 });
    expect(header({ xid: 1, credits: 2, proc: RpcRdmaProc.MSGP, align: 4, threshold: 32 }).h).toMatchObject({ align: 4, threshold: 32, length: 36 });
    expect(header({ xid: 1, credits: 2, proc: RpcRdmaProc.DONE }).h).toMatchObject({ proc: 3, length: 16 });
  });
  test('RDMA_ERROR: ERR_VERS with its versions, ERR_CHUNK alone', () => {
    expect(header({ xid: 7, credits: 0, proc: RpcRdmaProc.ERROR, errorCode: RpcRdmaErrorCode.ERR_VERS, versLow: 1, versHigh: 1 }).h).toMatchObject({
      errorCode: 1,
      versLow: 1,
      versHigh: 1,
      length: 28,
    });
    expect(header({ xid: 7, credits: 0, proc: RpcRdmaProc.ERROR, errorCode: RpcRdmaErrorCode.ERR_CHUNK }).h).toMatchObject({
      errorCode: 2,
      versLow: null,
      length: 20,
    });
  });
  test('short, wrong version, unknown proc, bad discriminator: typed errors', () => {
    const ok = emitRpcRdmaHeader({ xid: 1, credits: 1, proc: RpcRdmaProc.MSG, readList: [{ position: 0, handle: 1, length: 2, offset: 3n }] });
    expect(wireError(() => parseRpcRdmaHeader(view(ok), 0, 12)).code).toBe('ROCE_ERR_TRUNCATED');
    expect(wireError(() => parseRpcRdmaHeader(view(ok), 0, ok.length - 1)).code).toBe('ROCE_ERR_TRUNCATED');
    const v2 = ok.slice();
    v2[7] = 2;
    expect(wireError(() => parseRpcRdmaHeader(view(v2), 0, v2.length))).toMatchObject({ code: 'ROCE_ERR_BAD_FIELD', offset: 4 });
    const p9 = ok.slice();
    p9[15] = 9;
    expect(wireError(() => parseRpcRdmaHeader(view(p9), 0, p9.length))).toMatchObject({ code: 'ROCE_ERR_BAD_FIELD', offset: 12 });
    const d2 = ok.slice();
    d2[19] = 2;
    expect(wireError(() => parseRpcRdmaHeader(view(d2), 0, d2.length))).toMatchObject({ code: 'ROCE_ERR_BAD_FIELD', offset: 16 });
    const many = new XdrWriter().u32(1, 1, 1, 0, 0, 0, 1, 0xffff).done();
    expect(wireError(() => parseRpcRdmaHeader(view(many), 0, many.length)).code).toBe('ROCE_ERR_BAD_LENGTH');
    expect(wireError(() => emitRpcRdmaHeader({ xid: -1, credits: 0, proc: 0 })).code).toBe('ROCE_ERR_BAD_VALUE');
    expect(wireError(() => emitRpcRdmaHeader({ xid: 1, credits: 0, proc: 7 })).code).toBe('ROCE_ERR_BAD_VALUE');
  });
});

describe('the RPC message', () => {
  const seqArgs = new XdrWriter().bytes(new Uint8Array(16).fill(0xab)).u32(5, 0, 0, 0);
  const fh = Uint8Array.from({ length: 28 }, (_, i) => i);
  const compound = (ddp: boolean) =>
    new XdrWriter()
      .opaque(new Uint8Array(0))
      .u32(1, 3)
      .u32(Nfs4Op.SEQUENCE)
      .bytes(seqArgs.done())
      .u32(Nfs4Op.PUTFH)
      .opaque(fh)
      .u32(Nfs4Op.WRITE)
      .bytes(new Uint8Array(16))
      .u64(8192n)
      .u32(2)
      .opaque(new Uint8Array(4096).fill(7), ddp)
      .done();
  test('an NFSv4 COMPOUND call: SEQUENCE, PUTFH, WRITE, its data inline or moved to a read chunk', () => {
    for (const ddp of [false, true]) {
      const b = emitRpcCall(0x11223344, { prog: 100003, vers: 4, proc: 1, credFlavor: 1 }, compound(ddp), new Uint8Array(20));
      const m = parseRpcMessage(view(b), 0, b.length, null, ddp);
      expect(m).toMatchObject({
        xid: 0x11223344,
        msgType: 0,
        call: { rpcvers: 2, prog: 100003, vers: 4, proc: 1, credFlavor: 1 },
        reply: null,
        length: b.length,
      });
      expect(m.compound).toEqual({ tag: '', minorversionOrStatus: 1, count: 3, ops: [53, 22, 38], statuses: [], args: ['', '', 'off 8192 len 4096'] });
      expect(m.compound?.ops.map(nfs4OpName)).toEqual(['SEQUENCE', 'PUTFH', 'WRITE']);
    }
  });
  test('an NFSv4 COMPOUND reply is read with its call; an NFSv3 name', () => {
    const res = new XdrWriter().u32(0).opaque(new Uint8Array(0)).u32(2, Nfs4Op.SEQUENCE, 0).bytes(new Uint8Array(36)).u32(Nfs4Op.PUTFH, 70).done();
    const b = emitRpcReply(9, { acceptStat: AcceptStat.SUCCESS }, res);
    const m = parseRpcMessage(view(b), 0, b.length, { prog: 100003, vers: 4, proc: 1 });
    expect(m).toMatchObject({ xid: 9, msgType: 1, reply: { replyStat: 0, acceptStat: 0 }, length: b.length });
    expect(m.compound).toEqual({ tag: '', minorversionOrStatus: 0, count: 2, ops: [53, 22], statuses: [0, 70], args: [] });
    expect(parseRpcMessage(view(b), 0, b.length).compound).toBeNull();
    expect(procedureName(100003, 3, 6)).toBe('READ');
  });
  test('denied and mismatched replies', () => {
    const pm = emitRpcReply(1, { acceptStat: AcceptStat.PROG_MISMATCH, low: 3, high: 4 });
    expect(parseRpcMessage(view(pm), 0, pm.length).reply).toMatchObject({ acceptStat: 2, low: 3, high: 4 });
    const auth = emitRpcReply(1, { replyStat: ReplyStat.MSG_DENIED, rejectStat: RejectStat.AUTH_ERROR, authStat: 5 });
    expect(parseRpcMessage(view(auth), 0, auth.length).reply).toMatchObject({ replyStat: 1, rejectStat: 1, authStat: 5, acceptStat: null });
  });
  test('bad msg_type, bad rpcvers, short: typed errors', () => {
    const b = emitRpcCall(1, { prog: 100003, vers: 3, proc: 6, credFlavor: 0 });
    expect(wireError(() => parseRpcMessage(view(b), 0, 20)).code).toBe('ROCE_ERR_TRUNCATED');
    const t = b.slice();
    t[7] = 5;
    expect(wireError(() => parseRpcMessage(view(t), 0, t.length))).toMatchObject({ code: 'ROCE_ERR_BAD_FIELD', offset: 4 });
    const v = b.slice();
    v[11] = 3;
    expect(wireError(() => parseRpcMessage(view(v), 0, v.length))).toMatchObject({ code: 'ROCE_ERR_BAD_FIELD', offset: 8 });
    const huge = new XdrWriter().u32(1, 0, 2, 100003, 3, 6, 1, 0x7fffffff).done();
    expect(wireError(() => parseRpcMessage(view(huge), 0, huge.length)).code).toBe('ROCE_ERR_BAD_LENGTH');
  });
});

describe('NFSv4 operations (nfs4-ops.ts)', () => {
  const call = (ops: XdrWriter, n: number) =>
    emitRpcCall(7, { prog: 100003, vers: 4, proc: 1, credFlavor: 0 }, new XdrWriter().opaque(new Uint8Array(0)).u32(2, n).bytes(ops.done()).done());
  const dv = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  test('key arguments of RENAME, COMMIT, OPEN (CLAIM_NULL) and SEEK; an op of unknown layout stops the reading', () => {
    const ops = new XdrWriter()
      .u32(29)
      .opaque(new TextEncoder().encode('a'))
      .opaque(new TextEncoder().encode('b'))
      .u32(5)
      .u64(4096n)
      .u32(512)
      .u32(18, 0, 2, 0)
      .u64(1n)
      .opaque(new Uint8Array(4))
      .u32(0, 0)
      .opaque(new TextEncoder().encode('f'))
      .u32(69)
      .bytes(new Uint8Array(16))
      .u64(8n)
      .u32(1)
      .u32(70);
    const b = call(ops, 6);
    const c = parseRpcMessage(dv(b), 0, b.length).compound;
    expect(c?.ops).toEqual([29, 5, 18, 69, 70]);
    expect(c?.args).toEqual(['"a" to "b"', 'off 4096 len 512', '"f"', 'off 8 hole', '']);
  });
  test('a truncated op is a WireError, not a crash', () => {
    const b = call(new XdrWriter().u32(15).u32(100), 1);
    expect(() => parseRpcMessage(dv(b), 0, b.length)).toThrow(WireError);
  });
});
