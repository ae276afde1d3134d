/**
 * SMB_DIRECT_BUFFER_DESCRIPTOR_V1 (MS-SMBD §2.2.3.1), the channel info of an SMB2 READ or WRITE
 * whose Channel is SMB2_CHANNEL_RDMA_V1 or _V1_INVALIDATE (MS-SMB2 §2.2.19, §2.2.21): 16 bytes,
 * little-endian: Offset (the peer's registered address, 8), Token (its steering tag, the RKEY an
 * RDMA READ or WRITE carries, 4), Length (4). The server moves the data with RDMA READs (a WRITE's)
 * or RDMA WRITEs (a READ's) whose RETH names these.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkU64, checkUint } from '../../packets/bytes';

export const BUFFER_DESCRIPTOR_LEN = 16;

export interface BufferDescriptor {
  offset: bigint;
  token: number;
  length: number;
}

export function parseBufferDescriptors(view: DataView, off: number, len: number): BufferDescriptor[] {
  if (len % BUFFER_DESCRIPTOR_LEN !== 0)
    throw new WireError(WireErrorCode.BadLength, off, `SMB2 channel info of ${len} bytes: buffer descriptors are ${BUFFER_DESCRIPTOR_LEN} bytes each`);
  need(view.byteLength, off, len, 'SMB2 channel info');
  const out: BufferDescriptor[] = [];
  for (let o = off; o < off + len; o += BUFFER_DESCRIPTOR_LEN)
    out.push({ offset: view.getBigUint64(o, true), token: view.getUint32(o + 8, true), length: view.getUint32(o + 12, true) });
  return out;
}

export function emitBufferDescriptors(ds: readonly BufferDescriptor[]): Uint8Array {
  const out = new Uint8Array(ds.length * BUFFER_DESCRIPTOR_LEN);
  const v = new DataView(out.buffer);
  ds.forEach((d, i) => {
    checkU64(d.offset, 'buffer descriptor Offset');
    checkUint(d.token, 0xffffffff, 'buffer descriptor Token');
    checkUint(d.length, 0xffffffff, 'buffer descriptor Length');
    const o = i * BUFFER_DESCRIPTOR_LEN;
    v.setBigUint64(o, d.offset, true);
    v.setUint32(o + 8, d.token, true);
    v.setUint32(o + 12, d.length, true);
  });
  return out;
}
