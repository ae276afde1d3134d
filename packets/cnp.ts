/**
 * Congestion Notification Packet (RoCE v2, IBTA annex A17.9.2): BTH with
 * opcode 0x81, DestQP = the QP whose traffic was marked, BECN set, then 16
 * reserved bytes, then the ICRC. ConnectX NICs send PSN 0 and UDP source port 0.
 */
import { need } from './errors';

export const CNP_RESERVED_LEN = 16;

export interface CnpReserved {
  /** The 16 reserved bytes (zero on the wire from known senders). */
  reserved: Uint8Array;
}

export function parseCnpReserved(view: DataView, off: number, end: number = view.byteLength): CnpReserved {
  need(end, off, CNP_RESERVED_LEN, 'CNP reserved field');
  return { reserved: new Uint8Array(view.buffer, view.byteOffset + off, CNP_RESERVED_LEN) };
}

export function emitCnpReserved(h: CnpReserved | null, view: DataView, off: number): number {
  for (let i = 0; i < CNP_RESERVED_LEN; i++) view.setUint8(off + i, h?.reserved[i] ?? 0);
  return CNP_RESERVED_LEN;
}
