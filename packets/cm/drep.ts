/**
 * DREP, DisconnectReply (IBTA vol. 1 chapter 12, table 113 "DREP Message
 * Contents"; CM attribute 0x0016). Same layout as the RTU.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u32, writeFields } from '../field-table';

export const DREP_PRIVATE_DATA_LEN = 224;

export const DREP_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  privateData: bytes(8, DREP_PRIVATE_DATA_LEN),
});

export type CmDrep = FieldValues<typeof DREP_FIELDS>;

export function parseCmDrep(view: DataView, off: number, end: number = view.byteLength): CmDrep {
  return readFields(DREP_FIELDS, MAD_DATA_LEN, view, off, end, 'CM DREP');
}

export function emitCmDrep(m: CmDrep, view: DataView, off: number): number {
  return writeFields(DREP_FIELDS, MAD_DATA_LEN, m, view, off, 'CM DREP');
}
