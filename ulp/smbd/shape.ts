/**
 * Which SMB Direct message a SEND's payload looks like, by Wireshark's heuristic (packet-smb-direct.c
 * is_smb_direct(), run on every RC SEND payload of a QP no other dissector claimed):
 *
 * - 32 bytes, MinVersion, MaxVersion and NegotiatedVersion 0x0100, Reserved 0: a negotiate response;
 * - 20 bytes, MinVersion and MaxVersion 0x0100, Reserved 0, and not a data transfer (one of its
 *   last three words non-zero): a negotiate request;
 * - a data transfer: credits up to 255 each way, Flags 0 or 1, Reserved 0, and either 20 bytes of
 *   nothing but zeros after, or more than 24 bytes with DataOffset 24, DataLength non-zero and
 *   Padding 0.
 *
 * The decoder claims a queue pair from the two negotiate shapes only (they open every SMB Direct
 * connection, MS-SMBD §3.1.5.7), not from a data transfer's shape, which many payloads share.
 */
import { NEGOTIATE_REQUEST_LEN, NEGOTIATE_RESPONSE_LEN, SMBD_VERSION_1 } from './negotiate';

export type SmbdShape = 'negotiate-request' | 'negotiate-response' | 'data' | null;

export function smbdShape(view: DataView, off: number, len: number): SmbdShape {
  if (len < NEGOTIATE_REQUEST_LEN) return null;
  const u16 = (o: number) => view.getUint16(off + o, true);
  const u32 = (o: number) => view.getUint32(off + o, true);
  if (len === NEGOTIATE_RESPONSE_LEN && u16(0) === SMBD_VERSION_1 && u16(2) === SMBD_VERSION_1 && u16(4) === SMBD_VERSION_1 && u16(6) === 0)
    return 'negotiate-response';
  const maybeRequest = u16(0) === SMBD_VERSION_1 && u16(2) === SMBD_VERSION_1 && u16(4) === 0;
  let maybeData = u16(0) <= 255 && u16(2) <= 255 && u16(4) <= 1 && u16(6) === 0;
  if (len === NEGOTIATE_REQUEST_LEN) {
    if (u32(8) !== 0 || u32(12) !== 0 || u32(16) !== 0) maybeData = false;
    if (maybeRequest && !maybeData) return 'negotiate-request';
    if (maybeData) return 'data';
  }
  if (len <= 24 || u32(12) !== 24 || u32(16) === 0 || u32(20) !== 0) return null;
  return maybeData ? 'data' : null;
}
