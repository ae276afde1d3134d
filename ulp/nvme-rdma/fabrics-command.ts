/**
 * Fabrics commands (opcode 0x7F; NVMe over Fabrics 1.1, "Fabrics Commands"; Linux include/linux/nvme.h
 * `struct nvmf_connect_command`, `nvmf_property_get_command`, `nvmf_property_set_command`,
 * `struct nvmf_connect_data`): the command type at byte 4; a Connect's record format, queue ID,
 * submission queue size (0-based), attributes and keep-alive timeout at bytes 40-51, and its 1024
 * bytes of data (host identifier, controller ID, subsystem and host NQNs); a Property Get's or
 * Set's attributes (bits 2:0: 0 = 4-byte, 1 = 8-byte property), offset and (Set) value. All
 * little-endian; parsers throw only `WireError`.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';
import { FabricsType } from './opcode-names';

/** Bytes of a Connect command's data. */
export const CONNECT_DATA_LEN = 1024;

export interface ConnectFields {
  recfmt: number;
  qid: number;
  /** 0-based: the queue holds sqsize + 1 entries. */
  sqsize: number;
  cattr: number;
  kato: number;
}

export interface PropertyFields {
  /** Attributes byte: bits 2:0 the size (0: 4 bytes, 1: 8 bytes). */
  attrib: number;
  offset: number;
  /** Property Set's value (null for a Property Get). */
  value: bigint | null;
}

/** A Fabrics command's type and, by type, its fields. */
export interface FabricsCommand {
  fctype: number;
  connect: ConnectFields | null;
  property: PropertyFields | null;
}

export interface ConnectData {
  /** 16 bytes. */
  hostId: Uint8Array;
  cntlid: number;
  subnqn: string;
  hostnqn: string;
}

/** The Fabrics fields of the SQE at `off` (64 bytes). */
export function parseFabricsCommand(view: DataView, off: number, end: number): FabricsCommand {
  need(end, off, 64, 'NVMe Fabrics command');
  const fctype = view.getUint8(off + 4);
  let connect: ConnectFields | null = null;
  let property: PropertyFields | null = null;
  if (fctype === FabricsType.CONNECT) {
    connect = {
      recfmt: view.getUint16(off + 40, true),
      qid: view.getUint16(off + 42, true),
      sqsize: view.getUint16(off + 44, true),
      cattr: view.getUint8(off + 46),
      kato: view.getUint32(off + 48, true),
    };
  } else if (fctype === FabricsType.PROPERTY_GET || fctype === FabricsType.PROPERTY_SET) {
    const attrib = view.getUint8(off + 40);
    const setValue = (attrib & 7) === 1 ? view.getBigUint64(off + 48, true) : BigInt(view.getUint32(off + 48, true));
    property = {
      attrib,
      offset: view.getUint32(off + 44, true),
      value: fctype === FabricsType.PROPERTY_SET ? setValue : null,
    };
  }
  return { fctype, connect, property };
}

/** Writes the Fabrics fields (bytes 4 and 40-63) into an SQE at `off`; the common fields are the SQE's. */
export function emitFabricsFields(c: FabricsCommand, view: DataView, off: number): void {
  checkUint(c.fctype, 0xff, 'fctype');
  view.setUint8(off + 4, c.fctype);
  for (let i = 40; i < 64; i++) view.setUint8(off + i, 0);
  if (c.connect !== null) {
    const k = c.connect;
    checkUint(k.recfmt, 0xffff, 'Connect recfmt');
    checkUint(k.qid, 0xffff, 'Connect qid');
    checkUint(k.sqsize, 0xffff, 'Connect sqsize');
    checkUint(k.cattr, 0xff, 'Connect cattr');
    checkUint(k.kato, 0xffffffff, 'Connect kato');
    view.setUint16(off + 40, k.recfmt, true);
    view.setUint16(off + 42, k.qid, true);
    view.setUint16(off + 44, k.sqsize, true);
    view.setUint8(off + 46, k.cattr);
    view.setUint32(off + 48, k.kato, true);
  }
  if (c.property !== null) {
    const p = c.property;
    checkUint(p.attrib, 0xff, 'property attributes');
    checkUint(p.offset, 0xffffffff, 'property offset');
    view.setUint8(off + 40, p.attrib);
    view.setUint32(off + 44, p.offset, true);
    if (p.value !== null) {
      checkU64(p.value, 'property value');
      if ((p.attrib & 7) === 1) view.setBigUint64(off + 48, p.value, true);
      else {
        if (p.value > 0xffffffffn) throw new WireError(WireErrorCode.BadValue, 0, 'a 4-byte property value must fit in 32 bits');
        view.setUint32(off + 48, Number(p.value), true);
      }
    }
  }
}

/** A NUL-padded text field of `len` bytes, as text up to its first NUL. */
function nqnAt(bytes: Uint8Array, off: number, len: number): string {
  let n = 0;
  while (n < len && bytes[off + n] !== 0) n++;
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(off, off + n));
}

export function parseConnectData(view: DataView, off: number, end: number): ConnectData {
  need(end, off, CONNECT_DATA_LEN, 'NVMe Fabrics Connect data');
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  return {
    hostId: bytes.slice(off, off + 16),
    cntlid: view.getUint16(off + 16, true),
    subnqn: nqnAt(bytes, off + 256, 256),
    hostnqn: nqnAt(bytes, off + 512, 256),
  };
}

/** The 1024 bytes of a Connect's data; an NQN of more than 255 bytes (it needs its NUL) is a BadValue. */
export function emitConnectData(d: ConnectData): Uint8Array {
  if (d.hostId.length !== 16) throw new WireError(WireErrorCode.BadValue, 0, 'the host identifier is 16 bytes');
  checkUint(d.cntlid, 0xffff, 'Connect data cntlid');
  const out = new Uint8Array(CONNECT_DATA_LEN);
  out.set(d.hostId, 0);
  new DataView(out.buffer).setUint16(16, d.cntlid, true);
  for (const [text, at, name] of [
    [d.subnqn, 256, 'subsystem NQN'],
    [d.hostnqn, 512, 'host NQN'],
  ] as const) {
    const b = new TextEncoder().encode(text);
    if (b.length > 255) throw new WireError(WireErrorCode.BadValue, 0, `the ${name} is ${b.length} bytes, more than 255`);
    out.set(b, at);
  }
  return out;
}

/** The controller properties a host reads and writes at connect time (NVMe Base 2.0, "Property Definition"), by offset. */
export const PROPERTY_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'CAP',
  0x08: 'VS',
  0x14: 'CC',
  0x1c: 'CSTS',
  0x20: 'NSSR',
});
