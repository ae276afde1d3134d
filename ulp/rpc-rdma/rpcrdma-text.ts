/**
 * RPC-over-RDMA frames in words: the summary line (`RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 credits
 * 128 write 1 chunk: NFSv4 Call COMPOUND SEQUENCE PUTFH READ`), the `-V` tree, and the `rpcrdma`
 * JSON object (docs/decode.md lists its keys).
 */
import type { RpcRdmaFrame, XidRef } from './rpcrdma-decoder';
import type { RpcRdmaHeader, RdmaSegment } from './rpcrdma-header';
import { RpcRdmaProc, errorCodeName, procName } from './rpcrdma-header';
import type { Nfs4Compound, RpcMessage } from './rpc-message';
import { nfs3StatusWord, nfs4StatusWord } from './nfs-status';
import { ReplyStat, acceptStatName, rejectStatName } from './rpc-message';
import { NFS_PROGRAM, nfs4OpName, procedureName, programName } from './nfs-names';
import { UlpName } from '../ulp-decoder';
import { RPCRDMA_CM_FORMAT_ID, type RpcRdmaCmPrivateData } from './cm-private-data';

const hex32 = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;
const hex64 = (v: bigint): string => `0x${v.toString(16).padStart(16, '0')}`;

/** `NFSv4 COMPOUND`, `NFSv3 READ`, `MOUNT v3 MNT`: a call's program, version and procedure. */
export function progWords(prog: number, vers: number, proc: number): string {
  const name = prog === NFS_PROGRAM ? `NFSv${vers}` : `${programName(prog)} v${vers}`;
  return `${name} ${procedureName(prog, vers, proc)}`;
}

/** A COMPOUND's ops by name, ` ...` when some were not read; in a reply, the op that failed with its status (`REMOVE: NFS4ERR_NOENT`). */
function opWords(c: Nfs4Compound): string {
  const names = c.ops.map((op, i) => {
    const st = c.statuses[i] ?? 0;
    return st === 0 ? nfs4OpName(op) : `${nfs4OpName(op)}: ${nfs4StatusWord(st)}`;
  });
  return ` ${names.join(' ')}${c.ops.length < c.count ? ' ...' : ''}`;
}

/** `NFSv4 COMPOUND Call SEQUENCE PUTFH READ`, `NFSv3 READ Reply SUCCESS NFS3_OK`. */
export function rpcWords(m: RpcMessage, of: XidRef | null): string {
  const ops = m.compound === null ? '' : opWords(m.compound);
  if (m.call !== null) return `${progWords(m.call.prog, m.call.vers, m.call.proc)} Call${ops}`;
  const r = m.reply;
  const what = of?.call == null ? 'RPC' : progWords(of.call.prog, of.call.vers, of.call.proc);
  if (r === null) return `${what} Reply`;
  const stat =
    r.replyStat === ReplyStat.MSG_ACCEPTED
      ? acceptStatName(r.acceptStat ?? -1)
      : `${rejectStatName(r.rejectStat ?? -1)}${r.authStat === null ? '' : ` ${r.authStat}`}`;
  const nfs3 = m.nfs3Status === null ? '' : ` ${nfs3StatusWord(m.nfs3Status)}`;
  return `${what} Reply ${stat}${nfs3}${ops}`;
}

/** The -V lines of a COMPOUND: one per op, with its key arguments (call) or status (reply). */
function compoundLines(c: Nfs4Compound, reply: boolean): [number, string][] {
  const out: [number, string][] = [
    [2, reply ? `Status: ${nfs4StatusWord(c.minorversionOrStatus)} (${c.minorversionOrStatus})` : `Minor version: ${c.minorversionOrStatus}`],
  ];
  if (c.tag !== '') out.push([2, `Tag: ${JSON.stringify(c.tag)}`]);
  out.push([2, `Operations (count: ${c.count}${c.ops.length < c.count ? `, ${c.ops.length} read` : ''})`]);
  c.ops.forEach((op, i) => {
    const detail = reply ? ` ${nfs4StatusWord(c.statuses[i] ?? 0)}` : c.args[i] ? ` ${c.args[i]}` : '';
    out.push([3, `Opcode: ${nfs4OpName(op)} (${op})${detail}`]);
  });
  return out;
}

function headerWords(h: RpcRdmaHeader): string {
  const parts = [`${procName(h.proc)} xid ${hex32(h.xid)} credits ${h.credits}`];
  if (h.readList.length > 0) parts.push(`read ${h.readList.length} seg`);
  if (h.writeList.length > 0) parts.push(`write ${h.writeList.length} chunk`);
  if (h.replyChunk !== null) parts.push(`reply chunk ${h.replyChunk.reduce((n, s) => n + s.length, 0)} B`);
  if (h.errorCode !== null) parts.push(errorCodeName(h.errorCode) + (h.versLow === null ? '' : ` ${h.versLow}-${h.versHigh}`));
  return parts.join(' ');
}

function ofWords(of: XidRef): string {
  return `xid ${hex32(of.xid)}${of.chunk === null ? '' : ` ${of.chunk} chunk`}${of.call === null ? '' : ` (${progWords(of.call.prog, of.call.vers, of.call.proc)})`}`;
}

/** ` inline send 4096 receive 4096 remote-invalidate`: an RFC 8797 record in words. */
function cmWords(p: RpcRdmaCmPrivateData | null): string {
  return p === null ? '' : ` inline send ${p.sendSize} receive ${p.receiveSize}${p.remoteInvalidate ? ' remote-invalidate' : ''}`;
}

function cmLines(title: string, p: RpcRdmaCmPrivateData): [number, string][] {
  return [
    [1, title],
    [2, `Format identifier: 0x${RPCRDMA_CM_FORMAT_ID.toString(16)}`],
    [2, `Version: ${p.version}`],
    [2, `Flags: 0x${p.flags.toString(16).padStart(2, '0')}${p.remoteInvalidate ? ' (Remote Invalidation)' : ''}`],
    [2, `Send size: ${p.sendSize}`],
    [2, `Receive size: ${p.receiveSize}`],
  ];
}

function fromWords(from: RpcRdmaFrame['rpcFrom']): string {
  if (from === 'inline' || from === null) return '';
  return from === 'reassembled' ? ' [with its read chunk data]' : ` [from the ${from}]`;
}

export function rpcRdmaWords(f: RpcRdmaFrame): string {
  const err = f.error === null ? '' : ` [RPC-over-RDMA ${f.error.code}: ${f.error.reason}]`;
  const pk = f.packets > 1 ? ` [${f.packets} packets]` : '';
  const rpc = f.rpc === null ? '' : `: ${rpcWords(f.rpc, f.of)}${fromWords(f.rpcFrom)}`;
  switch (f.kind) {
    case 'cm-req':
      return `RPC-over-RDMA CM REQ${cmWords(f.cm)}${err}`;
    case 'cm-rep':
      return `RPC-over-RDMA CM REP${cmWords(f.cm)}${err}`;
    case 'message':
      return f.header === null ? `RPC-over-RDMA message${pk}${err}` : `RPC-over-RDMA ${headerWords(f.header)}${rpc}${pk}${err}`;
    case 'fragment':
      return `RPC-over-RDMA fragment ${f.length} B${pk}${err}`;
    case 'read-request':
      return `RPC-over-RDMA READ of handle ${hex32(f.handle ?? 0)}${f.of === null ? '' : ` ${ofWords(f.of)}`}`;
    case 'data':
      return `RPC-over-RDMA data ${f.length} B${f.handle === null ? '' : ` handle ${hex32(f.handle)}`}${f.of === null ? '' : ` ${ofWords(f.of)}`}${rpc}${err}`;
  }
}

function segmentLine(s: RdmaSegment): string {
  return `handle ${hex32(s.handle)} length ${s.length} offset ${hex64(s.offset)}`;
}

export function rpcRdmaTreeLines(f: RpcRdmaFrame): [number, string][] {
  const out: [number, string][] = [[0, 'RPC over RDMA']];
  if (f.cm !== null) out.push(...cmLines('CM private data (RFC 8797)', f.cm));
  if (f.cmReq !== null) out.push(...cmLines("The REQ's CM private data (RFC 8797)", f.cmReq));
  const h = f.header;
  if (h !== null) {
    out.push([1, `XID: ${hex32(h.xid)}`], [1, `Version: ${h.vers}`], [1, `Flow Control: ${h.credits}`], [1, `Message Type: ${procName(h.proc)} (${h.proc})`]);
    if (h.align !== null) out.push([1, `RDMA align: ${h.align}`], [1, `RDMA threshold: ${h.threshold}`]);
    if (h.proc === RpcRdmaProc.MSG || h.proc === RpcRdmaProc.NOMSG || h.proc === RpcRdmaProc.MSGP) {
      out.push([1, `Read list (count: ${h.readList.length})`]);
      for (const r of h.readList) out.push([2, `Read segment: position ${r.position} ${segmentLine(r)}`]);
      out.push([1, `Write list (count: ${h.writeList.length})`]);
      h.writeList.forEach((w, i) => {
        out.push([2, `Write chunk ${i + 1} (segments: ${w.length})`]);
        for (const s of w) out.push([3, segmentLine(s)]);
      });
      out.push([1, `Reply chunk (count: ${h.replyChunk === null ? 0 : 1})`]);
      for (const s of h.replyChunk ?? []) out.push([2, segmentLine(s)]);
    }
    if (h.errorCode !== null) out.push([1, `Error code: ${errorCodeName(h.errorCode)} (${h.errorCode})`]);
    if (h.versLow !== null) out.push([1, `Version low: ${h.versLow}`], [1, `Version high: ${h.versHigh}`]);
  }
  if (f.handle !== null) out.push([1, `RDMA handle: ${hex32(f.handle)}`]);
  if (f.of !== null) out.push([1, `Of: ${ofWords(f.of)}`]);
  const m = f.rpc;
  if (m !== null) {
    out.push([1, `RPC ${m.msgType === 0 ? 'Call' : 'Reply'} (${f.rpcFrom ?? 'inline'}): xid ${hex32(m.xid)}`]);
    out.push([2, rpcWords(m, f.of)]);
    if (m.nfs3Status !== null) out.push([2, `Status: ${nfs3StatusWord(m.nfs3Status)} (${m.nfs3Status})`]);
    if (m.compound !== null) out.push(...compoundLines(m.compound, m.reply !== null));
  }
  if (f.error !== null) out.push([1, `Error: ${f.error.code}: ${f.error.reason}`]);
  return out;
}

const j = (v: unknown): string => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? hex64(x) : x));

export function rpcRdmaJsonMember(f: RpcRdmaFrame): string {
  const h = f.header;
  const m = f.rpc;
  const o = {
    kind: f.kind,
    direction: f.direction,
    header:
      h === null
        ? null
        : {
            xid: hex32(h.xid),
            vers: h.vers,
            credits: h.credits,
            proc: procName(h.proc),
            readList: h.readList.map((r) => ({ position: r.position, handle: hex32(r.handle), length: r.length, offset: r.offset })),
            writeList: h.writeList.map((w) => w.map((s) => ({ handle: hex32(s.handle), length: s.length, offset: s.offset }))),
            replyChunk: h.replyChunk?.map((s) => ({ handle: hex32(s.handle), length: s.length, offset: s.offset })) ?? null,
            ...(h.align === null ? {} : { align: h.align, threshold: h.threshold }),
            ...(h.errorCode === null ? {} : { error: errorCodeName(h.errorCode), versLow: h.versLow, versHigh: h.versHigh }),
          },
    rpc:
      m === null
        ? null
        : {
            xid: hex32(m.xid),
            type: m.msgType === 0 ? 'call' : 'reply',
            from: f.rpcFrom,
            call: m.call,
            reply: m.reply,
            nfs4Ops: m.compound?.ops.map(nfs4OpName) ?? null,
            nfs4Args: m.compound === null || m.reply !== null ? null : m.compound.args,
            nfs4Status: m.compound === null || m.reply === null ? null : nfs4StatusWord(m.compound.minorversionOrStatus),
            nfs4OpStatus: m.compound === null || m.reply === null ? null : m.compound.statuses.map(nfs4StatusWord),
            nfs3Status: m.nfs3Status === null ? null : nfs3StatusWord(m.nfs3Status),
            words: rpcWords(m, f.of),
          },
    of: f.of === null ? null : { xid: hex32(f.of.xid), chunk: f.of.chunk, call: f.of.call },
    handle: f.handle === null ? null : hex32(f.handle),
    ...(f.cm === null ? {} : { cm: f.cm }),
    ...(f.cmReq === null ? {} : { cmReq: f.cmReq }),
    packets: f.packets,
    length: f.length,
    error: f.error === null ? null : { code: f.error.code, reason: f.error.reason },
  };
  return `,"${UlpName.RpcRdma}":${j(o)}`;
}
