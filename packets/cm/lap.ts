/**
 * LAP, LoadAlternatePath (IBTA vol. 1 chapter 12, table 115 "LAP Message
 * Contents"; CM attribute 0x0019): loads a new alternate path for automatic
 * path migration. Note the path fields are not laid out as in the REQ (flow
 * label and traffic class share a word here). Layout as the kernel's CM_LAP_*.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bits, bytes, flag, gid, readFields, u16, u24, u32, u8, writeFields } from '../field-table';

export const LAP_PRIVATE_DATA_LEN = 168;

export const LAP_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  // bytes 8-11 reserved
  remoteQpnEecn: u24(12),
  remoteCmResponseTimeout: bits(15, 0, 5),
  // bytes 16-19 reserved
  alternateLocalLid: u16(20),
  alternateRemoteLid: u16(22),
  alternateLocalGid: gid(24),
  alternateRemoteGid: gid(40),
  alternateFlowLabel: bits(56, 0, 20),
  alternateTrafficClass: u8(59),
  alternateHopLimit: u8(60),
  alternatePacketRate: bits(61, 2, 6),
  alternateSl: bits(62, 0, 4),
  alternateSubnetLocal: flag(62, 4),
  alternateLocalAckTimeout: bits(63, 0, 5),
  privateData: bytes(64, LAP_PRIVATE_DATA_LEN),
});

export type CmLap = FieldValues<typeof LAP_FIELDS>;

export function parseCmLap(view: DataView, off: number, end: number = view.byteLength): CmLap {
  return readFields(LAP_FIELDS, MAD_DATA_LEN, view, off, end, 'CM LAP');
}

export function emitCmLap(m: CmLap, view: DataView, off: number): number {
  return writeFields(LAP_FIELDS, MAD_DATA_LEN, m, view, off, 'CM LAP');
}
