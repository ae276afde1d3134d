/**
 * The iSER header (RFC 7145 §9.2 and §9.3): 28 bytes at the front of every iSER message sent with
 * an RDMA SEND. Its first byte holds the opcode in the high nibble:
 *
 * - 0x1, iSCSI control-type PDU: W (0x08) says the write STag and base offset are valid (the
 *   target RDMA READs the initiator's data from them: a SCSI write), R (0x04) the read STag and
 *   base offset (the target RDMA WRITEs the data there: a SCSI read); then 3 reserved bytes, write
 *   STag (4), write base offset (8), read STag (4), read base offset (8), all big-endian; the
 *   iSCSI PDU follows.
 * - 0x2, Hello (§9.3, iWARP): byte 1 MaxVer | MinVer (4 bits each), bytes 2-3 iSER-IRD.
 * - 0x3, HelloReply: REJ (0x01) in byte 0, byte 1 MaxVer | CurVer, bytes 2-3 iSER-ORD.
 *
 * The iSER version of RFC 7145 is 10 (0xA). `parseIserHeader` throws only `WireError`.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';

export const ISER_HEADER_LEN = 28;
/** RFC 7145 §9.3: the version this specification defines. */
export const ISER_VERSION = 10;

export const IserOpcode = {
  ISCSI_CTRL: 0x1,
  HELLO: 0x2,
  HELLO_REPLY: 0x3,
} as const;
export type IserOpcode = (typeof IserOpcode)[keyof typeof IserOpcode];

/** Flag bits of byte 0 (RFC 7145 §9.2, §9.3). */
export const ISER_WSV = 0x08;
export const ISER_RSV = 0x04;
export const ISER_REJ = 0x01;

export interface IserControl {
  opcode: typeof IserOpcode.ISCSI_CTRL;
  /** Byte 0 whole (opcode and flags). */
  flags: number;
  /** W: write STag valid. */
  wsv: boolean;
  /** R: read STag valid. */
  rsv: boolean;
  writeStag: number;
  writeBaseOffset: bigint;
  readStag: number;
  readBaseOffset: bigint;
}

export interface IserHello {
  opcode: typeof IserOpcode.HELLO;
  flags: number;
  maxVersion: number;
  minVersion: number;
  ird: number;
}

export interface IserHelloReply {
  opcode: typeof IserOpcode.HELLO_REPLY;
  flags: number;
  rej: boolean;
  maxVersion: number;
  currentVersion: number;
  ord: number;
}

export type IserHeader = IserControl | IserHello | IserHelloReply;

export const ISER_OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x1: 'iSCSI control-type PDU',
  0x2: 'Hello',
  0x3: 'HelloReply',
});

export function iserOpcodeName(op: number): string {
  return ISER_OPCODE_NAMES[op] ?? 'reserved';
}

/** The iSER header at `off` (the message ends at `end`). */
export function parseIserHeader(view: DataView, off: number, end: number): IserHeader {
  need(end, off, ISER_HEADER_LEN, 'iSER header');
  const flags = view.getUint8(off);
  const opcode = flags >>> 4;
  switch (opcode) {
    case IserOpcode.ISCSI_CTRL:
      return {
        opcode,
        flags,
        wsv: (flags & ISER_WSV) !== 0,
        rsv: (flags & ISER_RSV) !== 0,
        writeStag: view.getUint32(off + 4),
        writeBaseOffset: view.getBigUint64(off + 8),
        readStag: view.getUint32(off + 16),
        readBaseOffset: view.getBigUint64(off + 20),
      };
    case IserOpcode.HELLO: {
      const v = view.getUint8(off + 1);
      return { opcode, flags, maxVersion: v >>> 4, minVersion: v & 0xf, ird: view.getUint16(off + 2) };
    }
    case IserOpcode.HELLO_REPLY: {
      const v = view.getUint8(off + 1);
      return { opcode, flags, rej: (flags & ISER_REJ) !== 0, maxVersion: v >>> 4, currentVersion: v & 0xf, ord: view.getUint16(off + 2) };
    }
    default:
      throw new WireError(WireErrorCode.BadField, off, `iSER opcode ${opcode} is reserved (RFC 7145 §9.2: 1 control PDU, 2 Hello, 3 HelloReply)`);
  }
}

/** The 28 bytes of an iSER header; `flags` holds the opcode and the flag bits and must agree with the rest. */
export function emitIserHeader(h: IserHeader): Uint8Array {
  checkUint(h.flags, 0xff, 'iSER flags');
  if (h.flags >>> 4 !== h.opcode) throw new WireError(WireErrorCode.BadValue, 0, `iSER flags 0x${h.flags.toString(16)} do not hold opcode ${h.opcode}`);
  const out = new Uint8Array(ISER_HEADER_LEN);
  const v = new DataView(out.buffer);
  v.setUint8(0, h.flags);
  switch (h.opcode) {
    case IserOpcode.ISCSI_CTRL:
      if (h.wsv !== ((h.flags & ISER_WSV) !== 0) || h.rsv !== ((h.flags & ISER_RSV) !== 0))
        throw new WireError(WireErrorCode.BadValue, 0, 'iSER W and R must agree with the flags byte');
      checkUint(h.writeStag, 0xffffffff, 'write STag');
      checkUint(h.readStag, 0xffffffff, 'read STag');
      checkU64(h.writeBaseOffset, 'write base offset');
      checkU64(h.readBaseOffset, 'read base offset');
      v.setUint32(4, h.writeStag);
      v.setBigUint64(8, h.writeBaseOffset);
      v.setUint32(16, h.readStag);
      v.setBigUint64(20, h.readBaseOffset);
      break;
    case IserOpcode.HELLO:
      checkUint(h.maxVersion, 0xf, 'MaxVer');
      checkUint(h.minVersion, 0xf, 'MinVer');
      checkUint(h.ird, 0xffff, 'iSER-IRD');
      v.setUint8(1, (h.maxVersion << 4) | h.minVersion);
      v.setUint16(2, h.ird);
      break;
    case IserOpcode.HELLO_REPLY:
      if (h.rej !== ((h.flags & ISER_REJ) !== 0)) throw new WireError(WireErrorCode.BadValue, 0, 'iSER REJ must agree with the flags byte');
      checkUint(h.maxVersion, 0xf, 'MaxVer');
      checkUint(h.currentVersion, 0xf, 'CurVer');
      checkUint(h.ord, 0xffff, 'iSER-ORD');
      v.setUint8(1, (h.maxVersion << 4) | h.currentVersion);
      v.setUint16(2, h.ord);
      break;
  }
  return out;
}

/** A control-type header with W and R set where a STag is given (RFC 7145 §9.2: zero STag and offset otherwise). */
export function controlHeader(write: { stag: number; offset: bigint } | null, read: { stag: number; offset: bigint } | null): IserControl {
  return {
    opcode: IserOpcode.ISCSI_CTRL,
    flags: 0x10 | (write === null ? 0 : ISER_WSV) | (read === null ? 0 : ISER_RSV),
    wsv: write !== null,
    rsv: read !== null,
    writeStag: write?.stag ?? 0,
    writeBaseOffset: write?.offset ?? 0n,
    readStag: read?.stag ?? 0,
    readBaseOffset: read?.offset ?? 0n,
  };
}
