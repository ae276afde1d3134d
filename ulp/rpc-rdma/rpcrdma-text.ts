/**
 * RPC-over-RDMA frames in words: the summary line (`RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 credits
 * 128 write 1 chunk: NFSv4 Call COMPOUND SEQUENCE PUTFH READ`), the `-V` tree, and the `rpcrdma`
 * JSON object (docs/decode.md lists its keys).
 */
import type { RpcRdmaFrame, XidRef } from './rpcrdma-decoder';
import type { RpcRdmaHeader, RdmaSegment } from './rpcrdma-header';
import { RpcRdmaProc, errorCodeName, procName } from './rpcrdma-header';
import type { RpcMessage } from './rpc-message';
import { ReplyStat, acceptStatName, rejectStatName } from './rpc-message';
import { NFS_PROGRAM, nfs4OpName, procedureName, programName } from './nfs-names';
import { UlpName } from '../ulp-decoder';

const hex32 = (v: number): string => `0x${v.toString(16).padStart(8, '0')}`;
const hex64 = (v: bigint): string => `0x${v.toString(16).padStart(16, '0')}`;

/** `NFSv4 COMPOUND`, `NFSv3 READ`, `MOUNT v3 MNT`: a call's program, version and procedure. */
export function progWords(prog: number, vers: number, proc: number): string {
  const name = prog === NFS_PROGRAM ? `NFSv${vers}` : `${programName(prog)} v${vers}`;
  return `${name} ${procedureName(prog, vers, proc)}`;
}

/** `NFSv4 Call COMPOUND SEQUENCE PUTFH READ`, `NFSv3 Reply READ SUCCESS`. */
export function rpcWords(m: RpcMessage, of: XidRef | null): string {
  const ops = m.compound === null ? '' : ` ${m.compound.ops.map(nfs4OpName).join(' ')}${m.compound.ops.length < m.compound.count ? ' ...' : ''}`;
  if (m.call !== null) return `${progWords(m.call.prog, m.call.vers, m.call.proc)} Call${ops}`;
  const r = m.reply;
  const what = of?.call == null ? 'RPC' : progWords(of.call.prog, of.call.vers, of.call.proc);
  if (r === null) return `${what} Reply`;
  const stat =
    r.replyStat === ReplyStat.MSG_ACCEPTED
      ? acceptStatName(r.acceptStat ?? -1)
      : `${rejectStatName(r.rejectStat ?? -1)}${r.authStat === null ? '' : ` ${r.authStat}`}`;
  return `${what} Reply ${stat}${ops}`;
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

export function rpcRdmaWords(f: RpcRdmaFrame): string {
  const err = f.error === null ? '' : ` [RPC-over-RDMA ${f.error.code}: ${f.error.reason}]`;
  const pk = f.packets > 1 ? ` [${f.packets} packets]` : '';
  const rpc = f.rpc === null ? '' : `: ${rpcWords(f.rpc, f.of)}${f.rpcFrom === 'inline' ? '' : ` [from the ${f.rpcFrom}]`}`;
  switch (f.kind) {
    case 'cm-req':
      return 'RPC-over-RDMA CM REQ';
    case 'cm-rep':
      return 'RPC-over-RDMA CM REP';
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
            words: rpcWords(m, f.of),
          },
    of: f.of === null ? null : { xid: hex32(f.of.xid), chunk: f.of.chunk, call: f.of.call },
    handle: f.handle === null ? null : hex32(f.handle),
    packets: f.packets,
    length: f.length,
    error: f.error === null ? null : { code: f.error.code, reason: f.error.reason },
  };
  return `,"${UlpName.RpcRdma}":${j(o)}`;
}
