/**
 * The names of NVMe command opcodes: the admin command set (NVMe Base 2.0, "Opcodes for Admin Commands"; Linux
 * include/linux/nvme.h enum nvme_admin_opcode), the NVM command set's I/O commands (NVM Command
 * Set 1.0, "Opcodes for NVM Commands"; enum nvme_opcode), and the Fabrics command types of opcode 0x7F (NVMe over
 * Fabrics 1.1, "Fabrics Command Types"; enum nvmf_fabrics_opcode / nvmf_capsule_command). Which table an opcode
 * is read from depends on the queue: queue 0 is the admin queue.
 */

/** The Fabrics command opcode (NVMe over Fabrics 1.1, "Fabrics Commands"): the same on every queue. */
export const FABRICS_OPCODE = 0x7f;

export const ADMIN_OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'Delete I/O SQ',
  0x01: 'Create I/O SQ',
  0x02: 'Get Log Page',
  0x04: 'Delete I/O CQ',
  0x05: 'Create I/O CQ',
  0x06: 'Identify',
  0x08: 'Abort',
  0x09: 'Set Features',
  0x0a: 'Get Features',
  0x0c: 'Async Event Request',
  0x0d: 'Namespace Management',
  0x10: 'Firmware Commit',
  0x11: 'Firmware Image Download',
  0x14: 'Device Self-test',
  0x15: 'Namespace Attachment',
  0x18: 'Keep Alive',
  0x19: 'Directive Send',
  0x1a: 'Directive Receive',
  0x1c: 'Virtualization Management',
  0x1d: 'NVMe-MI Send',
  0x1e: 'NVMe-MI Receive',
  0x7c: 'Doorbell Buffer Config',
  0x7f: 'Fabrics',
  0x80: 'Format NVM',
  0x81: 'Security Send',
  0x82: 'Security Receive',
  0x84: 'Sanitize',
  0x86: 'Get LBA Status',
});

export const IO_OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'Flush',
  0x01: 'Write',
  0x02: 'Read',
  0x04: 'Write Uncorrectable',
  0x05: 'Compare',
  0x08: 'Write Zeroes',
  0x09: 'Dataset Management',
  0x0c: 'Verify',
  0x0d: 'Reservation Register',
  0x0e: 'Reservation Report',
  0x11: 'Reservation Acquire',
  0x15: 'Reservation Release',
  0x19: 'Copy',
  0x7f: 'Fabrics',
});

/** Fabrics command types (the byte at offset 4 of a Fabrics command). */
export const FabricsType = {
  PROPERTY_SET: 0x00,
  CONNECT: 0x01,
  PROPERTY_GET: 0x04,
  AUTH_SEND: 0x05,
  AUTH_RECEIVE: 0x06,
  DISCONNECT: 0x08,
} as const;

export const FABRICS_TYPE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'Property Set',
  0x01: 'Connect',
  0x04: 'Property Get',
  0x05: 'Authentication Send',
  0x06: 'Authentication Receive',
  0x08: 'Disconnect',
});

/** The I/O commands that read (Read, Compare, Verify): their keyed data goes to the host by RDMA WRITE. */
export const IoOpcode = { FLUSH: 0x00, WRITE: 0x01, READ: 0x02 } as const;
export const AdminOpcode = { IDENTIFY: 0x06, KEEP_ALIVE: 0x18 } as const;

/**
 * The name of `opcode` on queue `qid` (null: the queue is not known, and the name is the I/O
 * command set's when the two tables agree, else both). Unknown opcodes read `opcode 0xNN`.
 */
export function opcodeName(opcode: number, qid: number | null): string {
  const unknown = `opcode 0x${opcode.toString(16).padStart(2, '0')}`;
  if (qid === 0) return ADMIN_OPCODE_NAMES[opcode] ?? unknown;
  if (qid !== null) return IO_OPCODE_NAMES[opcode] ?? unknown;
  const io = IO_OPCODE_NAMES[opcode];
  const admin = ADMIN_OPCODE_NAMES[opcode];
  if (io !== undefined && (admin === undefined || admin === io)) return io;
  if (io === undefined && admin !== undefined) return admin;
  return io === undefined ? unknown : `${io}/${admin}`;
}

/** The name of a Fabrics command type, or `fctype 0xNN`. */
export function fabricsTypeName(fctype: number): string {
  return FABRICS_TYPE_NAMES[fctype] ?? `fctype 0x${fctype.toString(16).padStart(2, '0')}`;
}
