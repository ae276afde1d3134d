/**
 * The iSER and iSCSI fields of `roce decode -Y` and `-T fields -e`, by Wireshark's names (tshark
 * 4.0's packet-iser.c and packet-iscsi.c: `tshark -G fields`), with tshark's text: BASE_HEX fields
 * as `0x` and the field's width, BASE_DEC_HEX ones in decimal, booleans 0 or 1, `iser.flags.opcode`
 * as the opcode nibble, `iscsi.isid` as hex bytes, `iscsi.keyvalue` once per key=value pair. A
 * frame's values come from what the iSER decoder made of it (`FieldFrame.ulp` =
 * `{ protocol: 'iser', frame }`). Where tshark shows a field only for some opcodes (`iscsi.flags` for
 * SCSI Command, Response, Data and Text PDUs), so do these.
 */
import type { FieldDef, FieldFrame, FieldValue } from '../../packets/frame-fields';
import type { IserFrame } from './iser-decoder';
import { IserOpcode } from './iser-header';
import { IscsiOpcode as Op, fromInitiator } from './iscsi-names';
import type { IscsiDetails } from './iscsi-details';
import type { IscsiPdu } from './iscsi-pdu';

/** What `FieldFrame.ulp` holds for a frame of an iSER conversation. */
export interface IserUlpFrame {
  readonly protocol: 'iser';
  readonly frame: IserFrame;
}

const NONE: FieldValue[] = [];

function iserOf(f: FieldFrame): IserFrame | null {
  const u = f.ulp;
  return u !== undefined && u !== null && u.protocol === 'iser' ? (u as IserUlpFrame).frame : null;
}

type Get = (n: IserFrame) => number | bigint | boolean | null | undefined;

function uint(name: string, bits: number, hex: boolean, get: Get): FieldDef {
  return {
    name,
    type: 'uint',
    bits,
    text: hex ? (v) => `0x${(v as bigint).toString(16).padStart(bits / 4, '0')}` : (v) => String(v),
    values: (f) => {
      const n = iserOf(f);
      const v = n === null ? null : get(n);
      return v === null || v === undefined ? NONE : [typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v)];
    },
  };
}

function bool(name: string, get: (n: IserFrame) => boolean | null | undefined): FieldDef {
  return { ...uint(name, 1, false, get), type: 'bool' };
}

const ctrl = (n: IserFrame) => (n.header?.opcode === IserOpcode.ISCSI_CTRL ? n.header : null);
const hello = (n: IserFrame) => (n.header?.opcode === IserOpcode.HELLO ? n.header : null);
const reply = (n: IserFrame) => (n.header?.opcode === IserOpcode.HELLO_REPLY ? n.header : null);
const pdu = (n: IserFrame): IscsiPdu | null => n.pdu;
const det = (n: IserFrame): IscsiDetails | null => n.details;
const op = (n: IserFrame): number | null => n.pdu?.opcode ?? null;
const is = (n: IserFrame, ...ops: number[]) => {
  const o = op(n);
  return o !== null && ops.includes(o);
};

const ALL: readonly FieldDef[] = [
  { name: 'iser', type: 'proto', bits: 0, text: () => 'iser', values: (f) => (iserOf(f)?.header == null ? NONE : [new Uint8Array(0)]) },
  uint('iser.flags', 8, true, (n) => n.header?.flags),
  uint('iser.flags.opcode', 8, true, (n) => n.header?.opcode),
  bool('iser.flags.wsv', (n) => ctrl(n)?.wsv),
  bool('iser.flags.rsv', (n) => ctrl(n)?.rsv),
  bool('iser.flags.rej', (n) => reply(n)?.rej),
  uint('iser.write_stag', 32, true, (n) => ctrl(n)?.writeStag),
  uint('iser.write_base_offset', 64, true, (n) => ctrl(n)?.writeBaseOffset),
  uint('iser.read_stag', 32, true, (n) => ctrl(n)?.readStag),
  uint('iser.read_base_offset', 64, true, (n) => ctrl(n)?.readBaseOffset),
  uint('iser.ird', 16, true, (n) => hello(n)?.ird),
  uint('iser.ord', 16, true, (n) => reply(n)?.ord),
  { name: 'iscsi', type: 'proto', bits: 0, text: () => 'iscsi', values: (f) => (iserOf(f)?.pdu == null ? NONE : [new Uint8Array(0)]) },
  uint('iscsi.opcode', 8, true, (n) => op(n)),
  bool('iscsi.I', (n) => {
    const p = pdu(n);
    return p !== null && fromInitiator(p.opcode) ? p.immediate : null;
  }),
  uint('iscsi.flags', 8, true, (n) =>
    is(n, Op.SCSI_COMMAND, Op.SCSI_RESPONSE, Op.SCSI_DATA_IN, Op.SCSI_DATA_OUT, Op.TEXT_REQUEST, Op.TEXT_RESPONSE) ? pdu(n)?.flags : null,
  ),
  bool('iscsi.scsicommand.F', (n) => (is(n, Op.SCSI_COMMAND) ? ((pdu(n)?.flags ?? 0) & 0x80) !== 0 : null)),
  bool('iscsi.scsicommand.R', (n) => det(n)?.scsiCommand?.read),
  bool('iscsi.scsicommand.W', (n) => det(n)?.scsiCommand?.write),
  uint('iscsi.scsicommand.attr', 8, true, (n) => det(n)?.scsiCommand?.attr),
  // tshark 4.0 shows no lengths in a Task Management Function Response (RFC 7143 §11.6: both are zero there).
  uint('iscsi.totalahslength', 8, false, (n) => (is(n, Op.TASK_MGMT_RESPONSE) ? null : pdu(n)?.totalAhsLength)),
  uint('iscsi.datasegmentlength', 32, false, (n) => (is(n, Op.TASK_MGMT_RESPONSE) ? null : pdu(n)?.dataSegmentLength)),
  uint('iscsi.initiatortasktag', 32, true, (n) => pdu(n)?.initiatorTaskTag),
  uint('iscsi.scsicommand.expecteddatatransferlength', 32, false, (n) => det(n)?.scsiCommand?.expectedDataTransferLength),
  uint('iscsi.cmdsn', 32, false, (n) => det(n)?.cmdSn),
  uint('iscsi.expstatsn', 32, false, (n) => det(n)?.expStatSn),
  uint('iscsi.statsn', 32, false, (n) => det(n)?.statSn),
  uint('iscsi.expcmdsn', 32, false, (n) => det(n)?.expCmdSn),
  uint('iscsi.maxcmdsn', 32, false, (n) => det(n)?.maxCmdSn),
  uint('iscsi.targettransfertag', 32, true, (n) => det(n)?.targetTransferTag),
  bool('iscsi.scsiresponse.o', (n) => det(n)?.scsiResponse?.bidiOverflow),
  bool('iscsi.scsiresponse.u', (n) => det(n)?.scsiResponse?.bidiUnderflow),
  bool('iscsi.scsiresponse.O', (n) => det(n)?.scsiResponse?.overflow),
  bool('iscsi.scsiresponse.U', (n) => det(n)?.scsiResponse?.underflow),
  uint('iscsi.scsiresponse.response', 8, true, (n) => det(n)?.scsiResponse?.response),
  uint('iscsi.scsiresponse.status', 8, true, (n) => det(n)?.scsiResponse?.status),
  uint('iscsi.scsiresponse.residualcount', 32, false, (n) => det(n)?.scsiResponse?.residualCount),
  uint('iscsi.scsiresponse.bidireadresidualcount', 32, false, (n) => det(n)?.scsiResponse?.bidiReadResidualCount),
  uint('iscsi.scsiresponse.senselength', 16, false, (n) => det(n)?.scsiResponse?.senseLength),
  bool('iscsi.login.T', (n) => det(n)?.login?.transit),
  bool('iscsi.login.C', (n) => det(n)?.login?.cont),
  uint('iscsi.login.csg', 8, true, (n) => det(n)?.login?.csg),
  uint('iscsi.login.nsg', 8, true, (n) => det(n)?.login?.nsg),
  uint('iscsi.versionmax', 8, true, (n) => det(n)?.login?.versionMax),
  uint('iscsi.versionmin', 8, true, (n) => (is(n, Op.LOGIN_REQUEST) ? det(n)?.login?.versionMinOrActive : null)),
  uint('iscsi.versionactive', 8, true, (n) => (is(n, Op.LOGIN_RESPONSE) ? det(n)?.login?.versionMinOrActive : null)),
  {
    name: 'iscsi.isid',
    type: 'bytes',
    bits: 0,
    text: (v) => Buffer.from(v as Uint8Array).toString('hex'),
    values: (f) => {
      const l = iserOf(f)?.details?.login ?? null;
      return l === null ? NONE : [l.isid];
    },
  },
  uint('iscsi.tsih', 16, true, (n) => det(n)?.login?.tsih),
  uint('iscsi.cid', 16, true, (n) => det(n)?.login?.cid ?? det(n)?.logoutCid),
  uint('iscsi.login.status', 16, true, (n) => {
    const l = det(n)?.login;
    return l == null || l.statusClass === null || l.statusDetail === null ? null : (l.statusClass << 8) | l.statusDetail;
  }),
  bool('iscsi.text.F', (n) => (is(n, Op.TEXT_REQUEST, Op.TEXT_RESPONSE) ? ((pdu(n)?.flags ?? 0) & 0x80) !== 0 : null)),
  bool('iscsi.text.C', (n) => det(n)?.textContinue),
  {
    name: 'iscsi.keyvalue',
    type: 'bytes',
    bits: 0,
    text: (v) => Buffer.from(v as Uint8Array).toString('utf8'),
    values: (f) => (iserOf(f)?.details?.keyValues ?? []).map((s) => new Uint8Array(Buffer.from(s, 'utf8'))),
  },
  uint('iscsi.logout.reason', 8, true, (n) => det(n)?.logoutReason),
  uint('iscsi.logout.response', 8, true, (n) => det(n)?.logoutResponse),
  uint('iscsi.time2wait', 16, true, (n) => det(n)?.time2Wait),
  uint('iscsi.time2retain', 16, true, (n) => det(n)?.time2Retain),
  uint('iscsi.taskmanfun.function', 8, true, (n) => det(n)?.tmfFunction),
  uint('iscsi.taskmanfun.referencedtasktag', 32, true, (n) => det(n)?.referencedTaskTag),
  uint('iscsi.refcmdsn', 32, false, (n) => det(n)?.refCmdSn),
  uint('iscsi.taskmanfun.response', 8, true, (n) => det(n)?.tmfResponse),
];

const BY_NAME: ReadonlyMap<string, FieldDef> = new Map(ALL.map((d) => [d.name, d]));

export function iserField(name: string): FieldDef | undefined {
  return BY_NAME.get(name);
}

export function iserFieldNames(): string[] {
  return ALL.map((d) => d.name);
}
