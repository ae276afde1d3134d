/**
 * An iSCSI PDU (RFC 7143 §11): the 48-byte Basic Header Segment, the additional header segments
 * (TotalAHSLength words of 4 bytes), and the data segment (DataSegmentLength bytes, padded to 4).
 * Behind an iSER header the PDU is what an RDMA SEND carries after byte 28 (RFC 7145 §7.2).
 *
 * BHS bytes common to every opcode: byte 0 holds I (0x40, immediate delivery) and the 6-bit
 * opcode; byte 1 F (0x80) and opcode-specific flags; byte 4 TotalAHSLength; bytes 5-7
 * DataSegmentLength; bytes 8-15 the LUN or opcode-specific fields; bytes 16-19 the Initiator Task
 * Tag; bytes 20-47 opcode-specific. `IscsiPdu` keeps the BHS bytes and the common fields;
 * `pduDetails` (iscsi-details.ts) names the rest by opcode. `parseIscsiPdu` throws only `WireError`.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';

export const BHS_LEN = 48;
/** Byte 0 of the BHS: the 6-bit iSCSI opcode (RFC 7143 §11.2.1.2). */
const OPCODE_MASK = 0x3f;

export interface IscsiPdu {
  /** The 48 BHS bytes as sent. */
  bhs: Uint8Array;
  opcode: number;
  immediate: boolean;
  /** Byte 1 whole (F and the opcode's flags). */
  flags: number;
  totalAhsLength: number;
  dataSegmentLength: number;
  initiatorTaskTag: number;
  ahs: Uint8Array;
  /** The data segment without its padding. */
  data: Uint8Array;
}

/** The PDU at `off` in a message ending at `end`. A data segment whose padding (RFC 7143 §11.1: to 4 bytes) was not sent is still read: the SEND ends the message. */
export function parseIscsiPdu(view: DataView, off: number, end: number): IscsiPdu {
  need(end, off, BHS_LEN, 'iSCSI Basic Header Segment');
  const bytes = (at: number, len: number) => new Uint8Array(view.buffer.slice(view.byteOffset + at, view.byteOffset + at + len));
  const totalAhsLength = view.getUint8(off + 4);
  const dataSegmentLength = (view.getUint8(off + 5) << 16) | view.getUint16(off + 6);
  const ahsLen = totalAhsLength * 4;
  need(end, off + BHS_LEN, ahsLen, `iSCSI additional header segments (TotalAHSLength ${totalAhsLength})`);
  const dataOff = off + BHS_LEN + ahsLen;
  if (dataOff + dataSegmentLength > end)
    throw new WireError(
      WireErrorCode.Truncated,
      dataOff,
      `iSCSI data segment of ${dataSegmentLength} bytes (DataSegmentLength) but only ${end - dataOff} remain`,
    );
  const b0 = view.getUint8(off);
  return {
    bhs: bytes(off, BHS_LEN),
    opcode: b0 & OPCODE_MASK,
    immediate: (b0 & 0x40) !== 0,
    flags: view.getUint8(off + 1),
    totalAhsLength,
    dataSegmentLength,
    initiatorTaskTag: view.getUint32(off + 16),
    ahs: bytes(off + BHS_LEN, ahsLen),
    data: bytes(dataOff, dataSegmentLength),
  };
}

/** The PDU's bytes: its BHS, AHS and data segment padded with zeros to 4 bytes. The BHS's lengths and common fields must agree with the rest. */
export function emitIscsiPdu(p: IscsiPdu): Uint8Array {
  if (p.bhs.length !== BHS_LEN) throw new WireError(WireErrorCode.BadValue, 0, `a BHS is ${BHS_LEN} bytes, not ${p.bhs.length}`);
  if (p.ahs.length % 4 !== 0 || p.ahs.length / 4 !== p.totalAhsLength || p.totalAhsLength > 0xff)
    throw new WireError(WireErrorCode.BadValue, 4, `TotalAHSLength ${p.totalAhsLength} does not match ${p.ahs.length} AHS bytes`);
  if (p.data.length !== p.dataSegmentLength || p.dataSegmentLength > 0xffffff)
    throw new WireError(WireErrorCode.BadValue, 5, `DataSegmentLength ${p.dataSegmentLength} does not match ${p.data.length} data bytes`);
  const v = new DataView(p.bhs.buffer, p.bhs.byteOffset, BHS_LEN);
  const same =
    (v.getUint8(0) & OPCODE_MASK) === p.opcode &&
    ((v.getUint8(0) & 0x40) !== 0) === p.immediate &&
    v.getUint8(1) === p.flags &&
    v.getUint8(4) === p.totalAhsLength &&
    ((v.getUint8(5) << 16) | v.getUint16(6)) === p.dataSegmentLength &&
    v.getUint32(16) === p.initiatorTaskTag;
  if (!same) throw new WireError(WireErrorCode.BadValue, 0, 'the BHS bytes do not hold the PDU opcode, flags, lengths and task tag given');
  const pad = (4 - (p.data.length % 4)) % 4;
  const out = new Uint8Array(BHS_LEN + p.ahs.length + p.data.length + pad);
  out.set(p.bhs, 0);
  out.set(p.ahs, BHS_LEN);
  out.set(p.data, BHS_LEN + p.ahs.length);
  return out;
}

/** What a builder writes into a BHS: the common fields, then opcode-specific bytes by offset. */
export interface BhsSpec {
  opcode: number;
  immediate?: boolean | undefined;
  flags: number;
  initiatorTaskTag: number;
  /** Bytes 8-15 (LUN or opcode-specific). */
  word8?: bigint;
  byte2?: number;
  byte3?: number;
  /** 32-bit words at byte offsets 20..44. */
  words?: Readonly<Record<number, number>>;
  /** 16-bit values by byte offset. */
  halves?: Readonly<Record<number, number>>;
  /** Raw bytes by offset (a CDB at 32, an ISID at 8). */
  raw?: ReadonlyArray<readonly [number, Uint8Array]>;
  ahs?: Uint8Array | undefined;
  data?: Uint8Array | undefined;
}

/** A PDU built from `s` (the generator's and the tests' way of writing one). */
export function buildPdu(s: BhsSpec): IscsiPdu {
  const bhs = new Uint8Array(BHS_LEN);
  const v = new DataView(bhs.buffer);
  const ahs = s.ahs ?? new Uint8Array(0);
  const data = s.data ?? new Uint8Array(0);
  v.setUint8(0, (s.immediate === true ? 0x40 : 0) | (s.opcode & OPCODE_MASK));
  v.setUint8(1, s.flags);
  v.setUint8(2, s.byte2 ?? 0);
  v.setUint8(3, s.byte3 ?? 0);
  v.setUint8(4, ahs.length / 4);
  v.setUint8(5, data.length >>> 16);
  v.setUint16(6, data.length & 0xffff);
  v.setBigUint64(8, s.word8 ?? 0n);
  v.setUint32(16, s.initiatorTaskTag);
  for (const [at, w] of Object.entries(s.words ?? {})) v.setUint32(Number(at), w);
  for (const [at, h] of Object.entries(s.halves ?? {})) v.setUint16(Number(at), h);
  for (const [at, b] of s.raw ?? []) bhs.set(b, at);
  return {
    bhs,
    opcode: s.opcode & OPCODE_MASK,
    immediate: s.immediate === true,
    flags: s.flags,
    totalAhsLength: ahs.length / 4,
    dataSegmentLength: data.length,
    initiatorTaskTag: s.initiatorTaskTag,
    ahs,
    data,
  };
}

/** Text and Login data: `key=value` pairs, each ended by a NUL (RFC 7143 §6.1). */
export function keyValues(data: Uint8Array): string[] {
  return Buffer.from(data)
    .toString('utf8')
    .split('\0')
    .filter((s) => s.length > 0);
}

export function keyValueData(pairs: readonly string[]): Uint8Array {
  return new Uint8Array(Buffer.from(pairs.map((p) => `${p}\0`).join(''), 'utf8'));
}
