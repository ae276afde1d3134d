/**
 * A whole iSER message as one RDMA SEND message carries it (RFC 7145 §7.2): the iSER header,
 * then, for a control-type header, the iSCSI PDU. A Hello or HelloReply is the header alone.
 * `parseIserMessage` throws only `WireError`.
 */
import { type IserHeader, ISER_HEADER_LEN, IserOpcode, emitIserHeader, parseIserHeader } from './iser-header';
import { type IscsiPdu, emitIscsiPdu, parseIscsiPdu } from './iscsi-pdu';

export interface IserMessage {
  header: IserHeader;
  pdu: IscsiPdu | null;
}

export function parseIserMessage(view: DataView, off: number, end: number): IserMessage {
  const header = parseIserHeader(view, off, end);
  const pdu = header.opcode === IserOpcode.ISCSI_CTRL ? parseIscsiPdu(view, off + ISER_HEADER_LEN, end) : null;
  return { header, pdu };
}

export function emitIserMessage(m: IserMessage): Uint8Array {
  const h = emitIserHeader(m.header);
  const p = m.pdu === null ? new Uint8Array(0) : emitIscsiPdu(m.pdu);
  const out = new Uint8Array(h.length + p.length);
  out.set(h, 0);
  out.set(p, h.length);
  return out;
}
