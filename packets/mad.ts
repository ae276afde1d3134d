/**
 * Management Datagram (MAD) common header (IBTA vol. 1 §13.4), 24 bytes at the
 * start of every 256-byte MAD; the class's own data (232 bytes) follows:
 *
 *   byte 0       BaseVersion (1)
 *   byte 1       MgmtClass
 *   byte 2       ClassVersion
 *   byte 3       R(7) Method(6:0)      -- R set: a response
 *   bytes 4-5    Status (bit fields: MAD_STATUS below)
 *   bytes 6-7    ClassSpecific
 *   bytes 8-15   TransactionID
 *   bytes 16-17  AttributeID
 *   bytes 18-19  Reserved
 *   bytes 20-23  AttributeModifier
 *
 * Names and numbers as in the Linux kernel's include/rdma/ib_mad.h. On RoCE a
 * MAD travels exactly as on InfiniBand: the whole payload of a UD SEND ONLY to
 * QP 1 (the GSI) with the GSI Q_Key; QP 0 (SMI) does not exist on RoCE.
 *
 * Unknown classes, methods and attributes are values like any other (a table
 * lookup gives no name); only a MAD of the wrong length or base version is an
 * error (`parseMad`): the kernel's MAD layer drops both before any class sees
 * them (ib_mad.c validate_mad(): the base version must be IB_MGMT_BASE_VERSION).
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkU64, checkUint } from './bytes';

export const MAD_HEADER_LEN = 24;
/** Every InfiniBand MAD is 256 bytes (kernel IB_MGMT_MAD_SIZE). */
export const MAD_LEN = 256;
/** Bytes after the common header (kernel IB_MGMT_MAD_DATA). */
export const MAD_DATA_LEN = MAD_LEN - MAD_HEADER_LEN;
export const OFF = Object.freeze({
  BASE_VERSION: 0,
  MGMT_CLASS: 1,
  CLASS_VERSION: 2,
  METHOD: 3,
  STATUS: 4,
  CLASS_SPECIFIC: 6,
  TRANSACTION_ID: 8,
  ATTRIBUTE_ID: 16,
  RESERVED: 18,
  ATTRIBUTE_MODIFIER: 20,
});

/** The only base version of InfiniBand MADs (kernel IB_MGMT_BASE_VERSION). */
export const MAD_BASE_VERSION = 1;
/** QP 1, the General Services Interface, and its well-known Q_Key (kernel IB_QP1_QKEY). */
export const GSI_QPN = 1;
export const GSI_QKEY = 0x80010000;

/** Management classes (kernel ib_mad.h IB_MGMT_CLASS_*). */
export const MgmtClass = {
  SUBN_LID_ROUTED: 0x01,
  SUBN_ADM: 0x03,
  PERF_MGMT: 0x04,
  BM: 0x05,
  DEVICE_MGMT: 0x06,
  CM: 0x07,
  SNMP: 0x08,
  DEVICE_ADM: 0x10,
  BOOT_MGMT: 0x11,
  BIS: 0x12,
  CONG_MGMT: 0x21,
  SUBN_DIRECTED_ROUTE: 0x81,
} as const;

export const MGMT_CLASS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x01: 'SubnMgmt (LID routed)',
  0x03: 'SubnAdm',
  0x04: 'PerfMgmt',
  0x05: 'BaseboardMgmt',
  0x06: 'DevMgmt',
  0x07: 'CM',
  0x08: 'SNMP',
  0x10: 'DevAdm',
  0x11: 'BootMgmt',
  0x12: 'BIS',
  0x21: 'CongMgmt',
  0x81: 'SubnMgmt (directed route)',
});

/** The CM class version the kernel sends and accepts (cm_msgs.h IB_CM_CLASS_VERSION, "IB specification 1.2"). */
export const CM_CLASS_VERSION = 2;

/** Methods (kernel ib_mad.h IB_MGMT_METHOD_*); the R bit (0x80) marks a response. */
export const MadMethod = {
  GET: 0x01,
  SET: 0x02,
  SEND: 0x03,
  TRAP: 0x05,
  REPORT: 0x06,
  TRAP_REPRESS: 0x07,
  GET_RESP: 0x81,
  REPORT_RESP: 0x86,
} as const;
/** The R (response) bit of the method byte. */
export const METHOD_RESPONSE = 0x80;

export const METHOD_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x01: 'Get',
  0x02: 'Set',
  0x03: 'Send',
  0x05: 'Trap',
  0x06: 'Report',
  0x07: 'TrapRepress',
  0x81: 'GetResp',
  0x86: 'ReportResp',
});

/** Status field bits (kernel ib_mad.h IB_MGMT_MAD_STATUS_*): bits 4:2 carry an invalid-field code. */
export const MadStatus = {
  SUCCESS: 0x0000,
  BUSY: 0x0001,
  REDIRECT_REQUIRED: 0x0002,
  BAD_VERSION: 0x0004,
  UNSUPPORTED_METHOD: 0x0008,
  UNSUPPORTED_METHOD_ATTRIBUTE: 0x000c,
  INVALID_ATTRIBUTE_VALUE: 0x001c,
} as const;

/**
 * Attribute IDs of the CM class (kernel include/rdma/ib_cm.h CM_*_ATTR_ID; ClassPortInfo is
 * every class's attribute 0x0001, kernel IB_MGMT_CLASSPORTINFO_ATTR_ID).
 */
export const CmAttr = {
  CLASS_PORT_INFO: 0x0001,
  REQ: 0x0010,
  MRA: 0x0011,
  REJ: 0x0012,
  REP: 0x0013,
  RTU: 0x0014,
  DREQ: 0x0015,
  DREP: 0x0016,
  SIDR_REQ: 0x0017,
  SIDR_REP: 0x0018,
  LAP: 0x0019,
  APR: 0x001a,
} as const;
export type CmAttrName = keyof typeof CmAttr;

export const CM_ATTR_NAMES: Readonly<Record<number, CmAttrName>> = Object.freeze(
  Object.fromEntries(Object.entries(CmAttr).map(([name, id]) => [id, name as CmAttrName])),
);

export interface MadHeader {
  baseVersion: number;
  mgmtClass: number;
  classVersion: number;
  /** The whole method byte: R bit and method. */
  method: number;
  status: number;
  classSpecific: number;
  transactionId: bigint;
  attributeId: number;
  reserved: number;
  attributeModifier: number;
}

export function parseMadHeader(view: DataView, off: number, end: number = view.byteLength): MadHeader {
  need(end, off, MAD_HEADER_LEN, 'MAD header');
  return {
    baseVersion: view.getUint8(off + OFF.BASE_VERSION),
    mgmtClass: view.getUint8(off + OFF.MGMT_CLASS),
    classVersion: view.getUint8(off + OFF.CLASS_VERSION),
    method: view.getUint8(off + OFF.METHOD),
    status: view.getUint16(off + OFF.STATUS),
    classSpecific: view.getUint16(off + OFF.CLASS_SPECIFIC),
    transactionId: view.getBigUint64(off + OFF.TRANSACTION_ID),
    attributeId: view.getUint16(off + OFF.ATTRIBUTE_ID),
    reserved: view.getUint16(off + OFF.RESERVED),
    attributeModifier: view.getUint32(off + OFF.ATTRIBUTE_MODIFIER),
  };
}

export function emitMadHeader(h: MadHeader, view: DataView, off: number): number {
  checkUint(h.baseVersion, 0xff, 'baseVersion');
  checkUint(h.mgmtClass, 0xff, 'mgmtClass');
  checkUint(h.classVersion, 0xff, 'classVersion');
  checkUint(h.method, 0xff, 'method');
  checkUint(h.status, 0xffff, 'status');
  checkUint(h.classSpecific, 0xffff, 'classSpecific');
  checkU64(h.transactionId, 'transactionId');
  checkUint(h.attributeId, 0xffff, 'attributeId');
  checkUint(h.reserved, 0xffff, 'reserved');
  checkUint(h.attributeModifier, 0xffff_ffff, 'attributeModifier');
  view.setUint8(off + OFF.BASE_VERSION, h.baseVersion);
  view.setUint8(off + OFF.MGMT_CLASS, h.mgmtClass);
  view.setUint8(off + OFF.CLASS_VERSION, h.classVersion);
  view.setUint8(off + OFF.METHOD, h.method);
  view.setUint16(off + OFF.STATUS, h.status);
  view.setUint16(off + OFF.CLASS_SPECIFIC, h.classSpecific);
  view.setBigUint64(off + OFF.TRANSACTION_ID, h.transactionId);
  view.setUint16(off + OFF.ATTRIBUTE_ID, h.attributeId);
  view.setUint16(off + OFF.RESERVED, h.reserved);
  view.setUint32(off + OFF.ATTRIBUTE_MODIFIER, h.attributeModifier);
  return MAD_HEADER_LEN;
}

/**
 * The common header of the `len`-byte MAD at `off`, after the checks every MAD
 * must pass: exactly 256 bytes (BadLength at `off`) and base version 1 (BadField
 * at the base version byte). The class data is not looked at.
 */
export function parseMad(view: DataView, off: number, len: number): MadHeader {
  if (len !== MAD_LEN) {
    throw new WireError(WireErrorCode.BadLength, off, `a MAD is ${MAD_LEN} bytes, this one ${len}`);
  }
  const h = parseMadHeader(view, off, off + len);
  if (h.baseVersion !== MAD_BASE_VERSION) {
    throw new WireError(
      WireErrorCode.BadField,
      off + OFF.BASE_VERSION,
      `MAD base version ${h.baseVersion} (only ${MAD_BASE_VERSION} is defined for InfiniBand)`,
    );
  }
  return h;
}

/** True when the method byte's R bit marks a response. */
export const isResponse = (method: number): boolean => (method & METHOD_RESPONSE) !== 0;

/** "Send", "GetResp", or "method 0x2a" for a method without a name. */
export function methodName(method: number): string {
  return METHOD_NAMES[method] ?? `method 0x${method.toString(16).padStart(2, '0')}`;
}

/** "CM", "SubnAdm", or "class 0x2a" for a class without a name. */
export function mgmtClassName(mgmtClass: number): string {
  return MGMT_CLASS_NAMES[mgmtClass] ?? `class 0x${mgmtClass.toString(16).padStart(2, '0')}`;
}
