/**
 * The completion queue entry a response capsule carries (NVMe Base 2.0, "Completion Queue Entry"; NVMe
 * over Fabrics 1.1, "Capsules"; Linux include/linux/nvme.h `struct nvme_completion`): 16 bytes,
 * little-endian: the command-specific result (dwords 0-1), SQ head pointer, SQ identifier, command
 * identifier and the status field (bit 0 the phase tag, bits 8:1 the status code, 11:9 the status
 * code type, 13:12 command retry delay, 14 More, 15 Do Not Retry).
 */
import { need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';

export const CQE_LEN = 16;

export interface Cqe {
  /** Dwords 0-1, dword 0 in the low 32 bits. */
  result: bigint;
  sqHead: number;
  sqId: number;
  commandId: number;
  /** The 16-bit status field as carried (phase tag in bit 0). */
  status: number;
}

export function parseCqe(view: DataView, off: number, end: number): Cqe {
  need(end, off, CQE_LEN, 'NVMe completion queue entry');
  return {
    result: view.getBigUint64(off, true),
    sqHead: view.getUint16(off + 8, true),
    sqId: view.getUint16(off + 10, true),
    commandId: view.getUint16(off + 12, true),
    status: view.getUint16(off + 14, true),
  };
}

export function emitCqe(c: Cqe, view: DataView, off: number): number {
  checkU64(c.result, 'CQE result');
  checkUint(c.sqHead, 0xffff, 'CQE SQ head');
  checkUint(c.sqId, 0xffff, 'CQE SQ ID');
  checkUint(c.commandId, 0xffff, 'CQE command ID');
  checkUint(c.status, 0xffff, 'CQE status');
  view.setBigUint64(off, c.result, true);
  view.setUint16(off + 8, c.sqHead, true);
  view.setUint16(off + 10, c.sqId, true);
  view.setUint16(off + 12, c.commandId, true);
  view.setUint16(off + 14, c.status, true);
  return CQE_LEN;
}

/** Status code types (bits 11:9). */
export const StatusCodeType = { GENERIC: 0, COMMAND_SPECIFIC: 1, MEDIA: 2, PATH: 3, VENDOR: 7 } as const;

/** The status field's parts. */
export function statusParts(status: number): { sc: number; sct: number; crd: number; more: boolean; dnr: boolean; phase: number } {
  return {
    phase: status & 1,
    sc: (status >>> 1) & 0xff,
    sct: (status >>> 9) & 7,
    crd: (status >>> 12) & 3,
    more: (status & 0x4000) !== 0,
    dnr: (status & 0x8000) !== 0,
  };
}

/** The status field of code type `sct` and code `sc`, with Do Not Retry when `dnr`. */
export function statusField(sct: number, sc: number, dnr = false): number {
  checkUint(sct, 7, 'status code type');
  checkUint(sc, 0xff, 'status code');
  return (sc << 1) | (sct << 9) | (dnr ? 0x8000 : 0);
}

/** Generic command status (NVMe Base 2.0, "Generic Command Status Values"). */
const GENERIC: Readonly<Record<number, string>> = {
  0x00: 'Success',
  0x01: 'Invalid Command Opcode',
  0x02: 'Invalid Field in Command',
  0x03: 'Command ID Conflict',
  0x04: 'Data Transfer Error',
  0x05: 'Aborted: Power Loss',
  0x06: 'Internal Error',
  0x07: 'Command Abort Requested',
  0x08: 'Aborted: SQ Deleted',
  0x09: 'Aborted: Failed Fused',
  0x0a: 'Aborted: Missing Fused',
  0x0b: 'Invalid Namespace or Format',
  0x0c: 'Command Sequence Error',
  0x0d: 'Invalid SGL Segment Descriptor',
  0x0e: 'Invalid Number of SGL Descriptors',
  0x0f: 'Data SGL Length Invalid',
  0x10: 'Metadata SGL Length Invalid',
  0x11: 'SGL Descriptor Type Invalid',
  0x12: 'Invalid Use of Controller Memory Buffer',
  0x13: 'PRP Offset Invalid',
  0x14: 'Atomic Write Unit Exceeded',
  0x15: 'Operation Denied',
  0x16: 'SGL Offset Invalid',
  0x18: 'Host Identifier Inconsistent Format',
  0x19: 'Keep Alive Timer Expired',
  0x1a: 'Keep Alive Timeout Invalid',
  0x1b: 'Aborted: Preempt and Abort',
  0x1c: 'Sanitize Failed',
  0x1d: 'Sanitize In Progress',
  0x1e: 'SGL Data Block Granularity Invalid',
  0x1f: 'Command Not Supported for Queue in CMB',
  0x20: 'Namespace is Write Protected',
  0x21: 'Command Interrupted',
  0x22: 'Transient Transport Error',
  0x80: 'LBA Out of Range',
  0x81: 'Capacity Exceeded',
  0x82: 'Namespace Not Ready',
  0x83: 'Reservation Conflict',
  0x84: 'Format In Progress',
};

/** Command-specific status of the Fabrics Connect command (NVMe over Fabrics 1.1, Connect command). */
const CONNECT_SPECIFIC: Readonly<Record<number, string>> = {
  0x80: 'Connect Incompatible Format',
  0x81: 'Connect Controller Busy',
  0x82: 'Connect Invalid Parameters',
  0x83: 'Connect Restart Discovery',
  0x84: 'Connect Invalid Host',
};

/** Command-specific status of the admin commands (NVMe Base 2.0, "Command Specific Status Values"), the ones every command may meet. */
const COMMAND_SPECIFIC: Readonly<Record<number, string>> = {
  0x00: 'Completion Queue Invalid',
  0x01: 'Invalid Queue Identifier',
  0x02: 'Invalid Queue Size',
  0x03: 'Abort Command Limit Exceeded',
  0x05: 'Asynchronous Event Request Limit Exceeded',
  0x06: 'Invalid Firmware Slot',
  0x07: 'Invalid Firmware Image',
  0x08: 'Invalid Interrupt Vector',
  0x09: 'Invalid Log Page',
  0x0a: 'Invalid Format',
  0x0c: 'Invalid Queue Deletion',
  0x0d: 'Feature Identifier Not Saveable',
  0x0e: 'Feature Not Changeable',
  0x0f: 'Feature Not Namespace Specific',
  0x80: 'Conflicting Attributes',
  0x81: 'Invalid Protection Information',
  0x82: 'Attempted Write to Read Only Range',
};

/** Media and data integrity errors (NVMe Base 2.0, "Media and Data Integrity Errors"). */
const MEDIA: Readonly<Record<number, string>> = {
  0x80: 'Write Fault',
  0x81: 'Unrecovered Read Error',
  0x82: 'End-to-end Guard Check Error',
  0x83: 'End-to-end Application Tag Check Error',
  0x84: 'End-to-end Reference Tag Check Error',
  0x85: 'Compare Failure',
  0x86: 'Access Denied',
  0x87: 'Deallocated or Unwritten Logical Block',
};

/** Path related status (NVMe Base 2.0, "Path Related Status"). */
const PATH: Readonly<Record<number, string>> = {
  0x00: 'Internal Path Error',
  0x01: 'Asymmetric Access Persistent Loss',
  0x02: 'Asymmetric Access Inaccessible',
  0x03: 'Asymmetric Access Transition',
  0x60: 'Controller Pathing Error',
  0x70: 'Host Pathing Error',
  0x71: 'Command Aborted By Host',
};

/**
 * The name of a status field's code (`connect`: the completion of a Fabrics Connect, whose
 * command-specific codes are its own), or `SCT n SC 0xNN`.
 */
export function statusName(status: number, connect = false): string {
  const { sc, sct } = statusParts(status);
  const table =
    sct === StatusCodeType.GENERIC
      ? GENERIC
      : sct === StatusCodeType.COMMAND_SPECIFIC
        ? connect
          ? { ...COMMAND_SPECIFIC, ...CONNECT_SPECIFIC }
          : COMMAND_SPECIFIC
        : sct === StatusCodeType.MEDIA
          ? MEDIA
          : sct === StatusCodeType.PATH
            ? PATH
            : {};
  return table[sc] ?? `SCT ${sct} SC 0x${sc.toString(16).padStart(2, '0')}`;
}
