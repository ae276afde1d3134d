/**
 * iSCSI PDUs by opcode, from their named fields (RFC 7143 §11), for the test capture's generator
 * and the tests: each puts the fields at the BHS offsets RFC 7143 gives them.
 */
import { type IscsiPdu, buildPdu, keyValueData } from './iscsi-pdu';
import { IscsiOpcode as Op } from './iscsi-names';

interface Seq {
  itt: number;
  cmdSn: number;
  expStatSn: number;
}
interface TargetSeq {
  itt: number;
  statSn: number;
  expCmdSn: number;
  maxCmdSn: number;
}

export function scsiCommandPdu(s: Seq & { lun: bigint; read: boolean; write: boolean; edtl: number; cdb: Uint8Array; immediate?: boolean }): IscsiPdu {
  return buildPdu({
    opcode: Op.SCSI_COMMAND,
    immediate: s.immediate,
    // F set (no unsolicited Data-Out follows: iSER sends the data by RDMA READ), ATTR 1 (simple).
    flags: 0x80 | (s.read ? 0x40 : 0) | (s.write ? 0x20 : 0) | 0x01,
    initiatorTaskTag: s.itt,
    word8: s.lun,
    words: { 20: s.edtl, 24: s.cmdSn, 28: s.expStatSn },
    raw: [[32, s.cdb]],
  });
}

export function scsiResponsePdu(s: TargetSeq & { status: number; residual?: number; underflow?: boolean; sense?: Uint8Array }): IscsiPdu {
  const sense = s.sense;
  let data: Uint8Array | undefined;
  if (sense !== undefined) {
    data = new Uint8Array(2 + sense.length);
    data[0] = sense.length >>> 8;
    data[1] = sense.length & 0xff;
    data.set(sense, 2);
  }
  return buildPdu({
    opcode: Op.SCSI_RESPONSE,
    flags: 0x80 | (s.underflow === true ? 0x02 : 0),
    byte2: 0,
    byte3: s.status,
    initiatorTaskTag: s.itt,
    words: { 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn, 44: s.residual ?? 0 },
    data,
  });
}

export function loginRequestPdu(
  s: Seq & { isid: Uint8Array; tsih: number; cid: number; csg: number; nsg: number; transit: boolean; pairs: readonly string[] },
): IscsiPdu {
  return buildPdu({
    opcode: Op.LOGIN_REQUEST,
    immediate: true,
    flags: (s.transit ? 0x80 : 0) | (s.csg << 2) | s.nsg,
    initiatorTaskTag: s.itt,
    byte2: 0,
    byte3: 0,
    raw: [[8, s.isid]],
    halves: { 14: s.tsih, 20: s.cid },
    words: { 24: s.cmdSn, 28: s.expStatSn },
    data: keyValueData(s.pairs),
  });
}

export function loginResponsePdu(
  s: TargetSeq & {
    isid: Uint8Array;
    tsih: number;
    csg: number;
    nsg: number;
    transit: boolean;
    statusClass: number;
    statusDetail: number;
    pairs: readonly string[];
  },
): IscsiPdu {
  return buildPdu({
    opcode: Op.LOGIN_RESPONSE,
    flags: (s.transit ? 0x80 : 0) | (s.csg << 2) | s.nsg,
    initiatorTaskTag: s.itt,
    raw: [
      [8, s.isid],
      [36, Uint8Array.of(s.statusClass, s.statusDetail)],
    ],
    halves: { 14: s.tsih },
    words: { 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn },
    data: keyValueData(s.pairs),
  });
}

export function textRequestPdu(s: Seq & { pairs: readonly string[] }): IscsiPdu {
  return buildPdu({
    opcode: Op.TEXT_REQUEST,
    flags: 0x80,
    initiatorTaskTag: s.itt,
    words: { 20: 0xffffffff, 24: s.cmdSn, 28: s.expStatSn },
    data: keyValueData(s.pairs),
  });
}

export function textResponsePdu(s: TargetSeq & { pairs: readonly string[] }): IscsiPdu {
  return buildPdu({
    opcode: Op.TEXT_RESPONSE,
    flags: 0x80,
    initiatorTaskTag: s.itt,
    words: { 20: 0xffffffff, 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn },
    data: keyValueData(s.pairs),
  });
}

export function nopOutPdu(s: Seq & { ping?: Uint8Array }): IscsiPdu {
  return buildPdu({
    opcode: Op.NOP_OUT,
    immediate: true,
    flags: 0x80,
    initiatorTaskTag: s.itt,
    words: { 20: 0xffffffff, 24: s.cmdSn, 28: s.expStatSn },
    data: s.ping,
  });
}

export function nopInPdu(s: TargetSeq & { ping?: Uint8Array }): IscsiPdu {
  return buildPdu({
    opcode: Op.NOP_IN,
    flags: 0x80,
    initiatorTaskTag: s.itt,
    words: { 20: 0xffffffff, 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn },
    data: s.ping,
  });
}

export function logoutRequestPdu(s: Seq & { reason: number; cid: number }): IscsiPdu {
  return buildPdu({
    opcode: Op.LOGOUT_REQUEST,
    immediate: true,
    flags: 0x80 | s.reason,
    initiatorTaskTag: s.itt,
    halves: { 20: s.cid },
    words: { 24: s.cmdSn, 28: s.expStatSn },
  });
}

export function logoutResponsePdu(s: TargetSeq & { response: number; time2Wait: number; time2Retain: number }): IscsiPdu {
  return buildPdu({
    opcode: Op.LOGOUT_RESPONSE,
    flags: 0x80,
    byte2: s.response,
    initiatorTaskTag: s.itt,
    words: { 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn },
    halves: { 40: s.time2Wait, 42: s.time2Retain },
  });
}

export function tmfRequestPdu(s: Seq & { fn: number; lun: bigint; referencedTaskTag: number; refCmdSn: number }): IscsiPdu {
  return buildPdu({
    opcode: Op.TASK_MGMT_REQUEST,
    immediate: true,
    flags: 0x80 | s.fn,
    initiatorTaskTag: s.itt,
    word8: s.lun,
    words: { 20: s.referencedTaskTag, 24: s.cmdSn, 28: s.expStatSn, 32: s.refCmdSn },
  });
}

export function tmfResponsePdu(s: TargetSeq & { response: number }): IscsiPdu {
  return buildPdu({
    opcode: Op.TASK_MGMT_RESPONSE,
    flags: 0x80,
    byte2: s.response,
    initiatorTaskTag: s.itt,
    words: { 24: s.statSn, 28: s.expCmdSn, 32: s.maxCmdSn },
  });
}
