/**
 * The SMB2 packet header (MS-SMB2 §2.2.1), 64 bytes, little-endian: ProtocolId 0xFE 'S' 'M' 'B'
 * (0), StructureSize 64 (4), CreditCharge (6), Status (8: an NTSTATUS in a response; ChannelSequence
 * and Reserved in a request of SMB 3.x), Command (12), CreditRequest/CreditResponse (14), Flags
 * (16; 0x1 SMB2_FLAGS_SERVER_TO_REDIR marks a response, 0x2 ASYNC_COMMAND), NextCommand (20),
 * MessageId (24), then ProcessId and TreeId (32, 36) in the sync form or AsyncId (32) in the async
 * one, SessionId (40) and Signature (48).
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';

export const SMB2_HEADER_LEN = 64;
export const SMB2_PROTOCOL_ID = 0xfe534d42;

/** SMB2 commands (MS-SMB2 §2.2.1.2). */
export const Smb2Command = {
  NEGOTIATE: 0x00,
  SESSION_SETUP: 0x01,
  LOGOFF: 0x02,
  TREE_CONNECT: 0x03,
  TREE_DISCONNECT: 0x04,
  CREATE: 0x05,
  CLOSE: 0x06,
  FLUSH: 0x07,
  READ: 0x08,
  WRITE: 0x09,
  LOCK: 0x0a,
  IOCTL: 0x0b,
  CANCEL: 0x0c,
  ECHO: 0x0d,
  QUERY_DIRECTORY: 0x0e,
  CHANGE_NOTIFY: 0x0f,
  QUERY_INFO: 0x10,
  SET_INFO: 0x11,
  OPLOCK_BREAK: 0x12,
} as const;

const COMMAND_NAMES: readonly string[] = [
  'NEGOTIATE',
  'SESSION_SETUP',
  'LOGOFF',
  'TREE_CONNECT',
  'TREE_DISCONNECT',
  'CREATE',
  'CLOSE',
  'FLUSH',
  'READ',
  'WRITE',
  'LOCK',
  'IOCTL',
  'CANCEL',
  'ECHO',
  'QUERY_DIRECTORY',
  'CHANGE_NOTIFY',
  'QUERY_INFO',
  'SET_INFO',
  'OPLOCK_BREAK',
];

export function smb2CommandName(cmd: number): string {
  return COMMAND_NAMES[cmd] ?? `0x${cmd.toString(16).padStart(4, '0')}`;
}

export const SMB2_FLAGS_SERVER_TO_REDIR = 0x00000001;
export const SMB2_FLAGS_ASYNC_COMMAND = 0x00000002;
/** A compound's command that works on the result of the one before (MS-SMB2 §3.2.4.1.4). */
export const SMB2_FLAGS_RELATED_OPERATIONS = 0x00000004;

export interface Smb2Header {
  creditCharge: number;
  /** NTSTATUS of a response; ChannelSequence/Reserved of a request. */
  status: number;
  command: number;
  credits: number;
  flags: number;
  nextCommand: number;
  messageId: bigint;
  /** The words at 32 and 36: ProcessId and TreeId in the sync form; AsyncId's low and high halves in the async one. */
  word32: number;
  word36: number;
  sessionId: bigint;
}

export function isResponse(h: Smb2Header): boolean {
  return (h.flags & SMB2_FLAGS_SERVER_TO_REDIR) !== 0;
}

export function parseSmb2Header(view: DataView, off: number, end: number): Smb2Header {
  need(end, off, SMB2_HEADER_LEN, 'SMB2 header');
  const pid = view.getUint32(off, false);
  if (pid !== SMB2_PROTOCOL_ID)
    throw new WireError(WireErrorCode.BadField, off, `SMB2 ProtocolId 0x${pid.toString(16).padStart(8, '0')}: 0xfe534d42 expected (MS-SMB2 §2.2.1)`);
  const size = view.getUint16(off + 4, true);
  if (size !== SMB2_HEADER_LEN) throw new WireError(WireErrorCode.BadField, off + 4, `SMB2 header StructureSize ${size}: 64 expected (MS-SMB2 §2.2.1)`);
  return {
    creditCharge: view.getUint16(off + 6, true),
    status: view.getUint32(off + 8, true),
    command: view.getUint16(off + 12, true),
    credits: view.getUint16(off + 14, true),
    flags: view.getUint32(off + 16, true),
    nextCommand: view.getUint32(off + 20, true),
    messageId: view.getBigUint64(off + 24, true),
    word32: view.getUint32(off + 32, true),
    word36: view.getUint32(off + 36, true),
    sessionId: view.getBigUint64(off + 40, true),
  };
}

/** The header into `view` at `off` (Signature left zero). */
export function emitSmb2Header(h: Smb2Header, view: DataView, off: number): void {
  checkUint(h.creditCharge, 0xffff, 'SMB2 CreditCharge');
  checkUint(h.status, 0xffffffff, 'SMB2 Status');
  checkUint(h.command, 0xffff, 'SMB2 Command');
  checkUint(h.credits, 0xffff, 'SMB2 CreditRequest');
  checkUint(h.flags, 0xffffffff, 'SMB2 Flags');
  checkUint(h.nextCommand, 0xffffffff, 'SMB2 NextCommand');
  checkU64(h.messageId, 'SMB2 MessageId');
  checkUint(h.word32, 0xffffffff, 'SMB2 ProcessId');
  checkUint(h.word36, 0xffffffff, 'SMB2 TreeId');
  checkU64(h.sessionId, 'SMB2 SessionId');
  view.setUint32(off, SMB2_PROTOCOL_ID, false);
  view.setUint16(off + 4, SMB2_HEADER_LEN, true);
  view.setUint16(off + 6, h.creditCharge, true);
  view.setUint32(off + 8, h.status, true);
  view.setUint16(off + 12, h.command, true);
  view.setUint16(off + 14, h.credits, true);
  view.setUint32(off + 16, h.flags, true);
  view.setUint32(off + 20, h.nextCommand, true);
  view.setBigUint64(off + 24, h.messageId, true);
  view.setUint32(off + 32, h.word32, true);
  view.setUint32(off + 36, h.word36, true);
  view.setBigUint64(off + 40, h.sessionId, true);
}
