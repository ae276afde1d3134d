/**
 * RTU, ReadyToUse (IBTA vol. 1 chapter 12, table 111 "RTU Message Contents";
 * CM attribute 0x0014): the active side's last word of the three-way handshake.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u32, writeFields } from '../field-table';

export const RTU_PRIVATE_DATA_LEN = 224;

export const RTU_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  privateData: bytes(8, RTU_PRIVATE_DATA_LEN),
});

export type CmRtu = FieldValues<typeof RTU_FIELDS>;

export function parseCmRtu(view: DataView, off: number, end: number = view.byteLength): CmRtu {
  return readFields(RTU_FIELDS, MAD_DATA_LEN, view, off, end, 'CM RTU');
}

export function emitCmRtu(m: CmRtu, view: DataView, off: number): number {
  return writeFields(RTU_FIELDS, MAD_DATA_LEN, m, view, off, 'CM RTU');
}
