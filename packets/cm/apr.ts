/**
 * APR, AlternatePathResponse (IBTA vol. 1 chapter 12, table 116 "APR Message
 * Contents"; CM attribute 0x001A): the answer to a LAP.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u32, u8, writeFields } from '../field-table';

export const APR_INFO_LEN = 72;
export const APR_PRIVATE_DATA_LEN = 148;

export const APR_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  additionalInfoLength: u8(8),
  /** ApStatus values. */
  apStatus: u8(9),
  // bytes 10-11 reserved
  additionalInfo: bytes(12, APR_INFO_LEN),
  privateData: bytes(84, APR_PRIVATE_DATA_LEN),
});

export type CmApr = FieldValues<typeof APR_FIELDS>;

/** AP status values, numbered as the kernel's enum ib_cm_apr_status (include/rdma/ib_cm.h). */
export const ApStatus = {
  SUCCESS: 0,
  INVALID_COMM_ID: 1,
  UNSUPPORTED: 2,
  REJECT: 3,
  REDIRECT: 4,
  IS_CURRENT: 5,
  INVALID_QPN_EECN: 6,
  INVALID_LID: 7,
  INVALID_GID: 8,
  INVALID_FLOW_LABEL: 9,
  INVALID_TCLASS: 10,
  INVALID_HOP_LIMIT: 11,
  INVALID_PACKET_RATE: 12,
  INVALID_SL: 13,
} as const;

export function parseCmApr(view: DataView, off: number, end: number = view.byteLength): CmApr {
  return readFields(APR_FIELDS, MAD_DATA_LEN, view, off, end, 'CM APR');
}

export function emitCmApr(m: CmApr, view: DataView, off: number): number {
  return writeFields(APR_FIELDS, MAD_DATA_LEN, m, view, off, 'CM APR');
}
