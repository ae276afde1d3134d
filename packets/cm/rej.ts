/**
 * REJ, ConnectReject (IBTA vol. 1 chapter 12, table 108 "REJ Message Contents";
 * CM attribute 0x0012): refuses a REQ or REP (or answers a message for a
 * connection that is gone) with a reason code and up to 72 bytes of Additional
 * Rejection Information, whose meaning depends on the reason.
 */
import { MAD_DATA_LEN } from '../mad';
import { type FieldValues, bits, bytes, readFields, u16, u32, writeFields } from '../field-table';

export const REJ_ARI_LEN = 72;
export const REJ_PRIVATE_DATA_LEN = 148;

export const REJ_FIELDS = Object.freeze({
  localCommId: u32(0),
  remoteCommId: u32(4),
  /** RejMessage values. */
  messageRejected: bits(8, 0, 2),
  /** How many bytes of `ari` are meaningful. */
  rejectedInfoLength: bits(9, 0, 7),
  /** RejReason values. */
  reason: u16(10),
  ari: bytes(12, REJ_ARI_LEN),
  privateData: bytes(84, REJ_PRIVATE_DATA_LEN),
});

export type CmRej = FieldValues<typeof REJ_FIELDS>;

/** The message being rejected (byte 8 bits 0-1; the kernel's enum cm_msg_response). */
export const RejMessage = { REQ: 0, REP: 1, OTHER: 2 } as const;
export const REJ_MESSAGE_NAMES: Readonly<Record<number, string>> = Object.freeze({ 0: 'REQ', 1: 'REP', 2: 'other' });

/**
 * Reject reasons: IBTA vol. 1 table 109 (the reason table after table 108, REJ
 * Message Contents); numbers and names as the kernel's enum ib_cm_rej_reason
 * (include/rdma/ib_cm.h). 28 is what librdmacm sends for rdma_reject().
 */
export const RejReason = {
  NO_QP: 1,
  NO_EEC: 2,
  NO_RESOURCES: 3,
  TIMEOUT: 4,
  UNSUPPORTED: 5,
  INVALID_COMM_ID: 6,
  INVALID_COMM_INSTANCE: 7,
  INVALID_SERVICE_ID: 8,
  INVALID_TRANSPORT_TYPE: 9,
  STALE_CONN: 10,
  RDC_NOT_EXIST: 11,
  INVALID_GID: 12,
  INVALID_LID: 13,
  INVALID_SL: 14,
  INVALID_TRAFFIC_CLASS: 15,
  INVALID_HOP_LIMIT: 16,
  INVALID_PACKET_RATE: 17,
  INVALID_ALT_GID: 18,
  INVALID_ALT_LID: 19,
  INVALID_ALT_SL: 20,
  INVALID_ALT_TRAFFIC_CLASS: 21,
  INVALID_ALT_HOP_LIMIT: 22,
  INVALID_ALT_PACKET_RATE: 23,
  PORT_CM_REDIRECT: 24,
  PORT_REDIRECT: 25,
  INVALID_MTU: 26,
  INSUFFICIENT_RESP_RESOURCES: 27,
  CONSUMER_DEFINED: 28,
  INVALID_RNR_RETRY: 29,
  DUPLICATE_LOCAL_COMM_ID: 30,
  INVALID_CLASS_VERSION: 31,
  INVALID_FLOW_LABEL: 32,
  INVALID_ALT_FLOW_LABEL: 33,
  VENDOR_OPTION_NOT_SUPPORTED: 35,
} as const;

const REASON_TEXT: Readonly<Record<number, string>> = Object.freeze({
  1: 'no QP available',
  2: 'no EE context available',
  3: 'no resources available',
  4: 'timeout',
  5: 'unsupported request',
  6: 'invalid communication ID',
  7: 'invalid communication instance',
  8: 'invalid service ID',
  9: 'invalid transport service type',
  10: 'stale connection',
  11: 'RDC does not exist',
  12: 'primary remote port GID rejected',
  13: 'primary remote port LID rejected',
  14: 'invalid primary SL',
  15: 'invalid primary traffic class',
  16: 'invalid primary hop limit',
  17: 'invalid primary packet rate',
  18: 'alternate remote port GID rejected',
  19: 'alternate remote port LID rejected',
  20: 'invalid alternate SL',
  21: 'invalid alternate traffic class',
  22: 'invalid alternate hop limit',
  23: 'invalid alternate packet rate',
  24: 'port and CM redirection',
  25: 'port redirection not supported',
  26: 'invalid path MTU',
  27: 'insufficient responder resources',
  28: 'consumer reject',
  29: 'invalid RNR NAK retry count',
  30: 'duplicate local communication ID',
  31: 'unsupported class version',
  32: 'invalid primary flow label',
  33: 'invalid alternate flow label',
  35: 'vendor option not supported',
});

/** "consumer reject", or "reason 34" for a value without a meaning. */
export function rejReasonText(reason: number): string {
  return REASON_TEXT[reason] ?? `reason ${reason}`;
}

export function parseCmRej(view: DataView, off: number, end: number = view.byteLength): CmRej {
  return readFields(REJ_FIELDS, MAD_DATA_LEN, view, off, end, 'CM REJ');
}

export function emitCmRej(m: CmRej, view: DataView, off: number): number {
  return writeFields(REJ_FIELDS, MAD_DATA_LEN, m, view, off, 'CM REJ');
}
