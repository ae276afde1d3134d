/**
 * `roce analyze`'s view of RPC-over-RDMA (RFC 8166): each RPC from its call to its reply, per
 * connection, through the request analysis every protocol shares (ulp/exchange-analysis.ts).
 *
 * It takes what the RPC-over-RDMA decoder (rpcrdma-decoder.ts) made of each frame, in capture
 * order, with the frame's number, time, opcode and PSN, and keeps per call (by xid): its program,
 * version and procedure (for an NFSv4 COMPOUND, its operations), where its RPC message travelled
 * (inline, or in a position-zero read chunk), when its reply came and what it said, and the RDMA
 * transfers its chunks caused (the server's READ requests of its read chunks, its WRITEs into the
 * write list or the reply chunk; packets, bytes, those sent again). A reply is an error when the
 * RPC was denied or not accepted with SUCCESS (RFC 5531 §9), when an NFSv4 COMPOUND's status is not
 * NFS4_OK (RFC 8881 §16.2.3), or when the server answered RDMA_ERROR (RFC 8166 §4.5). Per
 * connection it reports the latency from call to reply (percentiles and a histogram), the calls
 * never answered and the errors, named, and the credits: each side's last credit value, and the
 * most calls outstanding at once against the server's grant (RFC 8166 §3.3.1: a requester has no
 * more calls outstanding than the responder granted). An NFSv3 reply whose nfsstat3 is not NFS3_OK
 * (RFC 1813 §2.6) is an error too, named.
 */
import type { RpcRdmaFrame } from './rpcrdma-decoder';
import { RpcRdmaProc, errorCodeName, procName } from './rpcrdma-header';
import { ReplyStat, acceptStatName, rejectStatName, type RpcMessage } from './rpc-message';
import { nfs4OpName } from './nfs-names';
import { RPCRDMA_DEFAULT_INLINE, type RpcRdmaCmPrivateData } from './cm-private-data';
import { nfs3StatusName, nfs4StatusName, nfs4StatusWord } from './nfs-status';
import { progWords } from './rpcrdma-text';
import { type ExchangeAt, ExchangeAnalysis, type ExchangeReport } from '../exchange-analysis';

/** A connection's RPCs (each record's key is its xid, `0x8a9b0001`; `via`: `inline` or `read-chunk` for a call, `inline`, `reply-chunk` or `none` for a reply). */
export interface RpcConversationReport extends ExchangeReport {
  credits: {
    /** The last credit value the client asked for and the server granted (RFC 8166 §3.3.1), null when not seen. */
    requested: number | null;
    granted: number | null;
    /** Calls made while as many as the server had granted were already outstanding. */
    overGrant: number;
  };
  /**
   * The inline thresholds the CM exchange set (RFC 8797: each side's send and receive sizes, 1024
   * for a side that sent no record, RFC 8166 §3.3.2), and the messages longer than their receiver's
   * receive size (a sender moves what does not fit to chunks: RFC 8166 §3.3.3). Null when the
   * connection's CM exchange was not captured.
   */
  inline: InlineReport | null;
}

export interface InlineReport {
  client: { send: number; receive: number; remoteInvalidate: boolean; sentRecord: boolean };
  server: { send: number; receive: number; remoteInvalidate: boolean; sentRecord: boolean };
  /** SEND messages longer than the receiving side's receive threshold. */
  overInline: number;
}

export interface RpcRdmaAnalysis {
  conversations: RpcConversationReport[];
}

export { nfs4StatusName } from './nfs-status';

export const xidKey = (xid: number): string => `0x${xid.toString(16).padStart(8, '0')}`;

function callName(m: RpcMessage | null): string {
  if (m === null || m.call === null) return 'RPC';
  const ops = m.compound === null ? '' : ` ${m.compound.ops.map(nfs4OpName).join(' ')}${m.compound.ops.length < m.compound.count ? ' ...' : ''}`;
  return `${progWords(m.call.prog, m.call.vers, m.call.proc)}${ops}`;
}

/** A reply's status and whether it is an error. */
function replyStatus(m: RpcMessage | null): { status: string; error: boolean } {
  const r = m?.reply ?? null;
  if (r === null) return { status: 'reply not read', error: false };
  if (r.replyStat !== ReplyStat.MSG_ACCEPTED) return { status: `MSG_DENIED ${rejectStatName(r.rejectStat ?? -1)}`, error: true };
  if (r.acceptStat !== 0) return { status: acceptStatName(r.acceptStat ?? -1), error: true };
  const c = m?.compound ?? null;
  if (c !== null && c.minorversionOrStatus !== 0) {
    // The op that failed: a COMPOUND stops at its first failing op (RFC 8881 §16.2.3).
    const i = c.statuses.findIndex((s) => s !== 0);
    const op = c.ops[i];
    return { status: `${nfs4StatusName(c.minorversionOrStatus)}${op === undefined ? '' : ` in ${nfs4OpName(op)}`}`, error: true };
  }
  const s3 = m?.nfs3Status ?? null;
  if (s3 !== null) return { status: s3 === 0 ? 'NFS3_OK' : nfs3StatusName(s3), error: s3 !== 0 };
  return { status: c === null ? 'SUCCESS' : nfs4StatusWord(0), error: false };
}

export class RpcCallAnalysis {
  private readonly x = new ExchangeAnalysis();
  private readonly credits = new Map<string, RpcConversationReport['credits']>();
  private readonly inline = new Map<string, InlineReport>();

  /** Takes the decoder's view of the next frame of the capture. */
  take(f: RpcRdmaFrame, at: ExchangeAt): void {
    const conn = f.conversation;
    if (conn === null) return;
    let k = this.credits.get(conn);
    if (k === undefined) {
      k = { requested: null, granted: null, overGrant: 0 };
      this.credits.set(conn, k);
    }
    if (f.kind === 'cm-rep') {
      const side = (p: RpcRdmaCmPrivateData | null) => ({
        send: p?.sendSize ?? RPCRDMA_DEFAULT_INLINE,
        receive: p?.receiveSize ?? RPCRDMA_DEFAULT_INLINE,
        remoteInvalidate: p?.remoteInvalidate ?? false,
        sentRecord: p !== null,
      });
      this.inline.set(conn, { client: side(f.cmReq), server: side(f.cm), overInline: 0 });
      return;
    }
    const inl = this.inline.get(conn);
    if (inl !== undefined && f.kind === 'message' && f.length > (f.direction === 'to-server' ? inl.server.receive : inl.client.receive)) inl.overInline++;
    if (f.kind === 'message' && f.header !== null) {
      const h = f.header;
      const key = xidKey(h.xid);
      if (f.direction === 'to-server') {
        k.requested = h.credits;
        if (h.proc === RpcRdmaProc.DONE || h.proc === RpcRdmaProc.ERROR) return;
        if (k.granted !== null && this.x.outstanding(conn) >= k.granted) k.overGrant++;
        const via = f.rpcFrom === 'inline' && f.rpc !== null ? 'inline' : h.proc === RpcRdmaProc.NOMSG ? 'read-chunk' : undefined;
        this.x.take({ kind: 'request', conn, key, name: callName(f.rpc), sendBytes: f.length, ...(via === undefined ? {} : { via }) }, at);
        return;
      }
      k.granted = h.credits;
      const st = h.proc === RpcRdmaProc.ERROR ? { status: `${procName(h.proc)} ${errorCodeName(h.errorCode ?? -1)}`, error: true } : replyStatus(f.rpc);
      const via = f.rpcFrom === 'reply-chunk' ? 'reply-chunk' : f.rpc !== null ? 'inline' : 'none';
      this.x.take({ kind: 'response', conn, key, ...st, sendBytes: f.length, via }, at);
      return;
    }
    if (f.kind !== 'data' && f.kind !== 'read-request') return;
    const key = f.of === null ? null : xidKey(f.of.xid);
    // A call whose RPC message came in its position-zero read chunk is named once the READ responses complete it.
    if (key !== null && f.rpc?.call != null) this.x.take({ kind: 'name', conn, key, name: callName(f.rpc) }, at);
    // READ requests go to the client; READ responses, the data a read chunk gives, to the server; WRITEs to the client.
    const op = f.kind === 'read-request' ? 'readRequest' : f.direction === 'to-server' ? 'read' : 'write';
    this.x.take({ kind: 'rdma', conn, key, op, bytes: f.length, direction: f.direction ?? '' }, at);
  }

  /** The report of every connection, in the order the capture showed them. */
  result(): RpcRdmaAnalysis {
    return {
      conversations: this.x.result().map((r) => ({
        ...r,
        credits: this.credits.get(r.conversation) ?? { requested: null, granted: null, overGrant: 0 },
        inline: this.inline.get(r.conversation) ?? null,
      })),
    };
  }
}
