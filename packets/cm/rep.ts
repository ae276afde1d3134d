/**
 * REP, ConnectReply (IBTA vol. 1 chapter 12, table 110 "REP Message Contents";
 * CM attribute 0x0013): the passive side accepts a REQ with its own QPN,
 * starting PSN and resources. Layout as the kernel's CM_REP_* fields.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bits, bytes, flag, readFields, u24, u32, u64, u8, writeFields } from '../field-table';

export const REP_PRIVATE_DATA_LEN = 196;

export const REP_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  localQkey: u32(8),
  localQpn: u24(12),
  localEecn: u24(16),
  startingPsn: u24(20),
  responderResources: u8(24),
  initiatorDepth: u8(25),
  targetAckDelay: bits(26, 0, 5),
  failoverAccepted: bits(26, 5, 2),
  endToEndFlowControl: flag(26, 7),
  rnrRetryCount: bits(27, 0, 3),
  srq: flag(27, 3),
  localCaGuid: u64(28),
  privateData: bytes(36, REP_PRIVATE_DATA_LEN),
});

export type CmRep = FieldValues<typeof REP_FIELDS>;

export function parseCmRep(view: DataView, off: number, end: number = view.byteLength): CmRep {
  return readFields(REP_FIELDS, MAD_DATA_LEN, view, off, end, 'CM REP');
}

export function emitCmRep(m: CmRep, view: DataView, off: number): number {
  return writeFields(REP_FIELDS, MAD_DATA_LEN, m, view, off, 'CM REP');
}
