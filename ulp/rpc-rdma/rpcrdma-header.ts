/**
 * The RPC-over-RDMA version 1 transport header (RFC 8166 §4.2, XDR big-endian words), the start of
 * every RDMA SEND of the protocol:
 *
 *   0  xid       the RPC's transaction ID
 *   4  vers      1
 *   8  credits   the flow control value (credits requested or granted)
 *  12  proc      RDMA_MSG 0, RDMA_NOMSG 1, RDMA_MSGP 2 (RFC 5666; RFC 8166 no longer sends it),
 *                RDMA_DONE 3, RDMA_ERROR 4
 *  16  body: for MSG and NOMSG the three chunk lists; for MSGP align and threshold words, then the
 *      lists; for ERROR the error code (ERR_VERS 1: the lowest and highest version; ERR_CHUNK 2).
 *
 * The lists (§4.3): the read list is a chain of read segments, each `1 position handle length
 * offset64`, ended by `0`; the write list a chain of write chunks, each `1 count segment*count`,
 * ended by `0`; the reply chunk is optional: `1 count segment*count` or `0`. A segment is
 * `handle length offset64` (16 bytes). `parseRpcRdmaHeader` throws only `WireError`.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';

export const RPCRDMA_VERSION = 1;
/** The fixed words before the body. */
export const RPCRDMA_HEADER_LEN = 16;

export const RpcRdmaProc = {
  MSG: 0,
  NOMSG: 1,
  MSGP: 2,
  DONE: 3,
  ERROR: 4,
} as const;
export type RpcRdmaProc = (typeof RpcRdmaProc)[keyof typeof RpcRdmaProc];

export const RpcRdmaErrorCode = {
  ERR_VERS: 1,
  ERR_CHUNK: 2,
} as const;

const PROC_NAMES: readonly string[] = ['RDMA_MSG', 'RDMA_NOMSG', 'RDMA_MSGP', 'RDMA_DONE', 'RDMA_ERROR'];

/** `RDMA_MSG` ..., or `proc N` for a value RFC 8166 does not define. */
export function procName(proc: number): string {
  return PROC_NAMES[proc] ?? `proc ${proc}`;
}

export function errorCodeName(code: number): string {
  return code === RpcRdmaErrorCode.ERR_VERS ? 'ERR_VERS' : code === RpcRdmaErrorCode.ERR_CHUNK ? 'ERR_CHUNK' : `error ${code}`;
}

/** An RDMA segment: a registered memory region's handle (the R_key), length and offset (the address). */
export interface RdmaSegment {
  handle: number;
  length: number;
  offset: bigint;
}

/** A read segment: a segment and its position in the XDR stream of the RPC message. */
export interface ReadSegment extends RdmaSegment {
  position: number;
}

export interface RpcRdmaHeader {
  xid: number;
  vers: number;
  credits: number;
  proc: number;
  /** RDMA_MSGP's alignment and threshold (null for other procs). */
  align: number | null;
  threshold: number | null;
  readList: ReadSegment[];
  /** Each write chunk: its segments. */
  writeList: RdmaSegment[][];
  replyChunk: RdmaSegment[] | null;
  /** RDMA_ERROR's code, and ERR_VERS's lowest and highest version. */
  errorCode: number | null;
  versLow: number | null;
  versHigh: number | null;
  /** Bytes of the header: the RPC message of an RDMA_MSG or RDMA_MSGP starts here. */
  length: number;
}

/** Segments kept at most per list (RFC 8166 sets no limit; Linux sends at most a few dozen). */
export const MAX_SEGMENTS = 256;

const SEGMENT_LEN = 16;

function u32(view: DataView, off: number, end: number, what: string): number {
  need(end, off, 4, what);
  return view.getUint32(off);
}

function discriminator(view: DataView, off: number, end: number, what: string): boolean {
  const v = u32(view, off, end, what);
  if (v > 1) throw new WireError(WireErrorCode.BadField, off, `${what}: an XDR optional-data discriminator is 0 or 1, not ${v}`);
  return v === 1;
}

function segment(view: DataView, off: number, end: number, what: string): RdmaSegment {
  need(end, off, SEGMENT_LEN, what);
  return { handle: view.getUint32(off), length: view.getUint32(off + 4), offset: view.getBigUint64(off + 8) };
}

/** A write chunk (or the reply chunk) at `off`: its count and segments; returns it and the offset after it. */
function writeChunk(view: DataView, off: number, end: number, what: string): [RdmaSegment[], number] {
  const count = u32(view, off, end, `${what}'s segment count`);
  if (count > MAX_SEGMENTS) throw new WireError(WireErrorCode.BadLength, off, `${what} of ${count} segments (at most ${MAX_SEGMENTS} taken)`);
  need(end, off + 4, count * SEGMENT_LEN, `${what}'s ${count} segments`);
  const segs: RdmaSegment[] = [];
  let o = off + 4;
  for (let i = 0; i < count; i++, o += SEGMENT_LEN) segs.push(segment(view, o, end, what));
  return [segs, o];
}

/** The RPC-over-RDMA header at `off`, within `[off, end)`. */
export function parseRpcRdmaHeader(view: DataView, off: number, end: number): RpcRdmaHeader {
  need(end, off, RPCRDMA_HEADER_LEN, 'an RPC-over-RDMA header');
  const h: RpcRdmaHeader = {
    xid: view.getUint32(off),
    vers: view.getUint32(off + 4),
    credits: view.getUint32(off + 8),
    proc: view.getUint32(off + 12),
    align: null,
    threshold: null,
    readList: [],
    writeList: [],
    replyChunk: null,
    errorCode: null,
    versLow: null,
    versHigh: null,
    length: RPCRDMA_HEADER_LEN,
  };
  // RFC 8166 §4.2: a version other than 1 is not version 1's header; its body is not read.
  if (h.vers !== RPCRDMA_VERSION) throw new WireError(WireErrorCode.BadField, off + 4, `RPC-over-RDMA version ${h.vers}: only version 1 is read`);
  let o = off + RPCRDMA_HEADER_LEN;
  switch (h.proc) {
    case RpcRdmaProc.MSGP:
    case RpcRdmaProc.MSG:
    case RpcRdmaProc.NOMSG:
      if (h.proc === RpcRdmaProc.MSGP) {
        h.align = u32(view, o, end, "RDMA_MSGP's alignment");
        h.threshold = u32(view, o + 4, end, "RDMA_MSGP's threshold");
        o += 8;
      }
      while (discriminator(view, o, end, 'the read list')) {
        if (h.readList.length >= MAX_SEGMENTS) throw new WireError(WireErrorCode.BadLength, o, `a read list of more than ${MAX_SEGMENTS} segments`);
        const position = u32(view, o + 4, end, 'a read segment');
        h.readList.push({ position, ...segment(view, o + 8, end, 'a read segment') });
        o += 8 + SEGMENT_LEN;
      }
      o += 4;
      while (discriminator(view, o, end, 'the write list')) {
        if (h.writeList.length >= MAX_SEGMENTS) throw new WireError(WireErrorCode.BadLength, o, `a write list of more than ${MAX_SEGMENTS} chunks`);
        const [segs, next] = writeChunk(view, o + 4, end, 'a write chunk');
        h.writeList.push(segs);
        o = next;
      }
      o += 4;
      if (discriminator(view, o, end, 'the reply chunk')) {
        const [segs, next] = writeChunk(view, o + 4, end, 'the reply chunk');
        h.replyChunk = segs;
        o = next;
      } else o += 4;
      break;
    case RpcRdmaProc.DONE:
      break;
    case RpcRdmaProc.ERROR:
      h.errorCode = u32(view, o, end, "RDMA_ERROR's code");
      o += 4;
      if (h.errorCode === RpcRdmaErrorCode.ERR_VERS) {
        h.versLow = u32(view, o, end, "ERR_VERS's lowest version");
        h.versHigh = u32(view, o + 4, end, "ERR_VERS's highest version");
        o += 8;
      }
      break;
    default:
      throw new WireError(WireErrorCode.BadField, off + 12, `RPC-over-RDMA proc ${h.proc}: RFC 8166 defines 0 to 4`);
  }
  h.length = o - off;
  return h;
}

/** What `emitRpcRdmaHeader` takes: the header's fields, the rest at their defaults. */
export type RpcRdmaHeaderSpec = Pick<RpcRdmaHeader, 'xid' | 'credits' | 'proc'> & Partial<Omit<RpcRdmaHeader, 'length'>>;

/** The bytes of an RPC-over-RDMA header (the RPC message, if any, goes after them). */
export function emitRpcRdmaHeader(s: RpcRdmaHeaderSpec): Uint8Array {
  const words: number[] = [s.xid, s.vers ?? RPCRDMA_VERSION, s.credits, s.proc];
  const seg = (g: RdmaSegment): void => {
    words.push(g.handle, g.length, Number(g.offset >> 32n), Number(g.offset & 0xffffffffn));
  };
  if (s.proc === RpcRdmaProc.MSGP) words.push(s.align ?? 0, s.threshold ?? 0);
  if (s.proc === RpcRdmaProc.MSG || s.proc === RpcRdmaProc.NOMSG || s.proc === RpcRdmaProc.MSGP) {
    for (const r of s.readList ?? []) {
      words.push(1, r.position);
      seg(r);
    }
    words.push(0);
    for (const c of s.writeList ?? []) {
      words.push(1, c.length);
      c.forEach(seg);
    }
    words.push(0);
    if (s.replyChunk != null) {
      words.push(1, s.replyChunk.length);
      s.replyChunk.forEach(seg);
    } else words.push(0);
  } else if (s.proc === RpcRdmaProc.ERROR) {
    const code = s.errorCode ?? RpcRdmaErrorCode.ERR_CHUNK;
    words.push(code);
    if (code === RpcRdmaErrorCode.ERR_VERS) words.push(s.versLow ?? RPCRDMA_VERSION, s.versHigh ?? RPCRDMA_VERSION);
  } else if (s.proc !== RpcRdmaProc.DONE) throw new WireError(WireErrorCode.BadValue, 12, `RPC-over-RDMA proc ${s.proc}: RFC 8166 defines 0 to 4`);
  const out = new Uint8Array(words.length * 4);
  const view = new DataView(out.buffer);
  words.forEach((w, i) => {
    if (!Number.isInteger(w) || w < 0 || w > 0xffffffff) throw new WireError(WireErrorCode.BadValue, i * 4, `${w} is not an XDR unsigned int`);
    view.setUint32(i * 4, w);
  });
  return out;
}
