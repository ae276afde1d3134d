/**
 * The submission queue entry a command capsule starts with (NVMe Base 2.0, "Submission Queue Entry"; NVMe over
 * Fabrics 1.1, "Capsules"; Linux include/linux/nvme.h `struct nvme_common_command`): 64 bytes,
 * little-endian. Bytes 40-63 are command dwords 10-15, read by the command itself: a Read or Write
 * its starting LBA and block count, an Identify its CNS, a Fabrics command (opcode 0x7F) its own
 * layout (fabrics-command.ts).
 */
import { need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';
import { type SglDescriptor, emitSgl, parseSgl } from './sgl';

export const SQE_LEN = 64;

export interface Sqe {
  opcode: number;
  /** Byte 1: fused operation (bits 1:0) and PSDT (bits 7:6: 0 PRP, 1 SGL with a metadata buffer, 2 SGL with a metadata SGL segment). */
  flags: number;
  commandId: number;
  nsid: number;
  metadata: bigint;
  sgl: SglDescriptor;
  /** Command dwords 10-15 (24 bytes), as carried. */
  cdw10to15: Uint8Array;
}

export function parseSqe(view: DataView, off: number, end: number): Sqe {
  need(end, off, SQE_LEN, 'NVMe submission queue entry');
  return {
    opcode: view.getUint8(off),
    flags: view.getUint8(off + 1),
    commandId: view.getUint16(off + 2, true),
    nsid: view.getUint32(off + 4, true),
    metadata: view.getBigUint64(off + 16, true),
    sgl: parseSgl(view, off + 24, end),
    cdw10to15: new Uint8Array(view.buffer, view.byteOffset + off + 40, 24).slice(),
  };
}

/** Writes the 64-byte SQE at `off` (command dwords 2-3 zero). */
export function emitSqe(s: Sqe, view: DataView, off: number): number {
  checkUint(s.opcode, 0xff, 'SQE opcode');
  checkUint(s.flags, 0xff, 'SQE flags');
  checkUint(s.commandId, 0xffff, 'SQE command ID');
  checkUint(s.nsid, 0xffffffff, 'SQE NSID');
  checkU64(s.metadata, 'SQE metadata pointer');
  checkUint(s.cdw10to15.length, 24, 'SQE command dwords 10-15 length');
  for (let i = 0; i < SQE_LEN; i++) view.setUint8(off + i, 0);
  view.setUint8(off, s.opcode);
  view.setUint8(off + 1, s.flags);
  view.setUint16(off + 2, s.commandId, true);
  view.setUint32(off + 4, s.nsid, true);
  view.setBigUint64(off + 16, s.metadata, true);
  emitSgl(s.sgl, view, off + 24);
  for (let i = 0; i < s.cdw10to15.length; i++) view.setUint8(off + 40 + i, s.cdw10to15[i] as number);
  return SQE_LEN;
}

/**
 * Byte 1 with PSDT 01b: SGLs for the data, the metadata pointer the address of one contiguous buffer.
 * NVMe over Fabrics requires it (NVMe-oF 1.1 §2.2, "Submission Queue Entry"); Linux's host sends it
 * (nvme.h NVME_CMD_SGL_METABUF, 1 << 6) and nvmet refuses anything else with Invalid Field.
 */
export const SQE_FLAGS_SGL_METABUF = 0x40;
/** Byte 1's PSDT bits (7:6) and fused-operation bits (1:0). */
export const SQE_FLAGS_PSDT_MASK = 0xc0;
export const SQE_FLAGS_FUSE_MASK = 0x03;

/** Command dwords 10-15 of a Read or Write: starting LBA (64 bits) and number of logical blocks (0-based, 16 bits). */
export function rwDwords(slba: bigint, blocks: number): Uint8Array {
  checkU64(slba, 'starting LBA');
  checkUint(blocks - 1, 0xffff, 'number of logical blocks - 1');
  const out = new Uint8Array(24);
  const v = new DataView(out.buffer);
  v.setBigUint64(0, slba, true);
  v.setUint16(8, blocks - 1, true);
  return out;
}

/**
 * The little-endian 32-bit word at `at` of `cdw`, read byte by byte: a DataView over an SQE's
 * dwords (a small copy) makes V8 give the copy a buffer of its own first, which cost more than
 * printing the command (a few hundred nanoseconds per call).
 */
function le32(cdw: Uint8Array, at: number): number {
  return ((cdw[at] as number) | ((cdw[at + 1] as number) << 8) | ((cdw[at + 2] as number) << 16) | ((cdw[at + 3] as number) << 24)) >>> 0;
}

/** Starting LBA and block count (1-based) from a Read's or Write's command dwords 10-15. */
export function readRw(cdw: Uint8Array): { slba: bigint; blocks: number } {
  if (cdw.length < 10) throw new RangeError(`a Read's or Write's command dwords are 10 bytes at least, not ${cdw.length}`);
  const lo = le32(cdw, 0);
  const hi = le32(cdw, 4);
  return { slba: hi === 0 ? BigInt(lo) : (BigInt(hi) << 32n) | BigInt(lo), blocks: ((cdw[8] as number) | ((cdw[9] as number) << 8)) + 1 };
}

/** Command dword 10 as a number (an Identify's CNS is its low byte). */
export function cdw10(cdw: Uint8Array): number {
  if (cdw.length < 4) throw new RangeError(`command dword 10 is 4 bytes, not ${cdw.length}`);
  return le32(cdw, 0);
}

/** Command dwords 10-15 with dword 10 set (the rest zero). */
export function dword10(value: number): Uint8Array {
  checkUint(value, 0xffffffff, 'command dword 10');
  const out = new Uint8Array(24);
  new DataView(out.buffer).setUint32(0, value, true);
  return out;
}
