/**
 * MRA, MessageReceiptAcknowledgement (IBTA vol. 1 chapter 12, table 107 "MRA
 * Message Contents"; CM attribute 0x0011): "I have your REQ (REP, LAP) but need
 * more time"; the sender of that message then waits the service timeout instead
 * of its CM response timeout.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bits, bytes, readFields, u32, writeFields } from '../field-table';

export const MRA_PRIVATE_DATA_LEN = 222;

export const MRA_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  /** MraMessage values. */
  messageMraed: bits(8, 0, 2),
  /** 4.096 µs × 2^n. */
  serviceTimeout: bits(9, 0, 5),
  privateData: bytes(10, MRA_PRIVATE_DATA_LEN),
});

export type CmMra = FieldValues<typeof MRA_FIELDS>;

/** The message being MRAed (byte 8 bits 0-1; the kernel's enum cm_msg_response). */
export const MraMessage = { REQ: 0, REP: 1, LAP: 2 } as const;
export const MRA_MESSAGE_NAMES: Readonly<Record<number, string>> = Object.freeze({ 0: 'REQ', 1: 'REP', 2: 'LAP' });

export function parseCmMra(view: DataView, off: number, end: number = view.byteLength): CmMra {
  return readFields(MRA_FIELDS, MAD_DATA_LEN, view, off, end, 'CM MRA');
}

export function emitCmMra(m: CmMra, view: DataView, off: number): number {
  return writeFields(MRA_FIELDS, MAD_DATA_LEN, m, view, off, 'CM MRA');
}
