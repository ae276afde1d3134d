/**
 * The SMB Direct data transfer message (MS-SMBD §2.2.3), little-endian: CreditsRequested (0),
 * CreditsGranted (2), Flags (4; 0x0001 SMB_DIRECT_RESPONSE_REQUESTED), Reserved (6),
 * RemainingDataLength (8), DataOffset (12), DataLength (16), Padding (20), then the buffer. A
 * message of 20 bytes with DataLength 0 carries no data (a credit grant or keep-alive); one with
 * data has its DataOffset 8-byte aligned (§2.2.3: 24 in practice, after the 4-byte Padding).
 * RemainingDataLength is what of the upper-layer message is still to come in later messages
 * (MS-SMBD §3.1.5.4 sets it on each segment).
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkUint } from '../../packets/bytes';

export const DATA_TRANSFER_HEADER_LEN = 20;
/** The DataOffset of a message with data: the header and its 4-byte Padding. */
export const DATA_TRANSFER_DATA_OFFSET = 24;
export const SMB_DIRECT_RESPONSE_REQUESTED = 0x0001;

export interface DataTransfer {
  creditsRequested: number;
  creditsGranted: number;
  flags: number;
  remainingDataLength: number;
  dataOffset: number;
  dataLength: number;
  /** The Padding field, when the message is long enough to hold it. */
  padding: number | null;
}

/** The header of the data transfer message in `view[off, end)`; the data must lie within the message. */
export function parseDataTransfer(view: DataView, off: number, end: number): DataTransfer {
  need(end, off, DATA_TRANSFER_HEADER_LEN, 'SMB Direct data transfer header');
  const d: DataTransfer = {
    creditsRequested: view.getUint16(off, true),
    creditsGranted: view.getUint16(off + 2, true),
    flags: view.getUint16(off + 4, true),
    remainingDataLength: view.getUint32(off + 8, true),
    dataOffset: view.getUint32(off + 12, true),
    dataLength: view.getUint32(off + 16, true),
    padding: end - off >= DATA_TRANSFER_DATA_OFFSET ? view.getUint32(off + 20, true) : null,
  };
  if (d.dataLength > 0) {
    if (d.dataOffset < DATA_TRANSFER_HEADER_LEN || d.dataOffset % 8 !== 0)
      throw new WireError(
        WireErrorCode.BadField,
        off + 12,
        `SMB Direct DataOffset ${d.dataOffset}: must be 8-byte aligned and past the 20-byte header (MS-SMBD §2.2.3)`,
      );
    if (d.dataOffset + d.dataLength > end - off)
      throw new WireError(
        WireErrorCode.BadLength,
        off + 16,
        `SMB Direct data of ${d.dataLength} bytes at ${d.dataOffset} runs past the ${end - off}-byte message`,
      );
  }
  return d;
}

/** The message: header, Padding when there is data, and `data` at offset 24. */
export function emitDataTransfer(h: Omit<DataTransfer, 'dataOffset' | 'dataLength' | 'padding'>, data: Uint8Array): Uint8Array {
  checkUint(h.creditsRequested, 0xffff, 'SMBD CreditsRequested');
  checkUint(h.creditsGranted, 0xffff, 'SMBD CreditsGranted');
  checkUint(h.flags, 0xffff, 'SMBD Flags');
  checkUint(h.remainingDataLength, 0xffffffff, 'SMBD RemainingDataLength');
  const len = data.length === 0 ? DATA_TRANSFER_HEADER_LEN : DATA_TRANSFER_DATA_OFFSET + data.length;
  const out = new Uint8Array(len);
  const v = new DataView(out.buffer);
  v.setUint16(0, h.creditsRequested, true);
  v.setUint16(2, h.creditsGranted, true);
  v.setUint16(4, h.flags, true);
  v.setUint32(8, h.remainingDataLength, true);
  if (data.length > 0) {
    v.setUint32(12, DATA_TRANSFER_DATA_OFFSET, true);
    v.setUint32(16, data.length, true);
    out.set(data, DATA_TRANSFER_DATA_OFFSET);
  }
  return out;
}
