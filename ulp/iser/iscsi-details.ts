/**
 * The opcode-specific fields of an iSCSI BHS by name (RFC 7143 §11.2-§11.17), read from the BHS
 * bytes of an `IscsiPdu`: sequence numbers (CmdSN and ExpStatSN from the initiator, StatSN,
 * ExpCmdSN and MaxCmdSN from the target), the Target Transfer Tag, the LUN, and each opcode's own
 * fields (a SCSI Command's R/W/ATTR, Expected Data Transfer Length and CDB; a SCSI Response's
 * flags, response and status; Login's T/C/CSG/NSG, versions, ISID, TSIH, CID and status; Logout's
 * reason or response; a task management function and its response).
 */
import type { IscsiPdu } from './iscsi-pdu';
import { IscsiOpcode as Op, fromInitiator } from './iscsi-names';
import { type Cdb, parseCdb } from './scsi-cdb';

export interface ScsiCommandFields {
  read: boolean;
  write: boolean;
  attr: number;
  expectedDataTransferLength: number;
  cdb: Cdb;
  cdbBytes: Uint8Array;
}

export interface ScsiResponseFields {
  /** o, u, O, U: bidirectional read residual overflow / underflow, residual overflow / underflow. */
  bidiOverflow: boolean;
  bidiUnderflow: boolean;
  overflow: boolean;
  underflow: boolean;
  response: number;
  status: number;
  expDataSn: number;
  bidiReadResidualCount: number;
  residualCount: number;
  /** The sense data's length, the data segment's first 2 bytes (null without a data segment). */
  senseLength: number | null;
}

export interface LoginFields {
  transit: boolean;
  cont: boolean;
  csg: number;
  nsg: number;
  versionMax: number;
  /** Version-min in a request, Version-active in a response. */
  versionMinOrActive: number;
  isid: Uint8Array;
  tsih: number;
  /** Request only. */
  cid: number | null;
  /** Response only. */
  statusClass: number | null;
  statusDetail: number | null;
}

export interface IscsiDetails {
  lun: bigint | null;
  targetTransferTag: number | null;
  cmdSn: number | null;
  expStatSn: number | null;
  statSn: number | null;
  expCmdSn: number | null;
  maxCmdSn: number | null;
  scsiCommand: ScsiCommandFields | null;
  scsiResponse: ScsiResponseFields | null;
  login: LoginFields | null;
  /** Text request / response: C (continue). */
  textContinue: boolean | null;
  logoutReason: number | null;
  logoutCid: number | null;
  logoutResponse: number | null;
  time2Wait: number | null;
  time2Retain: number | null;
  tmfFunction: number | null;
  referencedTaskTag: number | null;
  refCmdSn: number | null;
  tmfResponse: number | null;
  /** Data-In / Data-Out / R2T. */
  dataSn: number | null;
  bufferOffset: number | null;
  desiredDataTransferLength: number | null;
  rejectReason: number | null;
  /** Login and Text data: its key=value pairs. */
  keyValues: string[] | null;
}

const WITH_LUN = new Set<number>([
  Op.NOP_OUT,
  Op.SCSI_COMMAND,
  Op.TASK_MGMT_REQUEST,
  Op.TEXT_REQUEST,
  Op.SCSI_DATA_OUT,
  Op.NOP_IN,
  Op.TEXT_RESPONSE,
  Op.SCSI_DATA_IN,
  Op.R2T,
  Op.ASYNC_MESSAGE,
]);
const WITH_TTT = new Set<number>([Op.NOP_OUT, Op.TEXT_REQUEST, Op.SCSI_DATA_OUT, Op.NOP_IN, Op.TEXT_RESPONSE, Op.SCSI_DATA_IN, Op.R2T]);
/** Initiator PDUs that carry CmdSN (a Data-Out and a SNACK do not). */
const WITH_CMDSN = new Set<number>([Op.NOP_OUT, Op.SCSI_COMMAND, Op.TASK_MGMT_REQUEST, Op.LOGIN_REQUEST, Op.TEXT_REQUEST, Op.LOGOUT_REQUEST]);

export function pduDetails(p: IscsiPdu, keyValuesOf: (d: Uint8Array) => string[]): IscsiDetails {
  const v = new DataView(p.bhs.buffer, p.bhs.byteOffset, p.bhs.byteLength);
  const w = (at: number) => v.getUint32(at);
  const op = p.opcode;
  const init = fromInitiator(op);
  // A Data-In carries StatSN only with its S bit (RFC 7143 §11.7.8).
  const hasStatSn = !init && (op !== Op.SCSI_DATA_IN || (p.flags & 0x01) !== 0);
  const d: IscsiDetails = {
    lun: WITH_LUN.has(op) ? v.getBigUint64(8) : null,
    targetTransferTag: WITH_TTT.has(op) ? w(20) : null,
    cmdSn: WITH_CMDSN.has(op) ? w(24) : null,
    expStatSn: init && op !== Op.SNACK_REQUEST ? w(28) : null,
    statSn: hasStatSn ? w(24) : null,
    expCmdSn: !init ? w(28) : null,
    maxCmdSn: !init ? w(32) : null,
    scsiCommand: null,
    scsiResponse: null,
    login: null,
    textContinue: null,
    logoutReason: null,
    logoutCid: null,
    logoutResponse: null,
    time2Wait: null,
    time2Retain: null,
    tmfFunction: null,
    referencedTaskTag: null,
    refCmdSn: null,
    tmfResponse: null,
    dataSn: null,
    bufferOffset: null,
    desiredDataTransferLength: null,
    rejectReason: null,
    keyValues: null,
  };
  switch (op) {
    case Op.SCSI_COMMAND: {
      const cdbBytes = p.bhs.slice(32, 48);
      d.scsiCommand = {
        read: (p.flags & 0x40) !== 0,
        write: (p.flags & 0x20) !== 0,
        attr: p.flags & 0x07,
        expectedDataTransferLength: w(20),
        cdb: parseCdb(cdbBytes),
        cdbBytes,
      };
      break;
    }
    case Op.SCSI_RESPONSE:
      d.scsiResponse = {
        bidiOverflow: (p.flags & 0x10) !== 0,
        bidiUnderflow: (p.flags & 0x08) !== 0,
        overflow: (p.flags & 0x04) !== 0,
        underflow: (p.flags & 0x02) !== 0,
        response: v.getUint8(2),
        status: v.getUint8(3),
        expDataSn: w(36),
        bidiReadResidualCount: w(40),
        residualCount: w(44),
        senseLength: p.data.length >= 2 ? ((p.data[0] ?? 0) << 8) | (p.data[1] ?? 0) : null,
      };
      break;
    case Op.LOGIN_REQUEST:
    case Op.LOGIN_RESPONSE: {
      const req = op === Op.LOGIN_REQUEST;
      d.login = {
        transit: (p.flags & 0x80) !== 0,
        cont: (p.flags & 0x40) !== 0,
        csg: (p.flags >>> 2) & 3,
        nsg: p.flags & 3,
        versionMax: v.getUint8(2),
        versionMinOrActive: v.getUint8(3),
        isid: p.bhs.slice(8, 14),
        tsih: v.getUint16(14),
        cid: req ? v.getUint16(20) : null,
        statusClass: req ? null : v.getUint8(36),
        statusDetail: req ? null : v.getUint8(37),
      };
      d.keyValues = keyValuesOf(p.data);
      break;
    }
    case Op.TEXT_REQUEST:
    case Op.TEXT_RESPONSE:
      d.textContinue = (p.flags & 0x40) !== 0;
      d.keyValues = keyValuesOf(p.data);
      break;
    case Op.LOGOUT_REQUEST:
      d.logoutReason = p.flags & 0x7f;
      d.logoutCid = v.getUint16(20);
      break;
    case Op.LOGOUT_RESPONSE:
      d.logoutResponse = v.getUint8(2);
      d.time2Wait = v.getUint16(40);
      d.time2Retain = v.getUint16(42);
      break;
    case Op.TASK_MGMT_REQUEST:
      d.tmfFunction = p.flags & 0x7f;
      d.referencedTaskTag = w(20);
      d.refCmdSn = w(32);
      break;
    case Op.TASK_MGMT_RESPONSE:
      d.tmfResponse = v.getUint8(2);
      break;
    case Op.SCSI_DATA_OUT:
    case Op.SCSI_DATA_IN:
      d.dataSn = w(36);
      d.bufferOffset = w(40);
      break;
    case Op.R2T:
      d.dataSn = w(36);
      d.bufferOffset = w(40);
      d.desiredDataTransferLength = w(44);
      break;
    case Op.REJECT:
      d.rejectReason = v.getUint8(2);
      break;
  }
  return d;
}
