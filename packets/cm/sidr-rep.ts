/**
 * SIDR_REP, ServiceIDResolutionResponse (IBTA vol. 1 chapter 12, table 120
 * "SIDR_REP Message Contents"; CM attribute 0x0018): the QPN and Q_Key that serve
 * the service ID, or a status saying why not.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bytes, readFields, u24, u32, u64, u8, writeFields } from '../field-table';

export const SIDR_REP_INFO_LEN = 72;
export const SIDR_REP_PRIVATE_DATA_LEN = 136;

export const SIDR_REP_FIELDS = Object.freeze({
  requestId: u32(0),
  /** SidrStatus values. */
  status: u8(4),
  additionalInfoLength: u8(5),
  // bytes 6-7 reserved
  qpn: u24(8),
  serviceId: u64(12),
  qkey: u32(20),
  /** ClassPortInfo of a redirect (status 4). */
  additionalInfo: bytes(24, SIDR_REP_INFO_LEN),
  privateData: bytes(96, SIDR_REP_PRIVATE_DATA_LEN),
});

export type CmSidrRep = FieldValues<typeof SIDR_REP_FIELDS>;

/** SIDR_REP status, numbered as the kernel's enum ib_cm_sidr_status (include/rdma/ib_cm.h). */
export const SidrStatus = {
  SUCCESS: 0,
  UNSUPPORTED: 1,
  REJECT: 2,
  NO_QP: 3,
  REDIRECT: 4,
  UNSUPPORTED_VERSION: 5,
} as const;
export const SIDR_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0: 'success',
  1: 'service ID not supported',
  2: 'rejected by the service',
  3: 'no QP',
  4: 'redirect',
  5: 'unsupported class version',
});

export function parseCmSidrRep(view: DataView, off: number, end: number = view.byteLength): CmSidrRep {
  return readFields(SIDR_REP_FIELDS, MAD_DATA_LEN, view, off, end, 'CM SIDR_REP');
}

export function emitCmSidrRep(m: CmSidrRep, view: DataView, off: number): number {
  return writeFields(SIDR_REP_FIELDS, MAD_DATA_LEN, m, view, off, 'CM SIDR_REP');
}
