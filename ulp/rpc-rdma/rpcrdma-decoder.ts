/**
 * Which frames are RPC-over-RDMA (RFC 8166), and what they carry, frame after frame in capture order.
 *
 * Ownership, as in Wireshark's packet-rpcrdma.c: an RDMA CM REQ to the IP CM service ID of a TCP
 * port in `ports` (20049, IANA's nfsrdma port) and the REP answering it make both QP ends
 * the protocol's (frames to the REQ sender's QP travel to the client, frames to the REP sender's
 * to the server); `qpns` (--decode-as) names QPs without a CM. Where neither applies, a SEND's
 * shape claims its destination QP. Wireshark's heuristic (packet_is_rpcordma, registered on
 * infiniband.payload) takes a payload of at least 16 bytes whose version word is 1 and whose proc
 * is RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE or RDMA_ERROR; for RDMA_MSG and RDMA_MSGP the chunk
 * lists must fit in the payload and the RPC message after them must start with the header's xid.
 * This decoder asks the same and, for every proc with lists, that the lists parse (an XDR
 * discriminator is 0 or 1). A QP end claimed so joins the conversation of its address pair; an
 * RDMA READ request or WRITE to an unclaimed QP joins it when its RETH's R_Key is a handle a chunk
 * of that conversation named.
 *
 * The RPC message: inline after the header (RDMA_MSG, RDMA_MSGP); or, for RDMA_NOMSG, in a chunk
 * (RFC 8166 §3.5.3): a call in the position-zero read segments, which the server fetches with RDMA
 * READs (the responses carry it; the frame of the response that completes it shows it), a reply in
 * the reply chunk, which the server fills with RDMA WRITEs before its RDMA_NOMSG (that frame shows
 * it). Every RDMA READ and WRITE whose handle a chunk named belongs to that call's xid.
 *
 * A message over several SEND packets (FIRST, MIDDLE..., LAST) is put together when their PSNs
 * follow each other; the LAST frame carries it. The result depends only on the frames and their
 * order: the state (conversation-state.ts) is plain data carried from batch to batch.
 */
import type { RocePacket } from '../../packets/decode';
import { frameFault, packetAddresses } from '../../packets/decode';
import { WireError, WireErrorCode } from '../../packets/errors';
import { Opcode } from '../../packets/opcodes';
import { GSI_QPN } from '../../packets/mad';
import { PortSpace, splitServiceId } from '../../packets/cm/service-id';
import { IP_CM_HEADER_LEN } from '../../packets/cm/ip-private-data';
import type { UlpDecoder, UlpRules } from '../ulp-decoder';
import { type RpcRdmaCmPrivateData, parseRpcRdmaCmPrivateData } from './cm-private-data';
import { UlpName } from '../ulp-decoder';
import { FrameKeyCache } from '../frame-keys';
import { OwnedQpns } from '../owned-qpns';
import { type RpcRdmaHeader, RPCRDMA_HEADER_LEN, RPCRDMA_VERSION, RpcRdmaProc, parseRpcRdmaHeader } from './rpcrdma-header';
import { type CallOf, type RpcMessage, RpcMsgType, parseRpcMessage } from './rpc-message';
import {
  type ChunkKind,
  type Conversation,
  type DataItemSegment,
  type EndRole,
  type HandleUse,
  type OpenCall,
  type QpEnd,
  type RpcRdmaState,
  capSet,
  emptyConversation,
  emptyRpcRdmaState,
  endKey,
} from './conversation-state';

/** The IANA port of NFS over RDMA (IANA nfsrdma). */
export const RPC_RDMA_PORT = 20049;

const MAX_PENDING = 256;
const MAX_CONVERSATIONS = 1024;
const MAX_CALLS = 1024;
const MAX_HANDLES = 4096;
const MAX_READS = 64;
const MAX_MESSAGES = 64;
const MAX_ENDS = 4096;
/** Bytes of a message put together from packets or chunks, at most (Linux's inline and reply-chunk sizes are far smaller). */
const MAX_MESSAGE = 1 << 20;
const PSN_HALF = 1 << 23;

export type RpcRdmaFrameKind = 'cm-req' | 'cm-rep' | 'message' | 'fragment' | 'read-request' | 'data';

/** The call a frame's chunk data or reply belongs to. */
export interface XidRef {
  xid: number;
  /** The chunk the data's handle was named in (null for a reply's own reference). */
  chunk: ChunkKind | null;
  /** The call's program, version and procedure, when its RPC message was read. */
  call: CallOf | null;
}

export interface RpcRdmaFrame {
  kind: RpcRdmaFrameKind;
  direction: 'to-server' | 'to-client' | null;
  conversation: string | null;
  header: RpcRdmaHeader | null;
  /** The RPC message: inline, or put together from a chunk. */
  rpc: RpcMessage | null;
  /** Where the message was read: inline; from a position-zero read chunk; from the reply chunk; or the inline call with its read chunks' data items put back (`reassembled`). */
  rpcFrom: 'inline' | 'read-chunk' | 'reply-chunk' | 'reassembled' | null;
  /** For data: the call whose chunk named the handle; for a reply: its call. */
  of: XidRef | null;
  /** The RETH's handle of an RDMA READ request or WRITE. */
  handle: number | null;
  packets: number;
  length: number;
  /** A CM REQ's or REP's RFC 8797 private data (null when it carries none). */
  cm: RpcRdmaCmPrivateData | null;
  /** On a CM REP: the private data of the REQ it answers (the client's sizes). */
  cmReq: RpcRdmaCmPrivateData | null;
  error: WireError | null;
}

function frame(kind: RpcRdmaFrameKind, direction: RpcRdmaFrame['direction']): RpcRdmaFrame {
  return {
    kind,
    direction,
    conversation: null,
    header: null,
    rpc: null,
    rpcFrom: null,
    of: null,
    handle: null,
    packets: 1,
    length: 0,
    cm: null,
    cmReq: null,
    error: null,
  };
}

/** The RFC 8797 record in a CM message's private data at `off`; a malformed one is the frame's error. */
function cmPrivateData(f: RpcRdmaFrame, pd: Uint8Array, off: number): RpcRdmaCmPrivateData | null {
  try {
    return parseRpcRdmaCmPrivateData(new DataView(pd.buffer, pd.byteOffset, pd.byteLength), off, pd.byteLength);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    f.error = e;
    return null;
  }
}

const SEND_FIRST = new Set([Opcode.RC_SEND_FIRST]);
const SEND_MIDDLE = new Set([Opcode.RC_SEND_MIDDLE]);
const SEND_LAST = new Set([Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.RC_SEND_LAST_WITH_INVALIDATE]);
const SEND_ONLY = new Set([Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_SEND_ONLY_WITH_INVALIDATE]);
const WRITE_FIRST = new Set([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE]);
const WRITE_LATER = new Set([Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST, Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE]);
const WRITE_ENDS = new Set([
  Opcode.RC_RDMA_WRITE_ONLY,
  Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
  Opcode.RC_RDMA_WRITE_LAST,
  Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
]);
const READ_RESPONSES = new Set([
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
]);
const READ_RESPONSE_ENDS = new Set([Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY]);

/**
 * True when the `len` bytes at `at` look like the start of an RPC-over-RDMA message (the shape
 * rule above): version 1, a known proc, lists that parse, and for RDMA_MSG/MSGP the RPC xid after
 * them equal to the header's.
 */
export function looksLikeRpcRdma(view: DataView, at: number, len: number): boolean {
  if (len < RPCRDMA_HEADER_LEN || view.getUint32(at + 4) !== RPCRDMA_VERSION || view.getUint32(at + 12) > RpcRdmaProc.ERROR) return false;
  try {
    const h = parseRpcRdmaHeader(view, at, at + len);
    if (h.proc !== RpcRdmaProc.MSG && h.proc !== RpcRdmaProc.MSGP) return true;
    return h.length + 4 <= len && view.getUint32(at + h.length) === h.xid;
  } catch (e) {
    if (e instanceof WireError) return false;
    throw e;
  }
}

export class RpcRdmaDecoder implements UlpDecoder<RpcRdmaFrame, RpcRdmaState> {
  readonly name = UlpName.RpcRdma;
  private readonly ports: ReadonlySet<number>;
  private readonly qpns: ReadonlySet<number>;
  private readonly keys = new FrameKeyCache();
  private readonly owned: OwnedQpns;

  constructor(
    rules: UlpRules,
    readonly state: RpcRdmaState = emptyRpcRdmaState(),
  ) {
    // `rules.ports` are the ports besides the default one (UlpRules).
    this.ports = new Set([RPC_RDMA_PORT, ...rules.ports]);
    this.qpns = new Set(rules.qpns);
    this.owned = new OwnedQpns(state.ends, MAX_ENDS);
  }

  /** Any QP may be claimed by a SEND's shape (or by an RDMA READ/WRITE of a known handle), so every frame is looked at. */
  wants(_destQp: number): boolean {
    return true;
  }

  observe(p: RocePacket, view: DataView, start: number): RpcRdmaFrame | null {
    const b = p.bth;
    if (b === null || p.payloadOff < 0 || p.payloadCaptured !== p.payloadLength) return null;
    if (frameFault(p) !== null && p.icrcOk !== false) return null;
    if (b.destQp === GSI_QPN) return p.mad === null ? null : this.cm(p);
    const op = b.opcode;
    const at = start + p.payloadOff;
    const len = p.payloadLength;
    if (!this.owned.has(b.destQp) && !this.qpns.has(b.destQp) && !this.mayClaim(p, view, at, len)) return null;
    const keys = this.keys.of(p, b.destQp);
    const key = keys.end;
    let end: QpEnd | undefined = this.state.ends.get(key);
    if (end === undefined) {
      // Without a CM exchange (shape or --decode-as), a conversation is its address pair's.
      const pair = keys.pair;
      if (this.qpns.has(b.destQp)) end = { role: 'either', conversation: pair };
      else if ((SEND_ONLY.has(op) || SEND_FIRST.has(op)) && looksLikeRpcRdma(view, at, len)) end = { role: 'either', conversation: pair };
      else if (
        p.reth !== null &&
        (WRITE_FIRST.has(op) || op === Opcode.RC_RDMA_READ_REQUEST) &&
        this.state.conversations.get(pair)?.handles.has(p.reth.rkey) === true
      )
        // The server reads and writes the client's memory: the request goes to the client's QP.
        end = { role: 'client', conversation: pair };
      if (end === undefined) return null;
      if (!this.qpns.has(b.destQp)) this.setEnd(key, b.destQp, end);
    }
    const c = this.conversation(end.conversation);
    const f = this.onConversation(p, view, at, len, key, end.role, c);
    if (f !== null) f.conversation = end.conversation;
    return f;
  }

  /**
   * False when a frame to a QPN of no end of ours cannot be claimed by the rules of `observe` (a
   * SEND's shape, or an RDMA READ or WRITE of a handle some conversation named), told without the
   * frame's keys: most frames of a capture that is not RPC-over-RDMA end here.
   */
  private mayClaim(p: RocePacket, view: DataView, at: number, len: number): boolean {
    const op = (p.bth as NonNullable<RocePacket['bth']>).opcode;
    if (SEND_ONLY.has(op) || SEND_FIRST.has(op)) return looksLikeRpcRdma(view, at, len);
    return p.reth !== null && (WRITE_FIRST.has(op) || op === Opcode.RC_RDMA_READ_REQUEST) && this.state.conversations.size > 0;
  }

  /** Makes the QP end `key` (to `qpn`) `end`. */
  private setEnd(key: string, qpn: number, end: QpEnd): void {
    capSet(this.state.ends, key, end, MAX_ENDS);
    this.owned.add(qpn);
  }

  private conversation(name: string): Conversation {
    let c = this.state.conversations.get(name);
    if (c === undefined) {
      c = emptyConversation();
      capSet(this.state.conversations, name, c, MAX_CONVERSATIONS);
    }
    return c;
  }

  private cm(p: RocePacket): RpcRdmaFrame | null {
    const mad = p.mad;
    const m = mad?.cm ?? null;
    if (mad === null || m === null) return null;
    const { src, dst } = packetAddresses(p);
    const s = this.state;
    if (m.name === 'REQ') {
      const sid = splitServiceId(m.fields.serviceId);
      if (mad.ipCm === null || sid === null || sid.portSpace !== PortSpace.TCP || !this.ports.has(sid.port)) return null;
      const f = frame('cm-req', 'to-server');
      f.cm = cmPrivateData(f, m.fields.privateData, IP_CM_HEADER_LEN);
      const i = s.pending.findIndex((r) => r.commId === m.fields.localCommId && r.clientAddr === src);
      if (i >= 0) s.pending.splice(i, 1);
      s.pending.push({ commId: m.fields.localCommId, clientAddr: src, serverAddr: dst, clientQpn: m.fields.localQpn, cm: f.cm });
      if (s.pending.length > MAX_PENDING) s.pending.shift();
      return f;
    }
    if (m.name === 'REP') {
      const req = s.pending.find((r) => r.commId === m.fields.remoteCommId && r.serverAddr === src && r.clientAddr === dst);
      if (req === undefined) return null;
      const server = endKey(src, m.fields.localQpn);
      this.conversation(server);
      this.setEnd(server, m.fields.localQpn, { role: 'server', conversation: server });
      this.setEnd(endKey(dst, req.clientQpn), req.clientQpn, { role: 'client', conversation: server });
      const f = frame('cm-rep', 'to-client');
      f.conversation = server;
      f.cm = cmPrivateData(f, m.fields.privateData, 0);
      f.cmReq = req.cm;
      return f;
    }
    if (m.name === 'REJ') {
      const i = s.pending.findIndex((r) => r.commId === m.fields.remoteCommId && r.serverAddr === src && r.clientAddr === dst);
      if (i >= 0) s.pending.splice(i, 1);
    }
    return null;
  }

  private onConversation(p: RocePacket, view: DataView, at: number, len: number, key: string, role: EndRole, c: Conversation): RpcRdmaFrame | null {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const direction = role === 'server' ? 'to-server' : role === 'client' ? 'to-client' : null;
    if (SEND_FIRST.has(op) || SEND_MIDDLE.has(op) || SEND_LAST.has(op) || SEND_ONLY.has(op)) return this.send(p, view, at, len, key, role, c);
    if (op === Opcode.RC_RDMA_READ_REQUEST && p.reth !== null) {
      // The server reads the client's memory: the request goes to the client's QP.
      const f = frame('read-request', direction ?? 'to-client');
      f.handle = p.reth.rkey;
      const use = c.handles.get(p.reth.rkey);
      if (use !== undefined) {
        f.of = ref(c, use);
        c.reads.push({ psn: b.psn, handle: p.reth.rkey, use });
        if (c.reads.length > MAX_READS) c.reads.shift();
      }
      return f;
    }
    if (READ_RESPONSES.has(op)) {
      const f = frame('data', direction ?? 'to-server');
      f.length = len;
      const r = readOf(c, b.psn, READ_RESPONSE_ENDS.has(op));
      if (r === null) return f;
      f.handle = r.handle;
      f.of = ref(c, r.use);
      const msg = r.use.chunk === 'read' ? c.messages.get(r.use.xid) : undefined;
      if (msg !== undefined && msg.kind === 'call' && r.use.message) {
        this.gather(msg, view, at, len);
        if (msg.expected > 0 && msg.length >= msg.expected) {
          c.messages.delete(r.use.xid);
          this.readRpc(f, c, joined(msg.parts, msg.length), 'read-chunk', null);
        }
      } else if (msg !== undefined && msg.inline !== null) {
        const item = msg.items.find((s) => s.handle === r.handle && s.got < s.length);
        if (item !== undefined) {
          item.parts.push(new Uint8Array(view.buffer, view.byteOffset + at, Math.min(len, item.length - item.got)).slice());
          item.got += Math.min(len, item.length - item.got);
        }
        if (msg.items.every((s) => s.got >= s.length)) {
          c.messages.delete(r.use.xid);
          const whole = withDataItems(msg.inline, msg.items);
          if (whole !== null) this.readRpc(f, c, whole, 'reassembled', null);
        }
      }
      return f;
    }
    if (WRITE_FIRST.has(op) || WRITE_LATER.has(op)) {
      const f = frame('data', direction ?? 'to-client');
      f.length = len;
      let handle: number | undefined;
      if (WRITE_FIRST.has(op) && p.reth !== null) {
        handle = p.reth.rkey;
        c.writing.set(key, handle);
      } else handle = c.writing.get(key);
      if (WRITE_ENDS.has(op)) c.writing.delete(key);
      if (handle === undefined) return f;
      f.handle = handle;
      const use = c.handles.get(handle);
      if (use === undefined) return f;
      f.of = ref(c, use);
      if (use.chunk === 'reply') {
        let msg = c.messages.get(use.xid);
        if (msg === undefined) {
          msg = { kind: 'reply', expected: 0, parts: [], length: 0, inline: null, items: [] };
          capSet(c.messages, use.xid, msg, MAX_MESSAGES);
        }
        this.gather(msg, view, at, len);
      }
      return f;
    }
    return null;
  }

  private gather(msg: { parts: Uint8Array[]; length: number }, view: DataView, at: number, len: number): void {
    if (msg.length + len > MAX_MESSAGE) return;
    msg.parts.push(new Uint8Array(view.buffer, view.byteOffset + at, len).slice());
    msg.length += len;
  }

  /** A SEND packet: part of a message, or a whole one. */
  private send(p: RocePacket, view: DataView, at: number, len: number, key: string, role: EndRole, c: Conversation): RpcRdmaFrame {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const partials = this.state.partial;
    const direction = role === 'server' ? 'to-server' : role === 'client' ? 'to-client' : null;
    if (SEND_ONLY.has(op)) {
      partials.delete(key);
      return this.message(view, at, len, role, c, 1);
    }
    const f = frame('fragment', direction);
    if (SEND_FIRST.has(op)) {
      capSet(
        partials,
        key,
        { chunks: [new Uint8Array(view.buffer, view.byteOffset + at, len).slice()], length: len, nextPsn: (b.psn + 1) & 0xffffff, packets: 1 },
        MAX_ENDS,
      );
      f.length = len;
      return f;
    }
    const part = partials.get(key);
    if (part === undefined) {
      f.error = new WireError(WireErrorCode.BadField, p.bthOff, 'a later packet of a message whose first packet was not seen');
      f.length = len;
      return f;
    }
    if (b.psn === ((part.nextPsn - 1) & 0xffffff)) {
      // The packet before, sent again (go-back-N): already taken.
      f.packets = part.packets;
      f.length = part.length;
      return f;
    }
    if (b.psn !== part.nextPsn || part.length + len > MAX_MESSAGE) {
      partials.delete(key);
      f.error = new WireError(
        WireErrorCode.BadField,
        p.bthOff,
        b.psn !== part.nextPsn
          ? `a message's packet with PSN ${b.psn} where ${part.nextPsn} was next: the message is dropped`
          : `a message of more than ${MAX_MESSAGE} bytes: dropped`,
      );
      f.length = len;
      return f;
    }
    part.chunks.push(new Uint8Array(view.buffer, view.byteOffset + at, len).slice());
    part.length += len;
    part.packets++;
    part.nextPsn = (b.psn + 1) & 0xffffff;
    if (SEND_MIDDLE.has(op)) {
      f.packets = part.packets;
      f.length = part.length;
      return f;
    }
    partials.delete(key);
    const whole = joined(part.chunks, part.length);
    return this.message(new DataView(whole.buffer), 0, whole.length, role, c, part.packets);
  }

  /** A whole RPC-over-RDMA message of `len` bytes at `at`, sent to an end of `role`. */
  private message(view: DataView, at: number, len: number, role: EndRole, c: Conversation, packets: number): RpcRdmaFrame {
    const f = frame('message', role === 'server' ? 'to-server' : role === 'client' ? 'to-client' : null);
    f.packets = packets;
    f.length = len;
    let h: RpcRdmaHeader;
    try {
      h = parseRpcRdmaHeader(view, at, at + len);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      f.error = e;
      return f;
    }
    f.header = h;
    const isCall = role === 'server' || (role === 'either' && isCallShape(view, at, len, h));
    if (f.direction === null) f.direction = isCall ? 'to-server' : 'to-client';
    if (isCall && h.proc !== RpcRdmaProc.DONE && h.proc !== RpcRdmaProc.ERROR) {
      const open: OpenCall = { prog: null, vers: null, proc: null, writeList: h.writeList.length > 0 };
      capSet(c.calls, h.xid, open, MAX_CALLS);
      const name = (handle: number, use: HandleUse): void => capSet(c.handles, handle, use, MAX_HANDLES);
      for (const r of h.readList) name(r.handle, { xid: h.xid, chunk: 'read', message: r.position === 0 && h.proc === RpcRdmaProc.NOMSG });
      for (const w of h.writeList) for (const s of w) name(s.handle, { xid: h.xid, chunk: 'write', message: false });
      for (const s of h.replyChunk ?? []) name(s.handle, { xid: h.xid, chunk: 'reply', message: false });
      if (h.proc === RpcRdmaProc.NOMSG) {
        const expected = h.readList.filter((r) => r.position === 0).reduce((n, r) => n + r.length, 0);
        if (expected > 0) capSet(c.messages, h.xid, { kind: 'call', expected, parts: [], length: 0, inline: null, items: [] }, MAX_MESSAGES);
      } else {
        // A read segment at a position past zero carries a data item the XDR stream left out (its length word stays).
        const items = h.readList.filter((r) => r.position > 0);
        const ddp = items.length > 0;
        this.readRpc(f, c, view, 'inline', null, at + h.length, at + len, ddp);
        const total = items.reduce((n, r) => n + r.length, 0);
        if (ddp && total + len <= MAX_MESSAGE)
          // Kept until the server's READs have fetched every item: the call is then read again with them put back.
          capSet(
            c.messages,
            h.xid,
            {
              kind: 'call',
              expected: total,
              parts: [],
              length: 0,
              inline: new Uint8Array(view.buffer, view.byteOffset + at + h.length, len - h.length).slice(),
              items: items.map((r) => ({ position: r.position, handle: r.handle, length: r.length, parts: [], got: 0 })),
            },
            MAX_MESSAGES,
          );
      }
      return f;
    }
    if (!isCall && h.proc === RpcRdmaProc.ERROR) {
      // RDMA_ERROR answers the call of its xid in place of a reply (RFC 8166 §4.5).
      const open = c.calls.get(h.xid);
      if (open !== undefined) f.of = { xid: h.xid, chunk: null, call: callOf(open) };
      this.forget(c, h.xid);
      return f;
    }
    if (!isCall && (h.proc === RpcRdmaProc.MSG || h.proc === RpcRdmaProc.MSGP || h.proc === RpcRdmaProc.NOMSG)) {
      const open = c.calls.get(h.xid) ?? null;
      const of = open === null ? null : callOf(open);
      f.of = { xid: h.xid, chunk: null, call: of };
      if (h.proc === RpcRdmaProc.NOMSG) {
        const msg = c.messages.get(h.xid);
        // The reply chunk as the reply's header gives it: its segments' lengths are the bytes written (RFC 8166 §3.4.6: the responder sets each segment's length to what it wrote).
        const written = (h.replyChunk ?? []).reduce((n, s) => n + s.length, 0);
        if (msg !== undefined && msg.kind === 'reply') {
          const bytes = joined(msg.parts, msg.length);
          this.readRpc(
            f,
            c,
            new DataView(bytes.buffer),
            'reply-chunk',
            of,
            0,
            written > 0 ? Math.min(written, bytes.length) : bytes.length,
            open?.writeList ?? false,
          );
        }
      } else this.readRpc(f, c, view, 'inline', of, at + h.length, at + len, open?.writeList ?? false);
      this.forget(c, h.xid);
    }
    return f;
  }

  /** Reads the RPC message in `[from, to)` of `view` (the whole view by default) into `f`. */
  private readRpc(
    f: RpcRdmaFrame,
    c: Conversation,
    src: DataView | Uint8Array,
    from: RpcRdmaFrame['rpcFrom'],
    of: CallOf | null,
    start = 0,
    end = -1,
    ddp = false,
  ): void {
    const view = src instanceof DataView ? src : new DataView(src.buffer, src.byteOffset, src.byteLength);
    const stop = end < 0 ? view.byteLength : end;
    try {
      const m = parseRpcMessage(view, start, stop, of, ddp);
      f.rpc = m;
      f.rpcFrom = from;
      if (m.call !== null) {
        const open = c.calls.get(m.xid);
        if (open !== undefined) {
          open.prog = m.call.prog;
          open.vers = m.call.vers;
          open.proc = m.call.proc;
        }
        if (f.of !== null && f.of.xid === m.xid) f.of.call = { prog: m.call.prog, vers: m.call.vers, proc: m.call.proc };
      }
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      f.error = e;
    }
  }

  /** A reply ends its call: its handles, READs and gathered chunk bytes go. */
  private forget(c: Conversation, xid: number): void {
    c.calls.delete(xid);
    c.messages.delete(xid);
    for (const [h, u] of c.handles) if (u.xid === xid) c.handles.delete(h);
    c.reads = c.reads.filter((r) => r.use.xid !== xid);
  }
}

/** Without a role from the CM: a call carries an RPC CALL inline, or (RDMA_NOMSG) a position-zero read chunk. */
function isCallShape(view: DataView, at: number, len: number, h: RpcRdmaHeader): boolean {
  if (h.proc === RpcRdmaProc.NOMSG) return h.readList.some((r) => r.position === 0);
  if (h.proc !== RpcRdmaProc.MSG && h.proc !== RpcRdmaProc.MSGP) return false;
  return h.length + 8 <= len && view.getUint32(at + h.length + 4) === RpcMsgType.CALL;
}

function callOf(open: OpenCall): CallOf | null {
  return open.prog !== null && open.vers !== null && open.proc !== null ? { prog: open.prog, vers: open.vers, proc: open.proc } : null;
}

function ref(c: Conversation, use: HandleUse): XidRef {
  const open = c.calls.get(use.xid);
  return { xid: use.xid, chunk: use.chunk, call: open === undefined ? null : callOf(open) };
}

/**
 * The call's XDR stream with each read chunk's data item put back at its position (RFC 8166
 * §3.4.5): a position counts bytes of the whole stream, items and their roundup included; a chunk
 * holds the item without its XDR roundup, so zero padding to 4 follows it. Segments at the same
 * position make one chunk, in list order. Null when a position falls outside the inline bytes
 * (a malformed read list): the call stays as it was sent.
 */
function withDataItems(inline: Uint8Array, items: readonly DataItemSegment[]): Uint8Array | null {
  const chunks: { position: number; bytes: Uint8Array }[] = [];
  for (const s of items) {
    const data = joined(s.parts, s.got);
    const last = chunks[chunks.length - 1];
    if (last !== undefined && last.position === s.position) {
      const both = new Uint8Array(last.bytes.length + data.length);
      both.set(last.bytes);
      both.set(data, last.bytes.length);
      last.bytes = both;
    } else chunks.push({ position: s.position, bytes: data });
  }
  chunks.sort((a, b) => a.position - b.position);
  const out: Uint8Array[] = [];
  let from = 0;
  let inserted = 0;
  for (const ch of chunks) {
    const cut = ch.position - inserted;
    if (cut < from || cut > inline.length) return null;
    out.push(inline.subarray(from, cut), ch.bytes, new Uint8Array((4 - (ch.bytes.length % 4)) % 4));
    inserted += (ch.bytes.length + 3) & ~3;
    from = cut;
  }
  out.push(inline.subarray(from));
  return joined(
    out,
    out.reduce((n, b) => n + b.length, 0),
  );
}

function joined(parts: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let o = 0;
  for (const p of parts) {
    out.set(p.subarray(0, length - o), o);
    o += Math.min(p.length, length - o);
  }
  return out;
}

/**
 * The READ request a response with PSN `psn` answers: the latest at or before it within half the
 * PSN space (a READ's responses carry its PSN and those after: IBTA vol. 1 §9.7.4.1.3); a response
 * that ends a READ lets go of the requests before it (responses come in request order, §9.5).
 */
function readOf(c: Conversation, psn: number, ends: boolean): { handle: number; use: HandleUse } | null {
  let best = -1;
  let bestDistance = PSN_HALF;
  c.reads.forEach((r, i) => {
    const d = (psn - r.psn) & 0xffffff;
    if (d < bestDistance) {
      best = i;
      bestDistance = d;
    }
  });
  const r = c.reads[best];
  if (r === undefined) return null;
  if (ends) c.reads.splice(0, best + 1);
  return r;
}
