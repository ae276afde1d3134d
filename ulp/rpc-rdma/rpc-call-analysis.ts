/**
 * `roce analyze`'s view of RPC-over-RDMA (RFC 8166): each RPC from its call to its reply, per
 * connection.
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
 * more calls outstanding than the responder granted). NFSv3 results are not read, so an NFSv3
 * reply's own status does not count.
 */
import { Opcode } from '../../packets/opcodes';
import type { RpcRdmaFrame } from './rpcrdma-decoder';
import { RpcRdmaProc, errorCodeName, procName } from './rpcrdma-header';
import { ReplyStat, acceptStatName, rejectStatName, type RpcMessage } from './rpc-message';
import { nfs4OpName } from './nfs-names';
import { progWords } from './rpcrdma-text';
import { type LatencySummary, latencyFigures } from '../command-latency';

/** Where a frame sits in the capture, and what the transport layer says of it. */
export interface RpcFrameAt {
  frame: number;
  /** Nanoseconds since the first frame of the capture. */
  timeNs: number;
  opcode: number;
  psn: number;
}

/** One RPC as the capture shows it. */
export interface RpcCallRecord {
  xid: number;
  /** `NFSv4 COMPOUND SEQUENCE PUTFH READ`, `NFSv3 WRITE`; `RPC` while the call's message was not read. */
  name: string;
  /** The call's RPC-over-RDMA frame (its header), and when. */
  frame: number;
  timeNs: number;
  /** Where the call's RPC message travelled (null: not read). */
  callIn: 'inline' | 'read-chunk' | null;
  /** Bytes of the call's and the reply's RPC-over-RDMA messages (their SENDs: header and what is inline). */
  sendBytes: number;
  reply: {
    frame: number;
    timeNs: number;
    latencyNs: number;
    /** `SUCCESS`, `NFS4ERR_GRACE (10013)`, `PROG_UNAVAIL`, `RDMA_ERROR ERR_CHUNK`. */
    status: string;
    error: boolean;
    replyIn: 'inline' | 'reply-chunk' | 'none';
  } | null;
  /** RDMA READ requests (the server pulling a read chunk) and WRITE messages (the server filling a write or reply chunk) of this call. */
  rdma: { reads: number; writes: number; packets: number; bytes: number; resent: number };
}

export interface RpcConversationReport {
  /** The connection: the RDMA CM connection's addresses, or an address pair for one claimed by shape or --decode-as. */
  conversation: string;
  calls: number;
  answered: number;
  errors: RpcCallRecord[];
  neverAnswered: RpcCallRecord[];
  /** The most calls outstanding at once. */
  maxOutstanding: number;
  credits: {
    /** The last credit value the client asked for and the server granted (RFC 8166 §3.3.1), null when not seen. */
    requested: number | null;
    granted: number | null;
    /** Calls made while as many as the server had granted were already outstanding. */
    overGrant: number;
  };
  latencyUs: LatencySummary | null;
  /** Answered calls by latency: `[upper bound in µs, count]`, bounds doubling from 1 µs (the last bucket is open). */
  histogram: [number, number][];
  /** Bytes in SENDs (RPC-over-RDMA messages), in RDMA READ responses (the server pulling read chunks), in RDMA WRITEs (the server filling write and reply chunks); data sent again not counted twice. */
  bytes: { sends: number; rdmaRead: number; rdmaWrite: number };
  list: RpcCallRecord[];
}

export interface RpcRdmaAnalysis {
  conversations: RpcConversationReport[];
}

interface ConversationWork {
  open: Map<number, RpcCallRecord>;
  all: RpcCallRecord[];
  answered: RpcCallRecord[];
  maxOutstanding: number;
  requested: number | null;
  granted: number | null;
  overGrant: number;
  bytes: RpcConversationReport['bytes'];
  seenPsns: Set<string>;
}

const WRITE_STARTS = new Set<number>([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE]);
/** Calls remembered per connection while unanswered, at most (the oldest are reported as never answered). */
const MAX_OPEN = 65536;

/** A name for NFSv4 status values seen in practice (RFC 8881 §15.1), else the number. */
const NFS4_STATUS: Record<number, string> = {
  0: 'NFS4_OK',
  1: 'NFS4ERR_PERM',
  2: 'NFS4ERR_NOENT',
  5: 'NFS4ERR_IO',
  13: 'NFS4ERR_ACCESS',
  17: 'NFS4ERR_EXIST',
  22: 'NFS4ERR_INVAL',
  28: 'NFS4ERR_NOSPC',
  10008: 'NFS4ERR_DELAY',
  10011: 'NFS4ERR_EXPIRED',
  10013: 'NFS4ERR_GRACE',
  10021: 'NFS4ERR_STALE_CLIENTID',
  10022: 'NFS4ERR_STALE_STATEID',
  10052: 'NFS4ERR_BADSESSION',
  10053: 'NFS4ERR_BADSLOT',
  10063: 'NFS4ERR_SEQ_MISORDERED',
};

export function nfs4StatusName(s: number): string {
  return `${NFS4_STATUS[s] ?? 'nfsstat4'} (${s})`;
}

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
  if (c !== null && c.minorversionOrStatus !== 0) return { status: nfs4StatusName(c.minorversionOrStatus), error: true };
  return { status: c === null ? 'SUCCESS' : 'NFS4_OK', error: false };
}

export class RpcCallAnalysis {
  private readonly conversations = new Map<string, ConversationWork>();

  /** Takes the decoder's view of the next frame of the capture. */
  take(f: RpcRdmaFrame, at: RpcFrameAt): void {
    if (f.conversation === null) return;
    const c = this.conversation(f.conversation);
    if (f.kind === 'message' && f.header !== null) {
      const h = f.header;
      const toServer = f.direction === 'to-server' || (f.direction === null && f.rpc?.call != null);
      if (toServer) {
        c.requested = h.credits;
        if (h.proc === RpcRdmaProc.DONE || h.proc === RpcRdmaProc.ERROR) return;
        if (c.granted !== null && c.open.size >= c.granted) c.overGrant++;
        const inline = f.rpcFrom === 'inline' && f.rpc !== null;
        const rec: RpcCallRecord = {
          xid: h.xid,
          name: callName(f.rpc),
          frame: at.frame,
          timeNs: at.timeNs,
          callIn: inline ? 'inline' : h.proc === RpcRdmaProc.NOMSG ? 'read-chunk' : null,
          sendBytes: f.length,
          reply: null,
          rdma: { reads: 0, writes: 0, packets: 0, bytes: 0, resent: 0 },
        };
        c.bytes.sends += f.length;
        // An xid used again before its reply: the first is forgotten (never answered, as far as the capture shows).
        c.open.delete(h.xid);
        c.open.set(h.xid, rec);
        if (c.open.size > MAX_OPEN) {
          const first = c.open.keys().next();
          if (first.done !== true) c.open.delete(first.value);
        }
        c.all.push(rec);
        c.maxOutstanding = Math.max(c.maxOutstanding, c.open.size);
        return;
      }
      c.granted = h.credits;
      const rec = c.open.get(h.xid);
      if (rec === undefined) return;
      c.open.delete(h.xid);
      const st = h.proc === RpcRdmaProc.ERROR ? { status: `${procName(h.proc)} ${errorCodeName(h.errorCode ?? -1)}`, error: true } : replyStatus(f.rpc);
      c.bytes.sends += f.length;
      rec.sendBytes += f.length;
      rec.reply = {
        frame: at.frame,
        timeNs: at.timeNs,
        latencyNs: at.timeNs - rec.timeNs,
        ...st,
        replyIn: f.rpcFrom === 'reply-chunk' ? 'reply-chunk' : f.rpc !== null ? 'inline' : 'none',
      };
      c.answered.push(rec);
      return;
    }
    if (f.kind !== 'data' && f.kind !== 'read-request') return;
    const rec = f.of === null ? undefined : c.open.get(f.of.xid);
    // A call whose RPC message came in its position-zero read chunk is named once the READ responses complete it.
    if (rec !== undefined && f.rpc?.call != null && rec.callIn === 'read-chunk') rec.name = callName(f.rpc);
    const seen = `${f.direction}/${at.opcode === Opcode.RC_RDMA_READ_REQUEST ? 'req' : 'data'}/${at.psn}`;
    const again = c.seenPsns.has(seen);
    c.seenPsns.add(seen);
    const readData = f.direction === 'to-server';
    if (f.kind === 'data' && !again) {
      if (readData) c.bytes.rdmaRead += f.length;
      else c.bytes.rdmaWrite += f.length;
    }
    if (rec === undefined) return;
    if (f.kind === 'read-request') rec.rdma.reads++;
    else {
      if (WRITE_STARTS.has(at.opcode)) rec.rdma.writes++;
      rec.rdma.packets++;
      if (!again) rec.rdma.bytes += f.length;
    }
    if (again) rec.rdma.resent++;
  }

  /** The report of every connection, in the order the capture showed them. */
  result(): RpcRdmaAnalysis {
    return { conversations: [...this.conversations.entries()].map(([k, c]) => report(k, c)) };
  }

  private conversation(key: string): ConversationWork {
    let c = this.conversations.get(key);
    if (c === undefined) {
      c = {
        open: new Map(),
        all: [],
        answered: [],
        maxOutstanding: 0,
        requested: null,
        granted: null,
        overGrant: 0,
        bytes: { sends: 0, rdmaRead: 0, rdmaWrite: 0 },
        seenPsns: new Set(),
      };
      this.conversations.set(key, c);
    }
    return c;
  }
}

function report(conversation: string, c: ConversationWork): RpcConversationReport {
  return {
    conversation,
    calls: c.all.length,
    answered: c.answered.length,
    errors: c.answered.filter((r) => r.reply?.error === true),
    neverAnswered: [...c.open.values()],
    maxOutstanding: c.maxOutstanding,
    credits: { requested: c.requested, granted: c.granted, overGrant: c.overGrant },
    ...latencyFigures(c.answered.map((r) => (r.reply?.latencyNs ?? 0) / 1000)),
    bytes: c.bytes,
    list: c.all,
  };
}
