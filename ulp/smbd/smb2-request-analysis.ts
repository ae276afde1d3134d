/**
 * `roce analyze`'s view of SMB Direct: each SMB2 request from the data transfer that completes it
 * to the response with its MessageId, per connection, through the request analysis every protocol
 * shares (ulp/exchange-analysis.ts); the SMB Direct negotiation (MS-SMBD §2.2.1-§2.2.2) is one
 * request too. An interim response (STATUS_PENDING on an async response, MS-SMB2 §3.3.4.2) is not
 * the answer: the final one is. An error: an NTSTATUS whose severity is error (0xC…), except
 * STATUS_MORE_PROCESSING_REQUIRED, which a SESSION_SETUP answers with on its way to success
 * (MS-SMB2 §3.3.5.5). The RDMA transfers of a READ or WRITE are the server's RDMA WRITEs and READs
 * through the request's buffer descriptors, as the decoder ties them. Each command of a compound
 * (MS-SMB2 §3.2.4.1.4) counts as a request of its own, answered by the response of its MessageId.
 */
import type { SmbdFrame } from './smbd-decoder';
import { SMB2_FLAGS_ASYNC_COMMAND, isResponse, smb2CommandName } from './smb2-header';
import { type ExchangeAt, ExchangeAnalysis, type ExchangeReport, rdmaOpOf } from '../exchange-analysis';

export interface SmbdAnalysis {
  /** Each connection's requests (each record's key is its MessageId in decimal, or `negotiate`). */
  connections: ExchangeReport[];
}

const STATUS_PENDING = 0x00000103;
const STATUS_MORE_PROCESSING_REQUIRED = 0xc0000016;
/** NTSTATUS values SMB2 answers with often (MS-ERREF §2.3.1). */
const NT_STATUS: Record<number, string> = {
  0x00000000: 'STATUS_SUCCESS',
  0x80000005: 'STATUS_BUFFER_OVERFLOW',
  0xc000000d: 'STATUS_INVALID_PARAMETER',
  0xc0000011: 'STATUS_END_OF_FILE',
  0xc0000016: 'STATUS_MORE_PROCESSING_REQUIRED',
  0xc0000022: 'STATUS_ACCESS_DENIED',
  0xc0000034: 'STATUS_OBJECT_NAME_NOT_FOUND',
  0xc0000043: 'STATUS_SHARING_VIOLATION',
  0xc00000bb: 'STATUS_NOT_SUPPORTED',
  0xc000006d: 'STATUS_LOGON_FAILURE',
  0xc0000120: 'STATUS_CANCELLED',
  0xc000009a: 'STATUS_INSUFFICIENT_RESOURCES',
};

export function ntStatusName(s: number): string {
  return NT_STATUS[s] ?? `NTSTATUS 0x${s.toString(16).padStart(8, '0')}`;
}

function isError(s: number): boolean {
  return s >>> 30 === 3 && s !== STATUS_MORE_PROCESSING_REQUIRED;
}

export class Smb2RequestAnalysis {
  private readonly x = new ExchangeAnalysis();

  take(f: SmbdFrame, at: ExchangeAt): void {
    const conn = f.conn;
    if (conn === null) return;
    if (f.kind === 'negotiate-request') {
      this.x.take({ kind: 'request', conn, key: 'negotiate', name: 'SMBD Negotiate', sendBytes: f.length }, at);
      return;
    }
    if (f.kind === 'negotiate-response' && f.negotiateResponse !== null) {
      const s = f.negotiateResponse.status;
      this.x.take({ kind: 'response', conn, key: 'negotiate', status: ntStatusName(s), error: isError(s), sendBytes: f.length }, at);
      return;
    }
    if (f.kind === 'data' && f.smb2 !== null) {
      // Each command of a compound is a request (or response) of its own, by its MessageId; the
      // message's bytes go to the first command, less the later ones' own.
      const cmds = f.smb2.commands;
      cmds.forEach((p, i) => {
        const h = p.header;
        const key = h.messageId.toString();
        const sendBytes = i === 0 ? f.length - cmds.slice(1).reduce((n, c) => n + c.size, 0) : p.size;
        if (!isResponse(h)) {
          this.x.take({ kind: 'request', conn, key, name: `SMB2 ${smb2CommandName(h.command)}`, sendBytes }, at);
          return;
        }
        if (h.status === STATUS_PENDING && (h.flags & SMB2_FLAGS_ASYNC_COMMAND) !== 0) return;
        this.x.take({ kind: 'response', conn, key, status: ntStatusName(h.status), error: isError(h.status), sendBytes }, at);
      });
      return;
    }
    if (f.kind === 'rdma')
      this.x.take(
        { kind: 'rdma', conn, key: f.of === null ? null : f.of.messageId.toString(), op: rdmaOpOf(at.opcode), bytes: f.length, direction: f.direction ?? '' },
        at,
      );
  }

  result(): SmbdAnalysis {
    return { connections: this.x.result() };
  }
}
