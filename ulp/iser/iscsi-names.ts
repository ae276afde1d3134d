/**
 * Names of iSCSI values (RFC 7143 §11): PDU opcodes, login stages and status classes, task
 * management functions and responses, logout reasons and responses, reject reasons; and SCSI
 * status codes (SAM-5 §5.3).
 */

export const IscsiOpcode = {
  NOP_OUT: 0x00,
  SCSI_COMMAND: 0x01,
  TASK_MGMT_REQUEST: 0x02,
  LOGIN_REQUEST: 0x03,
  TEXT_REQUEST: 0x04,
  SCSI_DATA_OUT: 0x05,
  LOGOUT_REQUEST: 0x06,
  SNACK_REQUEST: 0x10,
  NOP_IN: 0x20,
  SCSI_RESPONSE: 0x21,
  TASK_MGMT_RESPONSE: 0x22,
  LOGIN_RESPONSE: 0x23,
  TEXT_RESPONSE: 0x24,
  SCSI_DATA_IN: 0x25,
  LOGOUT_RESPONSE: 0x26,
  R2T: 0x31,
  ASYNC_MESSAGE: 0x32,
  REJECT: 0x3f,
} as const;

const OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'NOP Out',
  0x01: 'SCSI Command',
  0x02: 'Task Management Function',
  0x03: 'Login Command',
  0x04: 'Text Command',
  0x05: 'SCSI Data Out',
  0x06: 'Logout Command',
  0x10: 'SNACK Request',
  0x20: 'NOP In',
  0x21: 'SCSI Response',
  0x22: 'Task Management Function Response',
  0x23: 'Login Response',
  0x24: 'Text Response',
  0x25: 'SCSI Data In',
  0x26: 'Logout Response',
  0x31: 'Ready To Transfer',
  0x32: 'Asynchronous Message',
  0x3f: 'Reject',
});

/** The opcode's name as Wireshark writes it (`NOP Out`, `SCSI Command`, `Login Response`). */
export function iscsiOpcodeName(op: number): string {
  return OPCODE_NAMES[op] ?? `Unknown opcode 0x${op.toString(16).padStart(2, '0')}`;
}

/** Opcodes sent by the initiator (RFC 7143 §11.1.1): 0x00-0x1f. */
export function fromInitiator(op: number): boolean {
  return op < 0x20;
}

export const LOGIN_STAGE_NAMES: readonly string[] = ['Security negotiation', 'Operational negotiation', 'reserved', 'Full feature phase'];

const LOGIN_STATUS_CLASS: readonly string[] = ['Success', 'Redirection', 'Initiator Error', 'Target Error'];

export function loginStatusName(statusClass: number, detail: number): string {
  if (statusClass === 0 && detail === 0) return 'Success';
  return `${LOGIN_STATUS_CLASS[statusClass] ?? 'reserved class'} 0x${detail.toString(16).padStart(2, '0')}`;
}

const TMF_FUNCTIONS: Readonly<Record<number, string>> = Object.freeze({
  1: 'ABORT TASK',
  2: 'ABORT TASK SET',
  3: 'CLEAR ACA',
  4: 'CLEAR TASK SET',
  5: 'LOGICAL UNIT RESET',
  6: 'TARGET WARM RESET',
  7: 'TARGET COLD RESET',
  8: 'TASK REASSIGN',
});

export function tmfFunctionName(f: number): string {
  return TMF_FUNCTIONS[f] ?? 'reserved';
}

const TMF_RESPONSES: Readonly<Record<number, string>> = Object.freeze({
  0: 'Function complete',
  1: 'Task does not exist',
  2: 'LUN does not exist',
  3: 'Task still allegiant',
  4: 'Task allegiance reassignment not supported',
  5: 'Task management function not supported',
  6: 'Function authorization failed',
  255: 'Function rejected',
});

export function tmfResponseName(r: number): string {
  return TMF_RESPONSES[r] ?? 'reserved';
}

const LOGOUT_REASONS: readonly string[] = ['close the session', 'close the connection', 'remove the connection for recovery'];

export function logoutReasonName(r: number): string {
  return LOGOUT_REASONS[r] ?? 'reserved';
}

const LOGOUT_RESPONSES: readonly string[] = [
  'connection or session closed successfully',
  'CID not found',
  'connection recovery is not supported',
  'cleanup failed',
];

export function logoutResponseName(r: number): string {
  return LOGOUT_RESPONSES[r] ?? 'reserved';
}

/** SCSI status (SAM-5 §5.3.1). */
const SCSI_STATUS: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'GOOD',
  0x02: 'CHECK CONDITION',
  0x04: 'CONDITION MET',
  0x08: 'BUSY',
  0x18: 'RESERVATION CONFLICT',
  0x28: 'TASK SET FULL',
  0x30: 'ACA ACTIVE',
  0x40: 'TASK ABORTED',
});

export function scsiStatusName(s: number): string {
  return SCSI_STATUS[s] ?? `status 0x${s.toString(16).padStart(2, '0')}`;
}

/** SCSI Response's Response byte (RFC 7143 §11.4.3). */
export function scsiResponseName(r: number): string {
  return r === 0 ? 'Command Completed at Target' : r === 1 ? 'Target Failure' : 'reserved';
}
