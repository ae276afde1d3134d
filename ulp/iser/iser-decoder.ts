/**
 * Which frames are iSER, and what they carry, frame after frame in capture order.
 *
 * Ownership follows Wireshark's packet-iser.c: it dissects a payload as iSER only when the
 * InfiniBand conversation's CM service ID is the RDMA IP CM service of a TCP port in its range
 * (3260 by default), or when the user configured the two ends by hand. Its opcode checks (control
 * PDU with no flags but W and R, Hello with version 10) run only on such a conversation: there is
 * no shape test standing alone, and an iSCSI BHS has no magic number to make one honest. So here:
 * an RDMA CM REQ to the IP CM service ID of a port in `ports` and the REP that answers it make both
 * QP ends iSER (frames to the REQ's sender go to the initiator, to the REP's sender to the target);
 * `qpns` (--decode-as) makes frames to a QPN iSER without a CM, their direction read from the
 * iSCSI opcode (RFC 7143 §11.1.1: 0x00-0x1f from the initiator).
 *
 * A message in several SEND packets (FIRST, MIDDLE..., LAST) is put together when the PSNs follow
 * each other; the LAST frame carries it. An RDMA WRITE (to the initiator's read buffer) and an RDMA
 * READ request (of its write buffer) belong to the task whose iSER header named the RETH's R_Key as
 * its read or write STag (RFC 7145 §7.3.1, §7.3.3); the WRITE's later packets follow its FIRST,
 * READ responses their request by PSN (IBTA vol. 1 §9.7.4.1.3). A task is forgotten at its SCSI
 * Response.
 */
import type { RocePacket } from '../../packets/decode';
import { frameFault, packetAddresses } from '../../packets/decode';
import { WireError, WireErrorCode } from '../../packets/errors';
import { Opcode } from '../../packets/opcodes';
import { GSI_QPN } from '../../packets/mad';
import { PortSpace, splitServiceId } from '../../packets/cm/service-id';
import { IP_CM_HEADER_LEN } from '../../packets/cm/ip-private-data';
import type { UlpDecoder, UlpRules } from '../ulp-decoder';
import { UlpName } from '../ulp-decoder';
import { FrameKeyCache } from '../frame-keys';
import { type IserCmPrivateData, parseIserCmPrivateData } from './cm-private-data';
import { type IserHeader, IserOpcode } from './iser-header';
import type { IscsiPdu } from './iscsi-pdu';
import { keyValues } from './iscsi-pdu';
import { type IscsiDetails, pduDetails } from './iscsi-details';
import { IscsiOpcode, fromInitiator } from './iscsi-names';
import { parseIserMessage } from './iser-message';
import { type IserConnState, type IserEnd, type IserEndRole, type IserState, type IserTaskRef, capSet, emptyIserState, endKey } from './iser-state';

/** The IANA port of iSCSI, the IP CM port of iSER's service ID (IANA iscsi-target; Wireshark.s iSER target port range). */
export const ISER_PORT = 3260;

const MAX_PENDING = 256;
const MAX_CONNS = 1024;
const MAX_TASKS = 256;
const MAX_READS = 64;
const MAX_MESSAGE = 1 << 20;
const PSN_HALF = 1 << 23;

export type IserFrameKind = 'cm-req' | 'cm-rep' | 'message' | 'fragment' | 'data' | 'other';
export type IserDirection = 'to-target' | 'to-initiator';

export interface IserFrame {
  kind: IserFrameKind;
  direction: IserDirection | null;
  /** The connection (the target's QP end, or a --decode-as pair); null for a CM REQ. */
  conn: string | null;
  cm: IserCmPrivateData | null;
  header: IserHeader | null;
  pdu: IscsiPdu | null;
  details: IscsiDetails | null;
  /** The task a data transfer or a SCSI Response belongs to. */
  of: IserTaskRef | null;
  packets: number;
  length: number;
  error: WireError | null;
}

function frame(kind: IserFrameKind, direction: IserDirection | null): IserFrame {
  return { kind, direction, conn: null, cm: null, header: null, pdu: null, details: null, of: null, packets: 1, length: 0, error: null };
}

const SEND_FIRST = new Set<number>([Opcode.RC_SEND_FIRST]);
const SEND_MIDDLE = new Set<number>([Opcode.RC_SEND_MIDDLE]);
const SEND_LAST = new Set<number>([Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.RC_SEND_LAST_WITH_INVALIDATE]);
const SEND_ONLY = new Set<number>([Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_SEND_ONLY_WITH_INVALIDATE]);
const WRITE_STARTS = new Set<number>([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE]);
const WRITE_REST = new Set<number>([Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_LAST, Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE]);
const READ_RESPONSES = new Set<number>([
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
]);
const READ_ENDS = new Set<number>([Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY]);

export class IserDecoder implements UlpDecoder<IserFrame, IserState> {
  readonly name = UlpName.Iser;
  private readonly ports: ReadonlySet<number>;
  private readonly qpns: ReadonlySet<number>;
  private readonly owned = new Set<number>();
  private readonly keys = new FrameKeyCache();

  constructor(
    rules: UlpRules = { ports: [ISER_PORT], qpns: [] },
    readonly state: IserState = emptyIserState(),
  ) {
    this.ports = new Set(rules.ports);
    this.qpns = new Set(rules.qpns);
    for (const k of state.ends.keys()) this.owned.add(Number(k.slice(k.lastIndexOf('/') + 1)));
  }

  wants(destQp: number): boolean {
    return destQp === GSI_QPN || this.owned.has(destQp) || this.qpns.has(destQp);
  }

  observe(p: RocePacket, view: DataView, start: number): IserFrame | null {
    const b = p.bth;
    if (b === null || !this.wants(b.destQp) || p.payloadOff < 0 || p.payloadCaptured !== p.payloadLength) return null;
    // A bad ICRC does not stop it (as in Wireshark); any other fault does.
    if (frameFault(p) !== null && p.icrcOk !== false) return null;
    if (p.mad !== null) return this.cm(p);
    const keys = this.keys.of(p, b.destQp);
    const key = keys.end;
    let end: IserEnd | undefined = this.state.ends.get(key);
    if (end === undefined && this.qpns.has(b.destQp)) end = { role: 'either', conn: `decode-as ${keys.pair}` };
    if (end === undefined) return null;
    const f = this.onConn(p, view, start + p.payloadOff, p.payloadLength, key, end);
    if (f !== null) f.conn = end.conn;
    return f;
  }

  private conn(name: string): IserConnState {
    let c = this.state.conns.get(name);
    if (c === undefined) {
      c = { tasks: new Map(), writing: null, reads: [] };
      capSet(this.state.conns, name, c, MAX_CONNS);
    }
    return c;
  }

  private setEnd(key: string, end: IserEnd): void {
    capSet(this.state.ends, key, end, 2 * MAX_CONNS);
    this.owned.add(Number(key.slice(key.lastIndexOf('/') + 1)));
  }

  private cm(p: RocePacket): IserFrame | null {
    const mad = p.mad;
    const m = mad?.cm ?? null;
    if (mad === null || m === null) return null;
    const { src, dst } = packetAddresses(p);
    const s = this.state;
    const pd = m.name === 'REQ' || m.name === 'REP' ? m.fields.privateData : null;
    if (m.name === 'REQ') {
      const sid = splitServiceId(m.fields.serviceId);
      if (mad.ipCm === null || sid === null || sid.portSpace !== PortSpace.TCP || !this.ports.has(sid.port)) return null;
      const f = frame('cm-req', null);
      f.cm = this.privateData(f, pd, IP_CM_HEADER_LEN);
      const i = s.pending.findIndex((r) => r.commId === m.fields.localCommId && r.initiatorAddr === src);
      if (i >= 0) s.pending.splice(i, 1);
      s.pending.push({ commId: m.fields.localCommId, initiatorAddr: src, targetAddr: dst, initiatorQpn: m.fields.localQpn });
      if (s.pending.length > MAX_PENDING) s.pending.shift();
      return f;
    }
    if (m.name === 'REP') {
      const req = s.pending.find((r) => r.commId === m.fields.remoteCommId && r.targetAddr === src && r.initiatorAddr === dst);
      if (req === undefined) return null;
      const f = frame('cm-rep', null);
      f.cm = this.privateData(f, pd, 0);
      const target = endKey(src, m.fields.localQpn);
      this.conn(target);
      this.setEnd(target, { role: 'target', conn: target });
      this.setEnd(endKey(dst, req.initiatorQpn), { role: 'initiator', conn: target });
      f.conn = target;
      return f;
    }
    return null;
  }

  private privateData(f: IserFrame, pd: Uint8Array | null, off: number): IserCmPrivateData | null {
    if (pd === null) return null;
    try {
      return parseIserCmPrivateData(new DataView(pd.buffer, pd.byteOffset, pd.byteLength), off, pd.byteLength);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      f.error = e;
      return null;
    }
  }

  private onConn(p: RocePacket, view: DataView, at: number, len: number, key: string, end: IserEnd): IserFrame | null {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const c = this.conn(end.conn);
    if (SEND_FIRST.has(op) || SEND_MIDDLE.has(op) || SEND_LAST.has(op) || SEND_ONLY.has(op)) return this.send(p, view, at, len, key, end.role, c);
    // RDMA WRITEs and READ requests come from the target; READ responses go to it (RFC 7145 §7.3).
    if (WRITE_STARTS.has(op) || op === Opcode.RC_RDMA_READ_REQUEST) {
      const f = frame('data', 'to-initiator');
      f.length = op === Opcode.RC_RDMA_READ_REQUEST ? 0 : len;
      const r = p.reth;
      f.of = r === null ? null : taskByStag(c, r.rkey, r.va, op === Opcode.RC_RDMA_READ_REQUEST ? 'write' : 'read');
      if (op === Opcode.RC_RDMA_READ_REQUEST) {
        if (f.of !== null) {
          c.reads.push({ psn: b.psn, of: f.of });
          if (c.reads.length > MAX_READS) c.reads.shift();
        }
      } else c.writing = op === Opcode.RC_RDMA_WRITE_FIRST ? f.of : null;
      return f;
    }
    if (WRITE_REST.has(op)) {
      const f = frame('data', 'to-initiator');
      f.length = len;
      f.of = c.writing;
      if (op !== Opcode.RC_RDMA_WRITE_MIDDLE) c.writing = null;
      return f;
    }
    if (READ_RESPONSES.has(op)) {
      const f = frame('data', 'to-target');
      f.length = len;
      f.of = readOf(c, b.psn, READ_ENDS.has(op));
      return f;
    }
    return null;
  }

  private send(p: RocePacket, view: DataView, at: number, len: number, key: string, role: IserEndRole, c: IserConnState): IserFrame {
    const b = p.bth as NonNullable<RocePacket['bth']>;
    const op = b.opcode;
    const partials = this.state.partial;
    const direction: IserDirection | null = role === 'target' ? 'to-target' : role === 'initiator' ? 'to-initiator' : null;
    const bytes = new Uint8Array(view.buffer, view.byteOffset + at, len);
    if (SEND_ONLY.has(op)) {
      partials.delete(key);
      return this.message(view, at, len, direction, c, 1);
    }
    const f = frame('fragment', direction);
    if (SEND_FIRST.has(op)) {
      capSet(partials, key, { chunks: [bytes.slice()], length: len, nextPsn: (b.psn + 1) & 0xffffff, packets: 1 }, MAX_CONNS);
      f.length = len;
      return f;
    }
    const part = partials.get(key);
    if (part === undefined) {
      f.error = new WireError(WireErrorCode.BadField, p.bthOff, 'a later packet of an iSER message whose first packet was not seen');
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
          ? `an iSER message's packet with PSN ${b.psn} where ${part.nextPsn} was next: the message is dropped`
          : `an iSER message of more than ${MAX_MESSAGE} bytes: dropped`,
      );
      f.length = len;
      return f;
    }
    part.chunks.push(bytes.slice());
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
    for (const ch of part.chunks) {
      whole.set(ch, o);
      o += ch.length;
    }
    return this.message(new DataView(whole.buffer), 0, whole.length, direction, c, part.packets);
  }

  /** A whole iSER message; `direction` null (--decode-as) is read from the iSCSI opcode. */
  private message(view: DataView, at: number, len: number, direction: IserDirection | null, c: IserConnState, packets: number): IserFrame {
    const f = frame('message', direction);
    f.packets = packets;
    f.length = len;
    try {
      const m = parseIserMessage(view, at, at + len);
      f.header = m.header;
      f.pdu = m.pdu;
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      f.kind = 'other';
      f.error = e;
      return f;
    }
    const pdu = f.pdu;
    if (pdu === null) return f;
    const d = pduDetails(pdu, keyValues);
    f.details = d;
    if (f.direction === null) f.direction = fromInitiator(pdu.opcode) ? 'to-target' : 'to-initiator';
    const h = f.header;
    if (pdu.opcode === IscsiOpcode.SCSI_COMMAND && d.scsiCommand !== null && h !== null && h.opcode === IserOpcode.ISCSI_CTRL) {
      const cdb = d.scsiCommand.cdb;
      capSet(
        c.tasks,
        pdu.initiatorTaskTag,
        {
          itt: pdu.initiatorTaskTag,
          scsiOpcode: cdb.opcode,
          name: cdb.name,
          writeStag: h.wsv ? h.writeStag : null,
          writeBaseOffset: h.writeBaseOffset,
          readStag: h.rsv ? h.readStag : null,
          readBaseOffset: h.readBaseOffset,
          length: d.scsiCommand.expectedDataTransferLength,
        },
        MAX_TASKS,
      );
    } else if (pdu.opcode === IscsiOpcode.SCSI_RESPONSE) {
      const t = c.tasks.get(pdu.initiatorTaskTag);
      if (t !== undefined) {
        f.of = { itt: t.itt, scsiOpcode: t.scsiOpcode, name: t.name };
        c.tasks.delete(t.itt);
      }
    }
    return f;
  }
}

/** The task whose `which` STag is `stag` and whose buffer covers `va`. */
function taskByStag(c: IserConnState, stag: number, va: bigint, which: 'read' | 'write'): IserTaskRef | null {
  for (const t of c.tasks.values()) {
    const s = which === 'read' ? t.readStag : t.writeStag;
    const base = which === 'read' ? t.readBaseOffset : t.writeBaseOffset;
    if (s === stag && va >= base && va < base + BigInt(Math.max(1, t.length))) return { itt: t.itt, scsiOpcode: t.scsiOpcode, name: t.name };
  }
  return null;
}

/** The task of the latest READ request at or before `psn` within half the PSN space; a response that ends a READ lets go of the requests up to it (responses come in request order, IBTA vol. 1 §9.5). */
function readOf(c: IserConnState, psn: number, ends: boolean): IserTaskRef | null {
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
