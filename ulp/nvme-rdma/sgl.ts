/**
 * The SGL descriptor in a command's data pointer (NVMe Base 2.0, "Scatter Gather List"; NVMe over
 * Fabrics 1.1, the RDMA transport binding; Linux include/linux/nvme.h `struct nvme_sgl_desc`,
 * `struct nvme_keyed_sgl_desc`): 16 bytes, the last of which is the type in its high nibble and the
 * sub type in its low one. Over RDMA a host names its memory with a keyed data block (type 0x4:
 * 64-bit address, 24-bit length, 32-bit R_Key; sub type 0xF asks the controller to invalidate the
 * key with its response) or points into the capsule itself (data block, sub type 0x1: an offset and
 * a 32-bit length). Little-endian.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';

export const SGL_DESC_LEN = 16;

/** Descriptor types (the high nibble of byte 15). */
export const SglType = {
  DATA_BLOCK: 0x0,
  BIT_BUCKET: 0x1,
  SEGMENT: 0x2,
  LAST_SEGMENT: 0x3,
  KEYED_DATA_BLOCK: 0x4,
  TRANSPORT_DATA_BLOCK: 0x5,
} as const;

/** Sub types (the low nibble): an address, an offset into the capsule, a key to invalidate. */
export const SglSubtype = {
  ADDRESS: 0x0,
  OFFSET: 0x1,
  INVALIDATE_KEY: 0xf,
} as const;

/** The descriptor type bytes NVMe-oF over RDMA uses (nvme.h NVME_KEY_SGL_FMT_DATA_DESC << 4 | ...). */
export const SglFormat = {
  /** Keyed data block, address: the controller reads or writes host memory with RDMA READ/WRITE. */
  KEYED: 0x40,
  /** Keyed data block, invalidate key: the same, and the response is a SEND with Invalidate of the key. */
  KEYED_INVALIDATE: 0x4f,
  /** Data block, offset: the data is in the capsule, after the SQE. */
  IN_CAPSULE: 0x01,
} as const;

/** The SGL descriptor: `key` is null for an unkeyed descriptor; `length` is 24 bits when keyed, 32 otherwise. */
export interface SglDescriptor {
  type: number;
  subtype: number;
  address: bigint;
  length: number;
  key: number | null;
}

export function parseSgl(view: DataView, off: number, end: number): SglDescriptor {
  need(end, off, SGL_DESC_LEN, 'SGL descriptor');
  const tb = view.getUint8(off + 15);
  const type = tb >>> 4;
  const subtype = tb & 0xf;
  const address = view.getBigUint64(off, true);
  if (type === SglType.KEYED_DATA_BLOCK) {
    const length = view.getUint8(off + 8) | (view.getUint8(off + 9) << 8) | (view.getUint8(off + 10) << 16);
    return { type, subtype, address, length, key: view.getUint32(off + 11, true) };
  }
  return { type, subtype, address, length: view.getUint32(off + 8, true), key: null };
}

/** Writes the descriptor at `off` (16 bytes, reserved bytes zero). */
export function emitSgl(d: SglDescriptor, view: DataView, off: number): number {
  checkUint(d.type, 0xf, 'SGL type');
  checkUint(d.subtype, 0xf, 'SGL subtype');
  checkU64(d.address, 'SGL address');
  for (let i = 0; i < SGL_DESC_LEN; i++) view.setUint8(off + i, 0);
  view.setBigUint64(off, d.address, true);
  if (d.type === SglType.KEYED_DATA_BLOCK) {
    checkUint(d.length, 0xffffff, 'keyed SGL length');
    if (d.key === null) throw new WireError(WireErrorCode.BadValue, 0, 'a keyed SGL descriptor needs a key');
    checkUint(d.key, 0xffffffff, 'keyed SGL key');
    view.setUint8(off + 8, d.length & 0xff);
    view.setUint8(off + 9, (d.length >>> 8) & 0xff);
    view.setUint8(off + 10, (d.length >>> 16) & 0xff);
    view.setUint32(off + 11, d.key, true);
  } else {
    checkUint(d.length, 0xffffffff, 'SGL length');
    view.setUint32(off + 8, d.length, true);
  }
  view.setUint8(off + 15, (d.type << 4) | d.subtype);
  return SGL_DESC_LEN;
}

/** A keyed data block descriptor (sub type 0xF with `invalidate`). */
export function keyedSgl(address: bigint, length: number, key: number, invalidate = false): SglDescriptor {
  return { type: SglType.KEYED_DATA_BLOCK, subtype: invalidate ? SglSubtype.INVALIDATE_KEY : SglSubtype.ADDRESS, address, length, key };
}

/** An in-capsule data block descriptor: `length` bytes at `offset` past the SQE. */
export function inCapsuleSgl(length: number, offset = 0n): SglDescriptor {
  return { type: SglType.DATA_BLOCK, subtype: SglSubtype.OFFSET, address: offset, length, key: null };
}

/** The descriptor in a few words: `keyed 0x… 4096 B key 0x…`, `in-capsule 512 B`. */
export function sglWords(d: SglDescriptor): string {
  const len = `${d.length} B`;
  if (d.type === SglType.KEYED_DATA_BLOCK)
    return `keyed${d.subtype === SglSubtype.INVALIDATE_KEY ? '+inv' : ''} 0x${d.address.toString(16)} ${len} key 0x${(d.key ?? 0).toString(16).padStart(8, '0')}`;
  if (d.type === SglType.DATA_BLOCK && d.subtype === SglSubtype.OFFSET) return `in-capsule ${len}${d.address === 0n ? '' : ` at +${d.address}`}`;
  return `SGL type 0x${d.type.toString(16)}/${d.subtype.toString(16)} ${len}`;
}
