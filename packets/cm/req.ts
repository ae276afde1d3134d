/**
 * REQ, ConnectRequest (IBTA vol. 1 chapter 12, table 106 "REQ Message Contents";
 * CM attribute 0x0010). The active side asks for a connection to a service ID,
 * offering its QP, starting PSN, timeouts and the primary (and alternate) path.
 * Offsets are from the start of the CM data (byte 24 of the MAD), in the table's
 * `Byte[Bit]` notation; the same layout as the kernel's CM_REQ_* fields in
 * include/rdma/ibta_vol1_c12.h.
 *
 * On RoCE v2 the path LIDs are 0xffff (the permissive LID: rdma_rxe sends them so,
 * captures/rxe), the GIDs are the IP addresses (IPv4-mapped for IPv4), and the
 * traffic class and hop limit are the IP header's; rxe's REQ also carries a
 * non-zero flow label over IPv4.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bits, bytes, flag, gid, readFields, u16, u24, u32, u64, u8, writeFields } from '../field-table';

export const REQ_PRIVATE_DATA_LEN = 92;

export const REQ_FIELDS = Object.freeze({
  localCommId: u32(0),
  // bytes 4-7 reserved
  serviceId: u64(8),
  localCaGuid: u64(16),
  // bytes 24-27 reserved
  localQkey: u32(28),
  localQpn: u24(32),
  responderResources: u8(35),
  localEecn: u24(36),
  initiatorDepth: u8(39),
  remoteEecn: u24(40),
  /** CM response timeout the passive side should expect of us: 4.096 µs × 2^n. */
  remoteCmResponseTimeout: bits(43, 0, 5),
  /** TransportServiceType values. */
  transportServiceType: bits(43, 5, 2),
  endToEndFlowControl: flag(43, 7),
  startingPsn: u24(44),
  localCmResponseTimeout: bits(47, 0, 5),
  retryCount: bits(47, 5, 3),
  pkey: u16(48),
  /** Path MTU code: 1 = 256 … 5 = 4096 bytes. */
  pathMtu: bits(50, 0, 4),
  rdcExists: flag(50, 4),
  rnrRetryCount: bits(50, 5, 3),
  maxCmRetries: bits(51, 0, 4),
  srq: flag(51, 4),
  extendedTransportType: bits(51, 5, 3),
  primaryLocalLid: u16(52),
  primaryRemoteLid: u16(54),
  primaryLocalGid: gid(56),
  primaryRemoteGid: gid(72),
  primaryFlowLabel: bits(88, 0, 20),
  // 88[20..25] reserved
  primaryPacketRate: bits(91, 2, 6),
  primaryTrafficClass: u8(92),
  primaryHopLimit: u8(93),
  primarySl: bits(94, 0, 4),
  primarySubnetLocal: flag(94, 4),
  primaryLocalAckTimeout: bits(95, 0, 5),
  alternateLocalLid: u16(96),
  alternateRemoteLid: u16(98),
  alternateLocalGid: gid(100),
  alternateRemoteGid: gid(116),
  alternateFlowLabel: bits(132, 0, 20),
  alternatePacketRate: bits(135, 2, 6),
  alternateTrafficClass: u8(136),
  alternateHopLimit: u8(137),
  alternateSl: bits(138, 0, 4),
  alternateSubnetLocal: flag(138, 4),
  alternateLocalAckTimeout: bits(139, 0, 5),
  /** Kernel CM_REQ_SAP_SUPPORTED: Byte 139 bit 5. */
  sapSupported: flag(139, 5),
  privateData: bytes(140, REQ_PRIVATE_DATA_LEN),
});

export type CmReq = FieldValues<typeof REQ_FIELDS>;

/** Transport Service Type (REQ byte 43 bits 5-6), as the kernel's cm_req_get_qp_type() reads it. */
export const TransportServiceType = {
  RC: 0,
  UC: 1,
  RD: 2,
  /** See extendedTransportType: 1 there is XRC. */
  EXTENDED: 3,
} as const;

export function parseCmReq(view: DataView, off: number, end: number = view.byteLength): CmReq {
  return readFields(REQ_FIELDS, MAD_DATA_LEN, view, off, end, 'CM REQ');
}

export function emitCmReq(m: CmReq, view: DataView, off: number): number {
  return writeFields(REQ_FIELDS, MAD_DATA_LEN, m, view, off, 'CM REQ');
}
