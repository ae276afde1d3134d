/**
 * The ONC RPC message behind an RPC-over-RDMA header (RFC 5531 §9): a call's xid, rpcvers,
 * program, version and procedure (credential and verifier skipped), a reply's accept or reject
 * status, an NFSv3 reply's nfsstat3, and for NFSv4 COMPOUND (RFC 8881 §16.2) the operations it
 * names: a call's ops with their key arguments, a reply's with each op's status (nfs4-ops.ts reads
 * each op's arguments and results). A data item moved to a chunk
 * (RFC 8166 §3.4: "Direct Data Placement") keeps its length word in the XDR stream but not its
 * bytes: `ddp` says the opaque data of a WRITE call or a READ reply is not inline.
 * `parseRpcMessage` throws only `WireError`; `emitRpcCall` and `emitRpcReply` build the bytes.
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import { NFS_PROGRAM, NFS4_COMPOUND } from './nfs-names';
import { XdrReader } from './xdr-reader';
import { readNfs4Args, readNfs4Result } from './nfs4-ops';

export const RpcMsgType = { CALL: 0, REPLY: 1 } as const;
export const ReplyStat = { MSG_ACCEPTED: 0, MSG_DENIED: 1 } as const;
export const AcceptStat = { SUCCESS: 0, PROG_UNAVAIL: 1, PROG_MISMATCH: 2, PROC_UNAVAIL: 3, GARBAGE_ARGS: 4, SYSTEM_ERR: 5 } as const;
export const RejectStat = { RPC_MISMATCH: 0, AUTH_ERROR: 1 } as const;

const ACCEPT_NAMES = ['SUCCESS', 'PROG_UNAVAIL', 'PROG_MISMATCH', 'PROC_UNAVAIL', 'GARBAGE_ARGS', 'SYSTEM_ERR'];
export function acceptStatName(s: number): string {
  return ACCEPT_NAMES[s] ?? `accept_stat ${s}`;
}
export function rejectStatName(s: number): string {
  return s === 0 ? 'RPC_MISMATCH' : s === 1 ? 'AUTH_ERROR' : `reject_stat ${s}`;
}

/** The RPC program a reply answers (from its call), for reading the results. */
export interface CallOf {
  prog: number;
  vers: number;
  proc: number;
}

export interface RpcCall {
  rpcvers: number;
  prog: number;
  vers: number;
  proc: number;
  credFlavor: number;
}

export interface RpcReply {
  replyStat: number;
  /** MSG_ACCEPTED's accept_stat, MSG_DENIED's reject_stat. */
  acceptStat: number | null;
  rejectStat: number | null;
  /** PROG_MISMATCH's or RPC_MISMATCH's lowest and highest versions; AUTH_ERROR's auth_stat. */
  low: number | null;
  high: number | null;
  authStat: number | null;
}

/** An NFSv4 COMPOUND's operations (call) or results (reply). */
export interface Nfs4Compound {
  tag: string;
  /** The call's minorversion; the reply's nfsstat4. */
  minorversionOrStatus: number;
  /** The count the message gives. */
  count: number;
  /** The op numbers read (all `count` unless an op of unknown size stopped the reading). */
  ops: number[];
  /** A reply's per-op status, beside `ops`. */
  statuses: number[];
  /** A call's key arguments per op, beside `ops` (nfs4-ops.ts: `"name"`, `off 0 len 4096`; '' for none shown). */
  args: string[];
}

export interface RpcMessage {
  xid: number;
  msgType: number;
  call: RpcCall | null;
  reply: RpcReply | null;
  compound: Nfs4Compound | null;
  /** An NFSv3 reply's nfsstat3 (RFC 1813), when its call was NFSv3 and the reply accepted. */
  nfs3Status: number | null;
  /** Bytes of the message. */
  length: number;
}

const MAX_OPS = 1024;

/** The RPC message at `off` within `[off, end)`; `of` is the call a reply answers (for its NFSv4 results). */
export function parseRpcMessage(view: DataView, off: number, end: number, of: CallOf | null = null, ddp = false): RpcMessage {
  const r = new XdrReader(view, off, end);
  const xid = r.u32('an RPC xid');
  const msgType = r.u32('an RPC msg_type');
  const m: RpcMessage = { xid, msgType, call: null, reply: null, compound: null, nfs3Status: null, length: 0 };
  if (msgType === RpcMsgType.CALL) {
    const rpcvers = r.u32('an RPC call');
    if (rpcvers !== 2) throw new WireError(WireErrorCode.BadField, r.o - 4, `RPC version ${rpcvers}: RFC 5531 is version 2`);
    const prog = r.u32('an RPC call');
    const vers = r.u32('an RPC call');
    const proc = r.u32('an RPC call');
    const credFlavor = r.u32("an RPC call's credential");
    r.opaque("an RPC call's credential");
    r.u32("an RPC call's verifier");
    r.opaque("an RPC call's verifier");
    m.call = { rpcvers, prog, vers, proc, credFlavor };
    if (prog === NFS_PROGRAM && vers === 4 && proc === NFS4_COMPOUND) m.compound = compoundCall(r, ddp);
  } else if (msgType === RpcMsgType.REPLY) {
    const replyStat = r.u32('an RPC reply');
    const rep: RpcReply = { replyStat, acceptStat: null, rejectStat: null, low: null, high: null, authStat: null };
    m.reply = rep;
    if (replyStat === ReplyStat.MSG_ACCEPTED) {
      r.u32("an RPC reply's verifier");
      r.opaque("an RPC reply's verifier");
      rep.acceptStat = r.u32('an RPC accept_stat');
      if (rep.acceptStat === AcceptStat.PROG_MISMATCH) {
        rep.low = r.u32('PROG_MISMATCH');
        rep.high = r.u32('PROG_MISMATCH');
      }
      if (rep.acceptStat === AcceptStat.SUCCESS && of !== null && of.prog === NFS_PROGRAM && of.vers === 4 && of.proc === NFS4_COMPOUND)
        m.compound = compoundReply(r, ddp);
      // Every NFSv3 procedure's results but NULL's start with an nfsstat3 (RFC 1813 §3.3).
      else if (rep.acceptStat === AcceptStat.SUCCESS && of !== null && of.prog === NFS_PROGRAM && of.vers === 3 && of.proc !== 0)
        m.nfs3Status = r.u32('an NFSv3 status');
    } else if (replyStat === ReplyStat.MSG_DENIED) {
      rep.rejectStat = r.u32('an RPC reject_stat');
      if (rep.rejectStat === RejectStat.RPC_MISMATCH) {
        rep.low = r.u32('RPC_MISMATCH');
        rep.high = r.u32('RPC_MISMATCH');
      } else if (rep.rejectStat === RejectStat.AUTH_ERROR) rep.authStat = r.u32('AUTH_ERROR');
    } else throw new WireError(WireErrorCode.BadField, r.o - 4, `RPC reply_stat ${replyStat}: 0 or 1`);
  } else throw new WireError(WireErrorCode.BadField, off + 4, `RPC msg_type ${msgType}: 0 (CALL) or 1 (REPLY)`);
  m.length = r.o - off;
  return m;
}

function tag(r: XdrReader): string {
  return r.text("a COMPOUND's tag");
}

function compoundCall(r: XdrReader, ddp: boolean): Nfs4Compound {
  const c: Nfs4Compound = {
    tag: tag(r),
    minorversionOrStatus: r.u32('COMPOUND minorversion'),
    count: r.u32('COMPOUND argarray'),
    ops: [],
    statuses: [],
    args: [],
  };
  if (c.count > MAX_OPS) throw new WireError(WireErrorCode.BadLength, r.o - 4, `a COMPOUND of ${c.count} operations`);
  for (let i = 0; i < c.count && r.o < r.end; i++) {
    const op = r.u32('a COMPOUND operation');
    c.ops.push(op);
    const args = readNfs4Args(r, op, ddp);
    c.args.push(args ?? '');
    if (args === null) return c;
  }
  return c;
}

function compoundReply(r: XdrReader, ddp: boolean): Nfs4Compound {
  const c: Nfs4Compound = { minorversionOrStatus: r.u32('COMPOUND status'), tag: tag(r), count: r.u32('COMPOUND resarray'), ops: [], statuses: [], args: [] };
  if (c.count > MAX_OPS) throw new WireError(WireErrorCode.BadLength, r.o - 4, `a COMPOUND of ${c.count} results`);
  for (let i = 0; i < c.count && r.o < r.end; i++) {
    const op = r.u32('a COMPOUND result');
    const status = r.u32('a COMPOUND result');
    c.ops.push(op);
    c.statuses.push(status);
    if (!readNfs4Result(r, op, status, ddp)) return c;
  }
  return c;
}

/** XDR words and opaques, for the emitters. */
export class XdrWriter {
  private readonly parts: number[] = [];
  u32(...vs: number[]): this {
    for (const v of vs) {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new WireError(WireErrorCode.BadValue, this.parts.length, `${v} is not an XDR unsigned int`);
      this.parts.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
    }
    return this;
  }
  u64(v: bigint): this {
    return this.u32(Number(v >> 32n), Number(v & 0xffffffffn));
  }
  bytes(b: Uint8Array): this {
    for (const x of b) this.parts.push(x);
    return this;
  }
  /** opaque<>: its length, its bytes (none with `moved`: they travel in a chunk), padding. */
  opaque(b: Uint8Array, moved = false): this {
    this.u32(b.length);
    if (moved) return this;
    this.bytes(b);
    while (this.parts.length % 4 !== 0) this.parts.push(0);
    return this;
  }
  get length(): number {
    return this.parts.length;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

/** AUTH_NONE (0) and AUTH_SYS (1) credentials; the verifier is AUTH_NONE. */
export function emitRpcCall(
  xid: number,
  call: Omit<RpcCall, 'rpcvers'>,
  args: Uint8Array = new Uint8Array(0),
  cred: Uint8Array = new Uint8Array(0),
): Uint8Array {
  return new XdrWriter()
    .u32(xid, RpcMsgType.CALL, 2, call.prog, call.vers, call.proc, call.credFlavor)
    .opaque(cred)
    .u32(0)
    .opaque(new Uint8Array(0))
    .bytes(args)
    .done();
}

export function emitRpcReply(xid: number, rep: Partial<RpcReply>, results: Uint8Array = new Uint8Array(0)): Uint8Array {
  const w = new XdrWriter().u32(xid, RpcMsgType.REPLY, rep.replyStat ?? ReplyStat.MSG_ACCEPTED);
  if ((rep.replyStat ?? 0) === ReplyStat.MSG_ACCEPTED) {
    w.u32(0)
      .opaque(new Uint8Array(0))
      .u32(rep.acceptStat ?? AcceptStat.SUCCESS);
    if (rep.acceptStat === AcceptStat.PROG_MISMATCH) w.u32(rep.low ?? 0, rep.high ?? 0);
  } else {
    w.u32(rep.rejectStat ?? RejectStat.AUTH_ERROR);
    if (rep.rejectStat === RejectStat.RPC_MISMATCH) w.u32(rep.low ?? 2, rep.high ?? 2);
    else w.u32(rep.authStat ?? 1);
  }
  return w.bytes(results).done();
}
