/**
 * Which frames are NVMe-oF, and what they carry, frame after frame in capture order.
 *
 * Ownership follows Wireshark (packet-infiniband.c keeps the CM REQ's service ID and private data
 * per conversation; packet-nvme-rdma.c looks the conversation up by destination address and QPN):
 * an RDMA CM REQ to the IP CM service ID of a TCP port in `ports` (0x0000000001060000 | 4420 by
 * default) opens an NVMe-oF connection, and the REP that answers it (its remote communication ID
 * is the REQ's local one, from the REQ's destination to its source) makes both QP ends NVMe-oF:
 * frames to the REP's QPN at the REP's sender travel to the controller, frames to the REQ's QPN at
 * the REQ's sender travel to the host. `qpns` (--decode-as qpn=Q=nvme) makes frames to QPN Q
 * NVMe-oF without the CM, each frame's direction read from its shape (a SEND of 16 bytes is a
 * response capsule, one of 64 or more a command capsule).
 *
 * A capsule that spans several SEND packets (FIRST, MIDDLE..., LAST) is put together from their
 * payloads when their PSNs follow each other; the LAST frame carries it.
 *
 * The result depends only on the frames seen and their order, never on the ICRC check (a frame
 * with a bad ICRC counts, as in Wireshark) or on how many threads decode: the state
 * (conversation-state.ts) is plain data that the capture engine carries from batch to batch.
 */
import type { RocePacket } from '../../packets/decode';
import { frameFault, packetAddresses } from '../../packets/decode';
import { WireError, WireErrorCode } from '../../packets/errors';
import { Opcode } from '../../packets/opcodes';
import { GSI_QPN } from '../../packets/mad';
import { PortSpace, splitServiceId } from '../../packets/cm/service-id';
import { IP_CM_HEADER_LEN } from '../../packets/cm/ip-private-data';
import { type NvmeCmRej, type NvmeCmRep, type NvmeCmReq, parseNvmeCmRej, parseNvmeCmRep, parseNvmeCmReq } from './cm-private-data';
import { type NvmeCommand, decodeCommandCapsule, decodeResponseCapsule } from './capsule';
import type { Cqe } from './cqe';
import { CQE_LEN } from './cqe';
import { SQE_LEN } from './sqe';
import { FabricsType } from './opcode-names';
import { SglType } from './sgl';
import {
  type EndRole,
  type NvmeConversationState,
  type OpenCommand,
  type PartialCapsule,
  type QpEnd,
  type QueueState,
  type ReadOfCommand,
  emptyState,
  endKey,
} from './conversation-state';
import { UlpName, type UlpDecoder, type UlpRules } from '../ulp-decoder';

/** The IANA port of NVMe-oF over RDMA (the IP CM port of its service ID). */
export const NVME_RDMA_PORT = 4420;

/** How frames are assigned to NVMe-oF: IP CM ports whose CM connections are NVMe-oF, and QPNs that are whatever the CM said. */
export type NvmeRules = UlpRules;

export const DEFAULT_NVME_RULES: Readonly<NvmeRules> = Object.freeze({ ports: [NVME_RDMA_PORT], qpns: [] });

/** Requests awaiting their REP kept at most (the oldest is forgotten first). */
const MAX_PENDING = 256;
/** READ requests of commands' data remembered per queue, at most (the oldest is forgotten first). */
const MAX_READS = 64;
/** PSNs are 24 bits: a response more than half the space after a request does not answer it. */
const PSN_HALF = 1 << 23;
/** Bytes of a capsule put together from packets, at most (an in-capsule data size is a few KiB to 16 KiB in practice). */
const MAX_CAPSULE = 1 << 20;

export type NvmeFrameKind = 'cm-req' | 'cm-rep' | 'cm-rej' | 'command' | 'completion' | 'fragment' | 'data' | 'other';

/** The command a completion or a data transfer belongs to. */
export interface CommandRef {
  commandId: number;
  opcode: number;
  fctype: number | null;
}

/** What a frame of an NVMe-oF conversation carries. */
export interface NvmeFrame {
  kind: NvmeFrameKind;
  /** Toward the controller or the host (null for a CM frame). */
  direction: 'to-target' | 'to-host' | null;
  /** The queue ID (0: the admin queue), when known. */
  qid: number | null;
  cmReq: NvmeCmReq | null;
  cmRep: NvmeCmRep | null;
  cmRej: NvmeCmRej | null;
  command: NvmeCommand | null;
  completion: Cqe | null;
  /** The command a completion or data transfer answers, when it was seen. */
  of: CommandRef | null;
  /**
   * The queue the frame belongs to (one per queue pair: the controller's QP end, or a --decode-as
   * pair), for what is kept per queue; null for a CM frame other than a REP.
   */
  queue: string | null;
  /** Packets the capsule came in (1: SEND ONLY; for a fragment, those so far). */
  packets: number;
  /** Bytes of the capsule (a fragment: so far), or of the data in this frame. */
  length: number;
  error: WireError | null;
}

function frame(kind: NvmeFrameKind, direction: NvmeFrame['direction'], qid: number | null): NvmeFrame {
  return {
    kind,
    direction,
    qid,
    cmReq: null,
    cmRep: null,
    cmRej: null,
    command: null,
    completion: null,
    of: null,
    queue: null,
    packets: 1,
    length: 0,
    error: null,
  };
}

const SEND_FIRST = new Set([Opcode.RC_SEND_FIRST]);
const SEND_MIDDLE = new Set([Opcode.RC_SEND_MIDDLE]);
const SEND_LAST = new Set([Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.RC_SEND_LAST_WITH_INVALIDATE]);
const SEND_ONLY = new Set([Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_SEND_ONLY_WITH_INVALIDATE]);
/** Requests whose RETH names the host memory of a keyed SGL. */
const KEYED_REQUESTS = new Set([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_READ_REQUEST]);
const READ_RESPONSES = new Set([
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
]);
const READ_RESPONSE_ENDS = new Set([Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY]);
const DATA = new Set([
  Opcode.RC_RDMA_WRITE_MIDDLE,
  Opcode.RC_RDMA_WRITE_LAST,
  Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
]);

/** An entry of `state.ends` found for frames to an IPv4 address and a QPN, with its key. */
interface Ipv4End {
  dst: number;
  key: string;
  end: QpEnd;
}

/** What an opcode is here, as bits (the sets above, one array read a frame in place of several set lookups). */
const IS_SEND = 1;
const IS_KEYED = 2;
const IS_DATA = 4;
const IS_READ_RESPONSE = 8;
const IS_READ_RESPONSE_END = 16;
const OPCODE_ROLES: Uint8Array = (() => {
  const roles = new Uint8Array(256);
  const mark = (ops: ReadonlySet<number>, bit: number): void => {
    for (const op of ops) roles[op] = (roles[op] as number) | bit;
  };
  for (const set of [SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY]) mark(set, IS_SEND);
  mark(KEYED_REQUESTS, IS_KEYED);
  mark(DATA, IS_DATA);
  mark(READ_RESPONSES, IS_READ_RESPONSE);
  mark(READ_RESPONSE_ENDS, IS_READ_RESPONSE_END);
  return roles;
})();

export class NvmeDecoder implements UlpDecoder<NvmeFrame, NvmeConversationState> {
  readonly name = UlpName.Nvme;
  private readonly ports: ReadonlySet<number>;
  private readonly qpns: ReadonlySet<number>;
  /** The QPNs of `state.ends`, for a quick "not ours". */
  private readonly owned = new Set<number>();
  /**
   * `state.ends` looked up by IPv4 destination and QPN, by QPN: the key as a string (an address
   * spelled out and joined to the QPN, then hashed) cost more than the rest of a data frame's
   * decoding. Emptied whenever `state.ends` changes.
   */
  private readonly ipv4Ends = new Map<number, Ipv4End>();

  constructor(
    rules: NvmeRules = DEFAULT_NVME_RULES,
    /** Where to start (a batch's carried state); the decoder changes it as frames come. */
    readonly state: NvmeConversationState = emptyState(),
  ) {
    this.ports = new Set(rules.ports);
    this.qpns = new Set(rules.qpns);
    for (const k of state.ends.keys()) this.owned.add(Number(k.slice(k.lastIndexOf('/') + 1)));
  }

  /** False when no frame to `destQp` can be NVMe-oF or change the state (a cheap test before decoding a frame in full). */
  wants(destQp: number): boolean {
    return destQp === GSI_QPN || this.owned.has(destQp) || this.qpns.has(destQp);
  }

  /**
   * Takes the next frame of the capture: `p` decoded from the frame at `start` of `view`. Returns
   * what it carries for NVMe-oF, or null for a frame of no NVMe-oF conversation.
   */
  observe(p: RocePacket, view: DataView, start: number): NvmeFrame | null {
    const b = p.bth;
    if (b === null || !this.wants(b.destQp) || p.payloadOff < 0 || p.payloadCaptured !== p.payloadLength) return null;
    // A bad ICRC does not stop it (it is not checked with --no-icrc); any other fault does.
    if (frameFault(p) !== null && p.icrcOk !== false) return null;
    if (p.mad !== null) return this.cm(p);
    const ip = p.ipv4;
    const known = ip === null ? undefined : this.ipv4Ends.get(b.destQp);
    let key: string;
    let end: QpEnd | undefined;
    if (known !== undefined && known.dst === (ip as NonNullable<typeof ip>).dst) {
      key = known.key;
      end = known.end;
    } else {
      const { src, dst } = packetAddresses(p);
      key = endKey(dst, b.destQp);
      end = this.state.ends.get(key);
      if (end !== undefined && ip !== null) this.ipv4Ends.set(b.destQp, { dst: ip.dst, key, end });
      else if (end === undefined && this.qpns.has(b.destQp)) {
        const [lo, hi] = src < dst ? [src, dst] : [dst, src];
        end = { role: 'either', queue: `decode-as ${lo} ${hi}` };
      }
    }
    if (end === undefined) return null;
    const f = this.onQueue(p, view, start, key, end);
    if (f !== null) f.queue = end.queue;
    return f;
  }

  /** A frame to the QP end `end` (key `key`) of a queue. */
  private onQueue(p: RocePacket, view: DataView, start: number, key: string, end: QpEnd): NvmeFrame | null {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const q = this.queue(end.queue, null);
    const op = b.opcode;
    const at = start + p.payloadOff;
    const len = p.payloadLength;
    const role = OPCODE_ROLES[op & 0xff] as number;
    if ((role & IS_SEND) !== 0) return this.send(p, view, at, len, key, end.role, q);
    const direction = end.role === 'target' ? 'to-target' : end.role === 'host' ? 'to-host' : null;
    if ((role & IS_KEYED) !== 0 && p.reth !== null) {
      const f = frame('data', direction ?? 'to-host', q.qid);
      f.length = len;
      f.of = findByKey(q, p.reth.rkey, p.reth.va);
      if (op === Opcode.RC_RDMA_READ_REQUEST) {
        if (f.of !== null) {
          q.reads.push({ psn: b.psn, of: f.of });
          if (q.reads.length > MAX_READS) q.reads.shift();
        }
      } else if (op === Opcode.RC_RDMA_WRITE_FIRST) q.writing.set(f.direction ?? 'to-host', f.of);
      else q.writing.delete(f.direction ?? 'to-host');
      return f;
    }
    if ((role & IS_DATA) !== 0) {
      const f = frame('data', direction ?? (op >= Opcode.RC_RDMA_READ_RESPONSE_FIRST ? 'to-target' : 'to-host'), q.qid);
      f.length = len;
      if ((role & IS_READ_RESPONSE) !== 0) f.of = readOf(q, b.psn, (role & IS_READ_RESPONSE_END) !== 0);
      else {
        const way = f.direction ?? 'to-host';
        f.of = q.writing.get(way) ?? null;
        if (op !== Opcode.RC_RDMA_WRITE_MIDDLE) q.writing.delete(way);
      }
      return f;
    }
    return null;
  }

  private queue(name: string, qid: number | null): QueueState {
    let q = this.state.queues.get(name);
    if (q === undefined) {
      q = { qid, commands: new Map(), writing: new Map(), reads: [] };
      this.state.queues.set(name, q);
    }
    return q;
  }

  private setEnd(key: string, end: QpEnd): void {
    this.state.ends.set(key, end);
    this.ipv4Ends.clear();
    this.owned.add(Number(key.slice(key.lastIndexOf('/') + 1)));
  }

  private cm(p: RocePacket): NvmeFrame | null {
    const mad = p.mad;
    const m = mad?.cm ?? null;
    if (mad === null || m === null) return null;
    const { src, dst } = packetAddresses(p);
    const s = this.state;
    if (m.name === 'REQ') {
      const sid = splitServiceId(m.fields.serviceId);
      if (mad.ipCm === null || sid === null || sid.portSpace !== PortSpace.TCP || !this.ports.has(sid.port)) return null;
      const f = frame('cm-req', null, null);
      const pd = m.fields.privateData;
      try {
        f.cmReq = parseNvmeCmReq(new DataView(pd.buffer, pd.byteOffset, pd.byteLength), IP_CM_HEADER_LEN, pd.byteLength);
        f.qid = f.cmReq.qid;
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        f.error = e;
      }
      const i = s.pending.findIndex((r) => r.commId === m.fields.localCommId && r.hostAddr === src);
      if (i >= 0) s.pending.splice(i, 1);
      s.pending.push({ commId: m.fields.localCommId, hostAddr: src, targetAddr: dst, hostQpn: m.fields.localQpn, qid: f.qid });
      if (s.pending.length > MAX_PENDING) s.pending.shift();
      return f;
    }
    if (m.name === 'REP' || m.name === 'REJ') {
      const req = s.pending.find((r) => r.commId === m.fields.remoteCommId && r.targetAddr === src && r.hostAddr === dst);
      if (req === undefined) return null;
      const pd = m.fields.privateData;
      const view = new DataView(pd.buffer, pd.byteOffset, pd.byteLength);
      const f = frame(m.name === 'REP' ? 'cm-rep' : 'cm-rej', null, req.qid);
      try {
        if (m.name === 'REP') f.cmRep = parseNvmeCmRep(view, 0, pd.byteLength);
        else f.cmRej = parseNvmeCmRej(view, 0, pd.byteLength);
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        f.error = e;
      }
      if (m.name === 'REP') {
        const target = endKey(src, m.fields.localQpn);
        // A REP sent again (its RTU lost) finds the queue as it is.
        this.queue(target, req.qid);
        this.setEnd(target, { role: 'target', queue: target });
        this.setEnd(endKey(dst, req.hostQpn), { role: 'host', queue: target });
        f.queue = target;
      } else s.pending.splice(s.pending.indexOf(req), 1);
      return f;
    }
    return null;
  }

  /** A SEND packet: part of a capsule, or a whole one. */
  private send(p: RocePacket, view: DataView, at: number, len: number, key: string, role: EndRole, q: QueueState): NvmeFrame {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const partials = this.state.partial;
    const direction = role === 'target' ? 'to-target' : role === 'host' ? 'to-host' : null;
    if (SEND_ONLY.has(op)) {
      partials.delete(key);
      return this.capsule(view, at, len, role, q, 1);
    }
    if (SEND_FIRST.has(op)) {
      partials.set(key, { chunks: [packetBytes(view, at, len)], length: len, nextPsn: (b.psn + 1) & 0xffffff, packets: 1 });
      const f = frame('fragment', direction, q.qid);
      f.length = len;
      return f;
    }
    const part: PartialCapsule | undefined = partials.get(key);
    const f = frame('fragment', direction, q.qid);
    if (part === undefined) {
      f.error = new WireError(WireErrorCode.BadField, p.bthOff, 'a later packet of a capsule whose first packet was not seen');
      f.length = len;
      return f;
    }
    if (b.psn === ((part.nextPsn - 1) & 0xffffff)) {
      // The packet before sent again (go-back-N): already taken.
      f.packets = part.packets;
      f.length = part.length;
      return f;
    }
    if (b.psn !== part.nextPsn || part.length + len > MAX_CAPSULE) {
      partials.delete(key);
      f.error = new WireError(
        WireErrorCode.BadField,
        p.bthOff,
        b.psn !== part.nextPsn
          ? `a capsule's packet with PSN ${b.psn} where ${part.nextPsn} was next: the capsule is dropped`
          : `a capsule of more than ${MAX_CAPSULE} bytes: dropped`,
      );
      f.length = len;
      return f;
    }
    part.chunks.push(packetBytes(view, at, len));
    part.length += len;
    part.packets++;
    part.nextPsn = (b.psn + 1) & 0xffffff;
    if (SEND_MIDDLE.has(op)) {
      f.packets = part.packets;
      f.length = part.length;
      return f;
    }
    partials.delete(key);
    const whole = new Uint8Array(part.length);
    let o = 0;
    for (const c of part.chunks) {
      whole.set(c, o);
      o += c.length;
    }
    return this.capsule(new DataView(whole.buffer), 0, whole.length, role, q, part.packets);
  }

  /** A whole capsule of `len` bytes at `at`, sent to an end of `role`. */
  private capsule(view: DataView, at: number, len: number, role: EndRole, q: QueueState, packets: number): NvmeFrame {
    const isCommand = role === 'target' || (role === 'either' && len >= SQE_LEN);
    const isResponse = role === 'host' || (role === 'either' && len === CQE_LEN);
    const direction = role === 'target' || (role === 'either' && isCommand) ? 'to-target' : 'to-host';
    if (isCommand && len >= SQE_LEN) {
      const f = frame('command', direction, q.qid);
      f.packets = packets;
      f.length = len;
      try {
        const c = decodeCommandCapsule(view, at, len);
        f.command = c;
        const connect = c.fabrics?.connect ?? null;
        if (connect !== null && q.qid === null) q.qid = connect.qid;
        f.qid = q.qid;
        const keyed = c.sqe.sgl.type === SglType.KEYED_DATA_BLOCK;
        const open: OpenCommand = {
          opcode: c.sqe.opcode,
          fctype: c.fabrics?.fctype ?? null,
          key: keyed ? c.sqe.sgl.key : null,
          address: c.sqe.sgl.address,
          length: c.sqe.sgl.length,
        };
        q.commands.set(c.sqe.commandId, open);
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        f.error = e;
      }
      return f;
    }
    if (isResponse && len === CQE_LEN) {
      const f = frame('completion', direction, q.qid);
      f.packets = packets;
      f.length = len;
      const cqe = decodeResponseCapsule(view, at, len);
      f.completion = cqe;
      const open = q.commands.get(cqe.commandId);
      if (open !== undefined) {
        f.of = { commandId: cqe.commandId, opcode: open.opcode, fctype: open.fctype };
        q.commands.delete(cqe.commandId);
      }
      return f;
    }
    const f = frame('other', direction, q.qid);
    f.packets = packets;
    f.length = len;
    f.error = new WireError(
      WireErrorCode.BadLength,
      0,
      role === 'host'
        ? `a SEND to the host of ${len} bytes: a response capsule is ${CQE_LEN}`
        : `a SEND of ${len} bytes: a command capsule is at least ${SQE_LEN}${role === 'either' ? `, a response capsule ${CQE_LEN}` : ''}`,
    );
    return f;
  }
}

/**
 * The command whose READ request a response with PSN `psn` answers: the latest request at or before
 * `psn` (a READ's responses carry its PSN and the ones after, one per packet: IBTA vol. 1 §9.7.4.1.3),
 * within half the PSN space. A response that ends a READ (LAST or ONLY) lets go of the requests
 * before the one it answers: responses come in the order of the requests (§9.5).
 */
function readOf(q: QueueState, psn: number, ends: boolean): CommandRef | null {
  let best = -1;
  let bestDistance = PSN_HALF;
  const reads = q.reads;
  for (let i = 0; i < reads.length; i++) {
    const d = (psn - (reads[i] as ReadOfCommand).psn) & 0xffffff;
    if (d < bestDistance) {
      best = i;
      bestDistance = d;
    }
  }
  const r = q.reads[best];
  if (r === undefined) return null;
  if (ends) q.reads.splice(0, best + 1);
  return r.of;
}

/** The open command whose keyed SGL names `key` and covers `va`. */
function findByKey(q: QueueState, key: number, va: bigint): CommandRef | null {
  for (const [cid, c] of q.commands) {
    if (c.key === key && va >= c.address && va < c.address + BigInt(Math.max(1, c.length))) return { commandId: cid, opcode: c.opcode, fctype: c.fctype };
  }
  return null;
}

/** A copy of the `len` bytes at `at` (a capsule's part, kept until its LAST packet comes). */
function packetBytes(view: DataView, at: number, len: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset + at, len).slice();
}

/** True for a Fabrics Connect. */
export function isConnect(ref: CommandRef | null): boolean {
  return ref !== null && ref.fctype === FabricsType.CONNECT;
}
