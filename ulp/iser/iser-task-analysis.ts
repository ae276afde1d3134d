/**
 * `roce analyze`'s view of iSER: each iSCSI task from the initiator's PDU to the target's answer,
 * per connection, through the request analysis every protocol shares (ulp/exchange-analysis.ts).
 *
 * A request is an initiator PDU with a task tag (RFC 7143 §11: SCSI Command, Task Management
 * Function, Login, Text, Logout, a NOP-Out ping; not Data-Out or SNACK, and not a tag of
 * 0xffffffff, which asks for no answer), keyed by its Initiator Task Tag; the answer is the
 * target's PDU with that tag (SCSI Response, Task Management Function Response, Login Response,
 * Text Response, Logout Response, NOP-In, Reject). An error: a SCSI Response whose Response is not
 * "Command Completed at Target" or whose SCSI status is not GOOD (CHECK CONDITION, BUSY, ...), a
 * Login Response whose status class is not Success, a Task Management or Logout response other
 * than 0, a Reject. The RDMA transfers of a task are the target's WRITEs of read data and READs of
 * write data through the STags of its iSER header (RFC 7145 §5.1), as the decoder ties them.
 */
import type { IserFrame } from './iser-decoder';
import {
  IscsiOpcode,
  fromInitiator,
  iscsiOpcodeName,
  loginStatusName,
  scsiResponseName,
  scsiStatusName,
  tmfResponseName,
  logoutResponseName,
} from './iscsi-names';
import { type ExchangeAt, ExchangeAnalysis, type ExchangeReport, rdmaOpOf } from '../exchange-analysis';

export interface IserAnalysis {
  /** Each connection's tasks (each record's key is its Initiator Task Tag, `0x00000011`). */
  connections: ExchangeReport[];
}

const NO_TASK = 0xffffffff;
const ANSWERS = new Set<number>([
  IscsiOpcode.NOP_IN,
  IscsiOpcode.SCSI_RESPONSE,
  IscsiOpcode.TASK_MGMT_RESPONSE,
  IscsiOpcode.LOGIN_RESPONSE,
  IscsiOpcode.TEXT_RESPONSE,
  IscsiOpcode.LOGOUT_RESPONSE,
  IscsiOpcode.REJECT,
]);

const ittKey = (itt: number): string => `0x${itt.toString(16).padStart(8, '0')}`;

/** The answer's status and whether it is an error. */
function answerStatus(f: IserFrame): { status: string; error: boolean } {
  const p = f.pdu;
  const d = f.details;
  if (p === null || d === null) return { status: '?', error: false };
  const r = d.scsiResponse;
  if (r !== null) return r.response === 0 ? { status: scsiStatusName(r.status), error: r.status !== 0 } : { status: scsiResponseName(r.response), error: true };
  const l = d.login;
  if (l !== null && l.statusClass !== null) return { status: loginStatusName(l.statusClass, l.statusDetail ?? 0), error: l.statusClass !== 0 };
  if (d.tmfResponse !== null) return { status: tmfResponseName(d.tmfResponse), error: d.tmfResponse !== 0 };
  if (d.logoutResponse !== null) return { status: logoutResponseName(d.logoutResponse), error: d.logoutResponse !== 0 };
  if (p.opcode === IscsiOpcode.REJECT) return { status: 'Reject', error: true };
  return { status: iscsiOpcodeName(p.opcode), error: false };
}

export class IserTaskAnalysis {
  private readonly x = new ExchangeAnalysis();

  take(f: IserFrame, at: ExchangeAt): void {
    const conn = f.conn;
    if (conn === null) return;
    if (f.kind === 'message' && f.pdu !== null && f.details !== null) {
      const p = f.pdu;
      const key = ittKey(p.initiatorTaskTag);
      if (fromInitiator(p.opcode)) {
        if (p.initiatorTaskTag === NO_TASK || p.opcode === IscsiOpcode.SCSI_DATA_OUT || p.opcode === IscsiOpcode.SNACK_REQUEST) return;
        const c = f.details.scsiCommand;
        const name = c !== null ? `SCSI ${c.cdb.name}` : iscsiOpcodeName(p.opcode);
        this.x.take({ kind: 'request', conn, key, name, sendBytes: f.length }, at);
      } else if (ANSWERS.has(p.opcode)) {
        this.x.take({ kind: 'response', conn, key, ...answerStatus(f), sendBytes: f.length }, at);
      }
      return;
    }
    if (f.kind === 'data')
      this.x.take(
        { kind: 'rdma', conn, key: f.of === null ? null : ittKey(f.of.itt), op: rdmaOpOf(at.opcode), bytes: f.length, direction: f.direction ?? '' },
        at,
      );
  }

  result(): IserAnalysis {
    return { connections: this.x.result() };
  }
}
