/**
 * DREQ, DisconnectRequest (IBTA vol. 1 chapter 12, table 112 "DREQ Message
 * Contents"; CM attribute 0x0015). Carries the QPN (or EECN) the receiver must
 * have on its side of the connection.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u24, u32, writeFields } from '../field-table';

export const DREQ_PRIVATE_DATA_LEN = 220;

export const DREQ_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  remoteQpnEecn: u24(8),
  privateData: bytes(12, DREQ_PRIVATE_DATA_LEN),
});

export type CmDreq = FieldValues<typeof DREQ_FIELDS>;

export function parseCmDreq(view: DataView, off: number, end: number = view.byteLength): CmDreq {
  return readFields(DREQ_FIELDS, MAD_DATA_LEN, view, off, end, 'CM DREQ');
}

export function emitCmDreq(m: CmDreq, view: DataView, off: number): number {
  return writeFields(DREQ_FIELDS, MAD_DATA_LEN, m, view, off, 'CM DREQ');
}
