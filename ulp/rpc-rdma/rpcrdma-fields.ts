/**
 * The RPC-over-RDMA fields of `roce decode -Y` and `-T fields -e`, by Wireshark's names (tshark
 * 4.0's packet-rpcrdma.c, `rpcordma.*`, and packet-rpc.c / packet-nfs.c for the RPC behind:
 * `tshark -G fields`), with tshark's text: `rpcordma.xid` and `rpcordma.rdma_handle` as 0x and 8
 * digits, `rpcordma.rdma_offset` as 0x and 16, `rpc.xid` (BASE_HEX_DEC) as 0x and 8, the rest in
 * decimal. `rpcordma.reads_count` counts the read segments, `writes_count` the write chunks,
 * `reply_count` the reply chunk (0 or 1); `rdma_handle`, `rdma_length`, `rdma_offset` have one value
 * per segment, read list first, then the write list, then the reply chunk; `segment_count` one per
 * write chunk and reply chunk. A frame's values come from the decoder (`FieldFrame.ulp` =
 * `{ protocol: 'rpcrdma', frame }`). `rpc.programversion` of an NFS message has two values, as tshark
 * shows it (packet-nfs.c adds the field again in the NFS tree).
 */
import type { FieldDef, FieldFrame, FieldValue } from '../../packets/frame-fields';
import { UlpName } from '../ulp-decoder';
import type { RpcRdmaFrame } from './rpcrdma-decoder';
import type { RpcRdmaHeader, RdmaSegment } from './rpcrdma-header';
import { RpcRdmaProc } from './rpcrdma-header';
import type { RpcMessage } from './rpc-message';
import { NFS_PROGRAM } from './nfs-names';

/** What `FieldFrame.ulp` holds for a frame of an RPC-over-RDMA conversation. */
export interface RpcRdmaUlpFrame {
  readonly protocol: typeof UlpName.RpcRdma;
  readonly frame: RpcRdmaFrame;
}

const NONE: FieldValue[] = [];

function frameOf(f: FieldFrame): RpcRdmaFrame | null {
  const u = f.ulp;
  return u !== undefined && u !== null && u.protocol === UlpName.RpcRdma ? (u as RpcRdmaUlpFrame).frame : null;
}

const hexText =
  (bits: number) =>
  (v: FieldValue): string =>
    `0x${(v as bigint).toString(16).padStart(bits / 4, '0')}`;

type Num = number | bigint;

function uints(name: string, bits: number, hex: boolean, get: (f: RpcRdmaFrame) => readonly Num[] | Num | null | undefined): FieldDef {
  return {
    name,
    type: 'uint',
    bits,
    text: hex ? hexText(bits) : (v) => String(v),
    values: (ff) => {
      const f = frameOf(ff);
      const v = f === null ? null : get(f);
      if (v === null || v === undefined) return NONE;
      return typeof v === 'number' || typeof v === 'bigint' ? [BigInt(v)] : v.map((x) => BigInt(x));
    },
  };
}

const hdr = (f: RpcRdmaFrame): RpcRdmaHeader | null => f.header;
const hasLists = (h: RpcRdmaHeader | null): h is RpcRdmaHeader =>
  h !== null && (h.proc === RpcRdmaProc.MSG || h.proc === RpcRdmaProc.NOMSG || h.proc === RpcRdmaProc.MSGP);
function segments(h: RpcRdmaHeader): RdmaSegment[] {
  return [...h.readList, ...h.writeList.flat(), ...(h.replyChunk ?? [])];
}
const rpc = (f: RpcRdmaFrame): RpcMessage | null => f.rpc;
/** The call a message is or answers: its program, version and procedure. */
function callOf(f: RpcRdmaFrame): { prog: number; vers: number; proc: number } | null {
  const m = f.rpc;
  if (m === null) return null;
  if (m.call !== null) return m.call;
  return f.of?.call ?? null;
}

/** A COMPOUND reply's status, then each op's (tshark's order). */
function nfs4Statuses(m: RpcMessage | null): number[] | null {
  const c = m?.compound ?? null;
  return c === null || m?.reply == null ? null : [c.minorversionOrStatus, ...c.statuses];
}

const ALL: readonly FieldDef[] = [
  { name: 'rpcordma', type: 'proto', bits: 0, text: () => 'rpcordma', values: (f) => (frameOf(f)?.header != null ? [new Uint8Array(0)] : NONE) },
  uints('rpcordma.xid', 32, true, (f) => hdr(f)?.xid),
  uints('rpcordma.version', 32, false, (f) => hdr(f)?.vers),
  uints('rpcordma.flow_control', 32, false, (f) => hdr(f)?.credits),
  uints('rpcordma.msg_type', 32, false, (f) => hdr(f)?.proc),
  uints('rpcordma.rdma_align', 32, false, (f) => hdr(f)?.align),
  uints('rpcordma.rdma_thresh', 32, false, (f) => hdr(f)?.threshold),
  uints('rpcordma.reads_count', 32, false, (f) => {
    const h = hdr(f);
    return hasLists(h) ? h.readList.length : null;
  }),
  uints('rpcordma.writes_count', 32, false, (f) => {
    const h = hdr(f);
    return hasLists(h) ? h.writeList.length : null;
  }),
  uints('rpcordma.reply_count', 32, false, (f) => {
    const h = hdr(f);
    return hasLists(h) ? (h.replyChunk === null ? 0 : 1) : null;
  }),
  uints('rpcordma.position', 32, false, (f) => hdr(f)?.readList.map((r) => r.position)),
  uints('rpcordma.segment_count', 32, false, (f) => {
    const h = hdr(f);
    return h === null ? null : [...h.writeList.map((w) => w.length), ...(h.replyChunk === null ? [] : [h.replyChunk.length])];
  }),
  uints('rpcordma.rdma_handle', 32, true, (f) => {
    const h = hdr(f);
    return h === null ? null : segments(h).map((s) => s.handle);
  }),
  uints('rpcordma.rdma_length', 32, false, (f) => {
    const h = hdr(f);
    return h === null ? null : segments(h).map((s) => s.length);
  }),
  uints('rpcordma.rdma_offset', 64, true, (f) => {
    const h = hdr(f);
    return h === null ? null : segments(h).map((s) => s.offset);
  }),
  uints('rpcordma.errcode', 32, false, (f) => hdr(f)?.errorCode),
  uints('rpcordma.vers_low', 32, false, (f) => hdr(f)?.versLow),
  uints('rpcordma.vers_high', 32, false, (f) => hdr(f)?.versHigh),
  uints('rpc.xid', 32, true, (f) => rpc(f)?.xid),
  uints('rpc.msgtyp', 32, false, (f) => rpc(f)?.msgType),
  uints('rpc.version', 32, false, (f) => rpc(f)?.call?.rpcvers),
  uints('rpc.program', 32, false, (f) => callOf(f)?.prog),
  // packet-nfs.c repeats the version in the NFS tree under the same field: tshark prints it twice.
  uints('rpc.programversion', 32, false, (f) => {
    const c = callOf(f);
    return c === null ? null : c.prog === NFS_PROGRAM ? [c.vers, c.vers] : c.vers;
  }),
  uints('rpc.procedure', 32, false, (f) => callOf(f)?.proc),
  uints('rpc.replystat', 32, false, (f) => rpc(f)?.reply?.replyStat),
  uints('rpc.state_accept', 32, false, (f) => rpc(f)?.reply?.acceptStat),
  uints('nfs.opcode', 32, false, (f) => {
    const c = callOf(f);
    return c !== null && c.prog === NFS_PROGRAM ? rpc(f)?.compound?.ops : null;
  }),
  uints('nfs.status3', 32, false, (f) => rpc(f)?.nfs3Status),
  uints('nfs.nfsstat4', 32, false, (f) => nfs4Statuses(rpc(f))),
  // packet-nfs.c adds every NFS status under nfs.status too: NFSv3's, and a COMPOUND's with each op's.
  uints('nfs.status', 32, false, (f) => {
    const m = rpc(f);
    return m?.nfs3Status ?? nfs4Statuses(m);
  }),
];

const BY_NAME: ReadonlyMap<string, FieldDef> = new Map(ALL.map((d) => [d.name, d]));

export function rpcRdmaField(name: string): FieldDef | undefined {
  return BY_NAME.get(name);
}

export function rpcRdmaFieldNames(): string[] {
  return ALL.map((d) => d.name);
}
