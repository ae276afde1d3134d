/**
 * SIDR_REQ, ServiceIDResolutionRequest (IBTA vol. 1 chapter 12, table 119
 * "SIDR_REQ Message Contents"; CM attribute 0x0017): asks which UD QP (and
 * Q_Key) serves a service ID. librdmacm's UDP port space (udaddy) connects this way.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u16, u32, u64, writeFields } from '../field-table';

export const SIDR_REQ_PRIVATE_DATA_LEN = 216;

export const SIDR_REQ_FIELDS = Object.freeze({
  requestId: u32(0),
  pkey: u16(4),
  // bytes 6-7 reserved
  serviceId: u64(8),
  privateData: bytes(16, SIDR_REQ_PRIVATE_DATA_LEN),
});

export type CmSidrReq = FieldValues<typeof SIDR_REQ_FIELDS>;

export function parseCmSidrReq(view: DataView, off: number, end: number = view.byteLength): CmSidrReq {
  return readFields(SIDR_REQ_FIELDS, MAD_DATA_LEN, view, off, end, 'CM SIDR_REQ');
}

export function emitCmSidrReq(m: CmSidrReq, view: DataView, off: number): number {
  return writeFields(SIDR_REQ_FIELDS, MAD_DATA_LEN, m, view, off, 'CM SIDR_REQ');
}
