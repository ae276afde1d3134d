/** UDP header (RFC 768). RoCE v2 uses destination port 4791 (IANA) and, in practice, checksum 0. */
import { WireError, WireErrorCode, need } from './errors';
import { checkUint } from './bytes';

export const UDP_LEN = 8;
/** IANA-assigned UDP destination port of RoCE v2. */
export const ROCE_V2_PORT = 4791;

export const OFF = Object.freeze({ SRC_PORT: 0, DST_PORT: 2, LENGTH: 4, CHECKSUM: 6 });

export interface UdpHeader {
  srcPort: number;
  dstPort: number;
  /** Header plus payload length. */
  length: number;
  checksum: number;
}

export function parseUdp(view: DataView, off: number, end: number = view.byteLength): UdpHeader {
  need(end, off, UDP_LEN, 'UDP header');
  const length = view.getUint16(off + OFF.LENGTH);
  if (length < UDP_LEN) throw new WireError(WireErrorCode.BadLength, off + OFF.LENGTH, `UDP length ${length} is shorter than its header`);
  return {
    srcPort: view.getUint16(off + OFF.SRC_PORT),
    dstPort: view.getUint16(off + OFF.DST_PORT),
    length,
    checksum: view.getUint16(off + OFF.CHECKSUM),
  };
}

export function emitUdp(h: UdpHeader, view: DataView, off: number): number {
  checkUint(h.srcPort, 0xffff, 'srcPort');
  checkUint(h.dstPort, 0xffff, 'dstPort');
  checkUint(h.length, 0xffff, 'length');
  checkUint(h.checksum, 0xffff, 'checksum');
  view.setUint16(off + OFF.SRC_PORT, h.srcPort);
  view.setUint16(off + OFF.DST_PORT, h.dstPort);
  view.setUint16(off + OFF.LENGTH, h.length);
  view.setUint16(off + OFF.CHECKSUM, h.checksum);
  return UDP_LEN;
}
