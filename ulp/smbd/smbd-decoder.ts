/**
 * Which frames are SMB Direct (MS-SMBD) and what they carry, frame after frame in capture order.
 *
 * Ownership: an RDMA CM REQ to the IP CM service ID of a TCP port in `ports` (445 by default: SMB
 * Direct over InfiniBand and RoCE listens on the SMB port, 5445 being iWARP's; Linux ksmbd
 * transport_rdma.c SMB_DIRECT_PORT_INFINIBAND/_IWARP) and the REP that answers it make both QP ends
 * SMB Direct, as NvmeDecoder does; `qpns` (--decode-as) makes frames to those QPNs SMB Direct; and,
 * where no CM was captured, a SEND ONLY shaped like a negotiate request (20 bytes, versions 0x0100)
 * or response (32 bytes) claims its destination QP end (shape.ts, after Wireshark's heuristic).
 *
 * A SMB Direct message over several SEND packets (FIRST, MIDDLE..., LAST) is put together when the
 * PSNs follow each other; then an SMB2 message over several data transfers is put together by their
 * RemainingDataLength (MS-SMBD §3.1.5.4); the frame that completes it carries the SMB2 command, or
 * every command of a compound (the NextCommand chain, MS-SMB2 §3.2.4.1.4). The
 * RDMA READs and WRITEs that move a READ's or WRITE's data are tied to it by the RETH's R_Key and
 * address falling in one of its SMB_DIRECT_BUFFER_DESCRIPTOR_V1s.
 */
import type { RocePacket } from '../../packets/decode';
import { frameFault, packetAddresses } from '../../packets/decode';
import { WireError, WireErrorCode } from '../../packets/errors';
import { Opcode } from '../../packets/opcodes';
import { GSI_QPN } from '../../packets/mad';
import { PortSpace, splitServiceId } from '../../packets/cm/service-id';
import type { UlpDecoder, UlpRules } from '../ulp-decoder';
import { UlpName } from '../ulp-decoder';
import { FrameKeyCache } from '../frame-keys';
import { OwnedQpns } from '../owned-qpns';
import { type NegotiateRequest, type NegotiateResponse, parseNegotiateRequest, parseNegotiateResponse } from './negotiate';
import { type DataTransfer, parseDataTransfer } from './data-transfer';
import { type Smb2Header, Smb2Command, isResponse, parseSmb2Header, SMB2_FLAGS_ASYNC_COMMAND, SMB2_HEADER_LEN } from './smb2-header';
import { type ReadWriteRequest, parseReadWriteRequest, parseReadWriteResponseLength, parseSessionSetupChannel } from './smb2-read-write';
import { type SmbdShape, smbdShape } from './shape';
import {
  type PartialSend,
  type RequestRef,
  type SmbdConnState,
  type SmbdEnd,
  type SmbdRole,
  type SmbdState,
  capMap,
  emptySmbdState,
} from './conversation-state';

/** SMB Direct over InfiniBand and RoCE: the SMB port (iWARP uses 5445). */
export const SMBD_PORT = 445;

const MAX_PENDING = 256;
const MAX_ENDS = 4096;
const MAX_CONNS = 2048;
const MAX_REQUESTS = 256;
const MAX_READS = 64;
const MAX_PARTIAL = 1024;
/** Commands of one compound, at most (a chain longer than this is taken as malformed). */
const MAX_COMPOUND = 64;
/** A SMB Direct message is at most its receiver's MaxReceiveSize (a few KiB); an SMB2 message at most MaxFragmentedSize (1 MiB in practice). */
const MAX_SEND = 1 << 20;
const MAX_MESSAGE = 1 << 24;
const PSN_HALF = 1 << 23;
/** STATUS_PENDING: an interim response; the final one follows (MS-SMB2 §3.3.4.2). */
const STATUS_PENDING = 0x00000103;

export type SmbdFrameKind = 'cm-req' | 'cm-rep' | 'negotiate-request' | 'negotiate-response' | 'data' | 'send-fragment' | 'rdma';

/** One SMB2 command of a message: a lone command, or one of a compound's chain (MS-SMB2 §3.2.4.1.4). */
export interface Smb2Part {
  header: Smb2Header;
  /** A READ or WRITE request's length, offset, channel and buffer descriptors. */
  request: ReadWriteRequest | null;
  /** A READ response's DataLength or a WRITE response's Count. */
  responseLength: number | null;
  /** The Channel of a READ, WRITE or SESSION_SETUP request. */
  channel: number | null;
  /** A response's request, when it was seen. */
  of: RequestRef | null;
  /** Where the command's header starts in the message, and its bytes (to the next command's header, or the end). */
  offset: number;
  size: number;
}

/**
 * The SMB2 message a data transfer completed: its first command's parts at the top (as before
 * compounds were read), and every command of the NextCommand chain in `commands`, the first included.
 */
export interface Smb2Message extends Smb2Part {
  commands: Smb2Part[];
  /** Bytes of the SMB2 message. */
  length: number;
}

export interface SmbdFrame {
  kind: SmbdFrameKind;
  direction: 'to-server' | 'to-client' | null;
  conn: string | null;
  negotiateRequest: NegotiateRequest | null;
  negotiateResponse: NegotiateResponse | null;
  transfer: DataTransfer | null;
  /** Data transfers the SMB2 message came in so far (1 when whole in one). */
  transfers: number;
  smb2: Smb2Message | null;
  /** The request a response answers or an RDMA transfer moves data for, when it was seen. */
  of: RequestRef | null;
  /** RC packets the SMB Direct message came in (1: SEND ONLY). */
  packets: number;
  /** Bytes of the SMB Direct message (a SEND fragment: so far), or of RDMA data. */
  length: number;
  error: WireError | null;
}

function frame(kind: SmbdFrameKind, direction: SmbdFrame['direction']): SmbdFrame {
  return {
    kind,
    direction,
    conn: null,
    negotiateRequest: null,
    negotiateResponse: null,
    transfer: null,
    transfers: 0,
    smb2: null,
    of: null,
    packets: 1,
    length: 0,
    error: null,
  };
}

const SEND_FIRST = new Set<number>([Opcode.RC_SEND_FIRST]);
const SEND_MIDDLE = new Set<number>([Opcode.RC_SEND_MIDDLE]);
const SEND_LAST = new Set<number>([Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.RC_SEND_LAST_WITH_INVALIDATE]);
const SEND_ONLY = new Set<number>([Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_SEND_ONLY_WITH_INVALIDATE]);
const KEYED = new Set<number>([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_READ_REQUEST]);
const READ_RESPONSES = new Set<number>([
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
]);
const READ_RESPONSE_ENDS = new Set<number>([Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY]);
const WRITE_REST = new Set<number>([Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST, Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE]);

const endKey = (addr: string, qpn: number) => `${addr}/${qpn}`;
const isNegotiateShape = (shape: SmbdShape): boolean => shape === 'negotiate-request' || shape === 'negotiate-response';
const toward = (role: SmbdRole): SmbdFrame['direction'] => (role === 'server' ? 'to-server' : role === 'client' ? 'to-client' : null);

export class SmbdDecoder implements UlpDecoder<SmbdFrame, SmbdState> {
  readonly name = UlpName.Smbd;
  private readonly ports: ReadonlySet<number>;
  private readonly qpns: ReadonlySet<number>;
  private readonly keys = new FrameKeyCache();
  private readonly owned: OwnedQpns;

  constructor(
    rules: UlpRules = { ports: [SMBD_PORT], qpns: [] },
    readonly state: SmbdState = emptySmbdState(),
  ) {
    this.ports = new Set(rules.ports);
    this.qpns = new Set(rules.qpns);
    this.owned = new OwnedQpns(state.ends, MAX_ENDS);
  }

  /** Every QP: a negotiate request may open SMB Direct on any QP whose CM was not captured (as Wireshark's heuristic sees every SEND). */
  wants(_destQp: number): boolean {
    return true;
  }

  observe(p: RocePacket, view: DataView, start: number): SmbdFrame | null {
    const b = p.bth;
    if (b === null || p.payloadOff < 0 || p.payloadCaptured !== p.payloadLength) return null;
    if (frameFault(p) !== null && p.icrcOk !== false) return null;
    if (p.mad !== null) return b.destQp === GSI_QPN ? this.cm(p) : null;
    const at = start + p.payloadOff;
    const len = p.payloadLength;
    // To a QPN of no end of ours, only a SEND ONLY shaped as a negotiate message can claim the frame (below).
    if (!this.owned.has(b.destQp) && !this.qpns.has(b.destQp) && !(SEND_ONLY.has(b.opcode) && isNegotiateShape(smbdShape(view, at, len)))) return null;
    const keys = this.keys.of(p, b.destQp);
    const key = keys.end;
    let end = this.state.ends.get(key);
    if (end === undefined && this.qpns.has(b.destQp)) end = { role: 'either', conn: `decode-as ${keys.pair}` };
    if (end === undefined) {
      // No CM: a negotiate message's shape claims the QP end it is sent to.
      if (!SEND_ONLY.has(b.opcode)) return null;
      const shape = smbdShape(view, at, len);
      if (!isNegotiateShape(shape)) return null;
      end = { role: shape === 'negotiate-request' ? 'server' : 'client', conn: `shape ${keys.pair}` };
      this.state.ends.set(key, end);
      capMap(this.state.ends, MAX_ENDS);
      this.owned.add(b.destQp);
    }
    const f = this.onConn(p, view, at, len, key, end);
    if (f !== null) f.conn = end.conn;
    return f;
  }

  private connOf(name: string): SmbdConnState {
    let c = this.state.conns.get(name);
    if (c === undefined) {
      c = { requests: new Map(), writing: new Map(), reads: [] };
      this.state.conns.set(name, c);
      capMap(this.state.conns, MAX_CONNS);
    }
    return c;
  }

  private onConn(p: RocePacket, view: DataView, at: number, len: number, key: string, end: SmbdEnd): SmbdFrame | null {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const c = this.connOf(end.conn);
    if (SEND_FIRST.has(op) || SEND_MIDDLE.has(op) || SEND_LAST.has(op) || SEND_ONLY.has(op)) return this.send(p, view, at, len, key, end, c);
    const direction = toward(end.role);
    if (KEYED.has(op) && p.reth !== null) {
      const f = frame('rdma', direction);
      f.length = len;
      f.of = findByToken(c, p.reth.rkey, p.reth.va);
      const way = direction ?? 'either';
      if (op === Opcode.RC_RDMA_READ_REQUEST) {
        if (f.of !== null) {
          c.reads.push({ psn: b.psn, of: f.of });
          if (c.reads.length > MAX_READS) c.reads.shift();
        }
      } else if (op === Opcode.RC_RDMA_WRITE_FIRST) c.writing.set(way, f.of);
      else c.writing.delete(way);
      return f;
    }
    if (READ_RESPONSES.has(op) || WRITE_REST.has(op)) {
      const f = frame('rdma', direction);
      f.length = len;
      if (READ_RESPONSES.has(op)) f.of = readOf(c, b.psn, READ_RESPONSE_ENDS.has(op));
      else {
        const way = direction ?? 'either';
        f.of = c.writing.get(way) ?? null;
        if (op !== Opcode.RC_RDMA_WRITE_MIDDLE) c.writing.delete(way);
      }
      return f;
    }
    return null;
  }

  private cm(p: RocePacket): SmbdFrame | null {
    const mad = p.mad;
    const m = mad?.cm ?? null;
    if (mad === null || m === null) return null;
    const { src, dst } = packetAddresses(p);
    const s = this.state;
    if (m.name === 'REQ') {
      const sid = splitServiceId(m.fields.serviceId);
      if (mad.ipCm === null || sid === null || sid.portSpace !== PortSpace.TCP || !this.ports.has(sid.port)) return null;
      const i = s.pending.findIndex((r) => r.commId === m.fields.localCommId && r.clientAddr === src);
      if (i >= 0) s.pending.splice(i, 1);
      s.pending.push({ commId: m.fields.localCommId, clientAddr: src, serverAddr: dst, clientQpn: m.fields.localQpn });
      if (s.pending.length > MAX_PENDING) s.pending.shift();
      return frame('cm-req', null);
    }
    if (m.name === 'REP' || m.name === 'REJ') {
      const req = s.pending.find((r) => r.commId === m.fields.remoteCommId && r.serverAddr === src && r.clientAddr === dst);
      if (req === undefined) return null;
      if (m.name === 'REJ') {
        s.pending.splice(s.pending.indexOf(req), 1);
        return null;
      }
      const server = endKey(src, m.fields.localQpn);
      s.ends.set(server, { role: 'server', conn: server });
      s.ends.set(endKey(dst, req.clientQpn), { role: 'client', conn: server });
      capMap(s.ends, MAX_ENDS);
      this.owned.add(m.fields.localQpn);
      this.owned.add(req.clientQpn);
      this.connOf(server);
      const f = frame('cm-rep', null);
      f.conn = server;
      return f;
    }
    return null;
  }

  /** A SEND packet: part of a SMB Direct message, or a whole one. */
  private send(p: RocePacket, view: DataView, at: number, len: number, key: string, end: SmbdEnd, c: SmbdConnState): SmbdFrame {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const sends = this.state.sends;
    const direction = toward(end.role);
    const bytes = new Uint8Array(view.buffer, view.byteOffset + at, len);
    if (SEND_ONLY.has(op)) {
      sends.delete(key);
      return this.message(view, at, len, key, end, c, 1);
    }
    const f = frame('send-fragment', direction);
    f.length = len;
    if (SEND_FIRST.has(op)) {
      sends.set(key, { chunks: [bytes.slice()], length: len, nextPsn: (b.psn + 1) & 0xffffff, packets: 1 });
      capMap(sends, MAX_PARTIAL);
      return f;
    }
    const part: PartialSend | undefined = sends.get(key);
    if (part === undefined) {
      f.error = new WireError(WireErrorCode.BadField, p.bthOff, 'a later packet of a SEND whose first packet was not seen');
      return f;
    }
    if (b.psn === ((part.nextPsn - 1) & 0xffffff)) {
      // The packet before sent again (go-back-N, IBTA vol. 1 §9.7.5.1.3): already taken.
      f.packets = part.packets;
      f.length = part.length;
      return f;
    }
    if (b.psn !== part.nextPsn || part.length + len > MAX_SEND) {
      sends.delete(key);
      f.error = new WireError(
        WireErrorCode.BadField,
        p.bthOff,
        b.psn !== part.nextPsn
          ? `a SEND's packet with PSN ${b.psn} where ${part.nextPsn} was next: the message is dropped`
          : `a SEND of more than ${MAX_SEND} bytes: dropped`,
      );
      return f;
    }
    part.chunks.push(bytes.slice());
    part.length += len;
    part.packets++;
    part.nextPsn = (b.psn + 1) & 0xffffff;
    f.packets = part.packets;
    f.length = part.length;
    if (SEND_MIDDLE.has(op)) return f;
    sends.delete(key);
    const whole = joinChunks(part.chunks, part.length);
    return this.message(new DataView(whole.buffer), 0, whole.length, key, end, c, part.packets);
  }

  /** A whole SMB Direct message of `len` bytes at `at`. */
  private message(view: DataView, at: number, len: number, key: string, end: SmbdEnd, c: SmbdConnState, packets: number): SmbdFrame {
    const shape = smbdShape(view, at, len);
    const direction = toward(end.role);
    const fill = (f: SmbdFrame) => {
      f.packets = packets;
      f.length = len;
      return f;
    };
    if (shape === 'negotiate-request' && end.role !== 'client') {
      const f = fill(frame('negotiate-request', 'to-server'));
      f.negotiateRequest = parseNegotiateRequest(view, at, at + len);
      return f;
    }
    if (shape === 'negotiate-response' && end.role !== 'server') {
      const f = fill(frame('negotiate-response', 'to-client'));
      f.negotiateResponse = parseNegotiateResponse(view, at, at + len);
      return f;
    }
    const f = fill(frame('data', direction));
    try {
      const t = parseDataTransfer(view, at, at + len);
      f.transfer = t;
      if (t.dataLength > 0) this.data(f, new Uint8Array(view.buffer, view.byteOffset + at + t.dataOffset, t.dataLength), t.remainingDataLength, key, c);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      f.error = e;
    }
    return f;
  }

  /** A data transfer's data: part of an SMB2 message, or the last or only part. */
  private data(f: SmbdFrame, data: Uint8Array, remaining: number, key: string, c: SmbdConnState): void {
    const frags = this.state.fragments;
    const part = frags.get(key);
    if (part !== undefined && remaining + data.length !== part.remaining) {
      // MS-SMBD §3.1.5.4: each data transfer's data and RemainingDataLength add up to the one before's remainder.
      f.error = new WireError(
        WireErrorCode.BadLength,
        8,
        `a data transfer of ${data.length} bytes leaving ${remaining} where ${part.remaining} were to come: the SMB2 message is dropped`,
      );
      frags.delete(key);
      return;
    }
    if (part === undefined) {
      if (remaining === 0) {
        f.transfers = 1;
        this.smb2(f, data, c);
        return;
      }
      if (data.length + remaining > MAX_MESSAGE) {
        f.error = new WireError(WireErrorCode.BadLength, 8, `an SMB2 message of ${data.length + remaining} bytes: more than ${MAX_MESSAGE}`);
        return;
      }
      frags.set(key, { chunks: [data.slice()], length: data.length, remaining, transfers: 1 });
      capMap(frags, MAX_PARTIAL);
      f.transfers = 1;
      return;
    }
    part.chunks.push(data.slice());
    part.length += data.length;
    part.remaining = remaining;
    part.transfers++;
    f.transfers = part.transfers;
    if (remaining > 0) return;
    frags.delete(key);
    this.smb2(f, joinChunks(part.chunks, part.length), c);
  }

  /**
   * A whole SMB2 message: each command of its NextCommand chain (MS-SMB2 §2.2.1: the offset of the
   * next header from this one, 8-byte aligned; 0 on the last). A malformed first command throws;
   * a later one ends the chain with the frame's error, the commands before it kept.
   */
  private smb2(f: SmbdFrame, msg: Uint8Array, c: SmbdConnState): void {
    const v = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
    const first = this.command(v, 0, c);
    const m: Smb2Message = { ...first, commands: [first], length: msg.length };
    f.smb2 = m;
    f.of = first.of;
    if (f.direction === null) f.direction = isResponse(first.header) ? 'to-client' : 'to-server';
    let part = first;
    while (part.header.nextCommand !== 0) {
      const next = part.offset + part.header.nextCommand;
      try {
        if (m.commands.length >= MAX_COMPOUND)
          throw new WireError(WireErrorCode.BadLength, part.offset + 20, `an SMB2 compound of more than ${MAX_COMPOUND} commands`);
        part = this.command(v, next, c);
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        f.error = e;
        return;
      }
      m.commands.push(part);
    }
  }

  /** The command whose header is at `off` of the message in `v`: read, and its request opened or answered. */
  private command(v: DataView, off: number, c: SmbdConnState): Smb2Part {
    const header = parseSmb2Header(v, off, v.byteLength);
    const next = header.nextCommand;
    if (next !== 0 && (next < SMB2_HEADER_LEN || next % 8 !== 0 || off + next > v.byteLength))
      throw new WireError(
        WireErrorCode.BadField,
        off + 20,
        `SMB2 NextCommand ${next}: the next header must start 8-byte aligned within the ${v.byteLength}-byte message (MS-SMB2 §2.2.1)`,
      );
    const size = next === 0 ? v.byteLength - off : next;
    // The command's own bytes: its body's offsets count from its header (MS-SMB2 §2.2.1).
    const cv = new DataView(v.buffer, v.byteOffset + off, size);
    const m: Smb2Part = { header, request: null, responseLength: null, channel: null, of: null, offset: off, size };
    const rw = header.command === Smb2Command.READ || header.command === Smb2Command.WRITE;
    const write = header.command === Smb2Command.WRITE;
    if (!isResponse(header)) {
      if (rw) m.request = parseReadWriteRequest(cv, write);
      m.channel = m.request?.channel ?? (header.command === Smb2Command.SESSION_SETUP ? parseSessionSetupChannel(cv) : null);
      c.requests.set(header.messageId, { command: header.command, descriptors: m.request?.descriptors ?? [] });
      capMap(c.requests, MAX_REQUESTS);
      return m;
    }
    const open = c.requests.get(header.messageId);
    if (open !== undefined) {
      m.of = { messageId: header.messageId, command: open.command };
      const interim = header.status === STATUS_PENDING && (header.flags & SMB2_FLAGS_ASYNC_COMMAND) !== 0;
      if (!interim) c.requests.delete(header.messageId);
    }
    if (rw && header.status === 0) m.responseLength = parseReadWriteResponseLength(cv, write);
    return m;
  }
}

function joinChunks(chunks: Uint8Array[], length: number): Uint8Array {
  const whole = new Uint8Array(length);
  let o = 0;
  for (const ch of chunks) {
    whole.set(ch, o);
    o += ch.length;
  }
  return whole;
}

/** The open request whose buffer descriptor has Token `token` and covers `va`. */
function findByToken(c: SmbdConnState, token: number, va: bigint): RequestRef | null {
  for (const [messageId, r] of c.requests) {
    for (const d of r.descriptors)
      if (d.token === token && va >= d.offset && va < d.offset + BigInt(Math.max(1, d.length))) return { messageId, command: r.command };
  }
  return null;
}

/** The request whose RDMA READ a response with PSN `psn` answers (the latest at or before it, within half the PSN space); an ending response lets go of those before. */
function readOf(c: SmbdConnState, psn: number, ends: boolean): RequestRef | null {
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
  return r.of;
}
