/**
 * The parts of SMB2 READ and WRITE that tie RDMA transfers to them (MS-SMB2 §2.2.19-§2.2.22), all
 * offsets from the start of the SMB2 header, little-endian:
 *
 * READ request (StructureSize 49): Length (68), Offset (72), FileId (80), MinimumCount (96),
 * Channel (100), RemainingBytes (104), ReadChannelInfoOffset (108), ReadChannelInfoLength (110).
 * WRITE request (StructureSize 49): DataOffset (66), Length (68), Offset (72), FileId (80), Channel
 * (96), RemainingBytes (100), WriteChannelInfoOffset (104), WriteChannelInfoLength (106), Flags (108).
 * READ response (StructureSize 17): DataOffset (66), DataLength (68), DataRemaining (72); over an
 * RDMA channel DataLength is 0 and DataRemaining counts the bytes the server wrote by RDMA (MS-SMB2
 * §3.3.5.12). WRITE response (StructureSize 17): Count (68).
 *
 * With Channel SMB2_CHANNEL_RDMA_V1 (1) or _V1_INVALIDATE (2) the channel info holds buffer
 * descriptors (buffer-descriptor.ts) and the data moves by RDMA, not in the message.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';
import { type BufferDescriptor, emitBufferDescriptors, parseBufferDescriptors } from './buffer-descriptor';
import { SMB2_HEADER_LEN } from './smb2-header';

export const Smb2Channel = { NONE: 0, RDMA_V1: 1, RDMA_V1_INVALIDATE: 2, RDMA_TRANSFORM: 3 } as const;
export const READ_WRITE_REQUEST_SIZE = 49;
/** The fixed part of a READ or WRITE request body (StructureSize 49 counts one byte of Buffer). */
const REQUEST_BODY_LEN = 48;
const RESPONSE_BODY_LEN = 16;

export interface ReadWriteRequest {
  length: number;
  offset: bigint;
  channel: number;
  /** The RDMA buffer descriptors of an RDMA channel (empty for none). */
  descriptors: BufferDescriptor[];
}

function isRdma(channel: number): boolean {
  return channel === Smb2Channel.RDMA_V1 || channel === Smb2Channel.RDMA_V1_INVALIDATE;
}

/** A READ (`write` false) or WRITE request body, in an SMB2 message whose header is at 0 of `view` (the message's bytes). */
export function parseReadWriteRequest(view: DataView, write: boolean): ReadWriteRequest {
  const b = SMB2_HEADER_LEN;
  need(view.byteLength, b, REQUEST_BODY_LEN, write ? 'SMB2 WRITE request' : 'SMB2 READ request');
  const size = view.getUint16(b, true);
  if (size !== READ_WRITE_REQUEST_SIZE)
    throw new WireError(WireErrorCode.BadField, b, `SMB2 ${write ? 'WRITE' : 'READ'} request StructureSize ${size}: 49 expected`);
  const channel = view.getUint32(b + (write ? 32 : 36), true);
  const infoOff = view.getUint16(b + (write ? 40 : 44), true);
  const infoLen = view.getUint16(b + (write ? 42 : 46), true);
  let descriptors: BufferDescriptor[] = [];
  if (isRdma(channel) && infoLen > 0) {
    if (infoOff + infoLen > view.byteLength)
      throw new WireError(
        WireErrorCode.BadLength,
        b + (write ? 40 : 44),
        `SMB2 channel info of ${infoLen} bytes at ${infoOff} runs past the ${view.byteLength}-byte message`,
      );
    descriptors = parseBufferDescriptors(view, infoOff, infoLen);
  }
  return { length: view.getUint32(b + 4, true), offset: view.getBigUint64(b + 8, true), channel, descriptors };
}

/** The body of a READ or WRITE request, to follow a 64-byte header; the channel info right after the fixed part. */
export function emitReadWriteRequest(r: ReadWriteRequest, write: boolean): Uint8Array {
  checkUint(r.length, 0xffffffff, 'SMB2 Length');
  checkU64(r.offset, 'SMB2 Offset');
  checkUint(r.channel, 0xffffffff, 'SMB2 Channel');
  const info = emitBufferDescriptors(r.descriptors);
  const out = new Uint8Array(REQUEST_BODY_LEN + Math.max(1, info.length));
  const v = new DataView(out.buffer);
  v.setUint16(0, READ_WRITE_REQUEST_SIZE, true);
  if (write) v.setUint16(2, SMB2_HEADER_LEN + REQUEST_BODY_LEN, true);
  v.setUint32(4, r.length, true);
  v.setBigUint64(8, r.offset, true);
  v.setUint32(write ? 32 : 36, r.channel, true);
  if (info.length > 0) {
    v.setUint16(write ? 40 : 44, SMB2_HEADER_LEN + REQUEST_BODY_LEN, true);
    v.setUint16(write ? 42 : 46, info.length, true);
    out.set(info, REQUEST_BODY_LEN);
  }
  return out;
}

/** The bytes a response says were moved: a WRITE response's Count; a READ response's DataLength, or its DataRemaining when DataLength is 0 (the data went by RDMA). */
export function parseReadWriteResponseLength(view: DataView, write: boolean): number {
  need(view.byteLength, SMB2_HEADER_LEN, RESPONSE_BODY_LEN, write ? 'SMB2 WRITE response' : 'SMB2 READ response');
  const length = view.getUint32(SMB2_HEADER_LEN + 4, true);
  return write || length !== 0 ? length : view.getUint32(SMB2_HEADER_LEN + 8, true);
}

/** A WRITE response body with Count `count`. */
export function emitWriteResponse(count: number): Uint8Array {
  checkUint(count, 0xffffffff, 'SMB2 Count');
  const out = new Uint8Array(RESPONSE_BODY_LEN + 1);
  const v = new DataView(out.buffer);
  v.setUint16(0, 17, true);
  v.setUint32(4, count, true);
  return out;
}

/** A READ response body for `rdmaBytes` written by RDMA: DataOffset 0x50, DataLength 0, DataRemaining `rdmaBytes`. */
export function emitReadResponse(rdmaBytes: number): Uint8Array {
  checkUint(rdmaBytes, 0xffffffff, 'SMB2 DataRemaining');
  const out = new Uint8Array(RESPONSE_BODY_LEN + 1);
  const v = new DataView(out.buffer);
  v.setUint16(0, 17, true);
  out[2] = SMB2_HEADER_LEN + RESPONSE_BODY_LEN;
  v.setUint32(8, rdmaBytes, true);
  return out;
}

/** A SESSION_SETUP request's Channel (MS-SMB2 §2.2.5: StructureSize, Flags, SecurityMode, Capabilities, then Channel at body offset 8; 0 unless SMB 3.x binds a channel). */
export function parseSessionSetupChannel(view: DataView): number {
  need(view.byteLength, SMB2_HEADER_LEN, 24, 'SMB2 SESSION_SETUP request');
  return view.getUint32(SMB2_HEADER_LEN + 8, true);
}
