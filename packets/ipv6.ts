/**
 * IPv6 fixed header (RFC 8200). The RoCE v1 GRH has the same layout (IBTA
 * vol. 1 §8.3), so `grh.ts` builds on this module.
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkUint } from './bytes';

export const IPV6_LEN = 40;

export const OFF = Object.freeze({ VER_TC_FL: 0, PAYLOAD_LEN: 4, NEXT_HEADER: 6, HOP_LIMIT: 7, SRC: 8, DST: 24 });

export interface Ipv6Header {
  /** Traffic class (8 bits): DSCP in the upper 6, ECN in the lower 2. */
  trafficClass: number;
  /** Flow label (20 bits). */
  flowLabel: number;
  payloadLength: number;
  nextHeader: number;
  hopLimit: number;
  /** 16 address bytes (a view into the frame after parsing). */
  src: Uint8Array;
  dst: Uint8Array;
}

export function parseIpv6(view: DataView, off: number, end: number = view.byteLength, what = 'IPv6 header'): Ipv6Header {
  need(end, off, IPV6_LEN, what);
  const w = view.getUint32(off + OFF.VER_TC_FL);
  if (w >>> 28 !== 6) throw new WireError(WireErrorCode.BadField, off, `${what} has version ${w >>> 28}`);
  return {
    trafficClass: (w >>> 20) & 0xff,
    flowLabel: w & 0xfffff,
    payloadLength: view.getUint16(off + OFF.PAYLOAD_LEN),
    nextHeader: view.getUint8(off + OFF.NEXT_HEADER),
    hopLimit: view.getUint8(off + OFF.HOP_LIMIT),
    src: new Uint8Array(view.buffer, view.byteOffset + off + OFF.SRC, 16),
    dst: new Uint8Array(view.buffer, view.byteOffset + off + OFF.DST, 16),
  };
}

/** Writes the header at `off` and returns its length. */
export function emitIpv6(h: Ipv6Header, view: DataView, off: number): number {
  checkUint(h.trafficClass, 0xff, 'trafficClass');
  checkUint(h.flowLabel, 0xfffff, 'flowLabel');
  checkUint(h.payloadLength, 0xffff, 'payloadLength');
  checkUint(h.nextHeader, 0xff, 'nextHeader');
  checkUint(h.hopLimit, 0xff, 'hopLimit');
  if (h.src.length !== 16 || h.dst.length !== 16) throw new WireError(WireErrorCode.BadValue, 0, 'IPv6 addresses must be 16 bytes');
  view.setUint32(off + OFF.VER_TC_FL, ((6 << 28) | (h.trafficClass << 20) | h.flowLabel) >>> 0);
  view.setUint16(off + OFF.PAYLOAD_LEN, h.payloadLength);
  view.setUint8(off + OFF.NEXT_HEADER, h.nextHeader);
  view.setUint8(off + OFF.HOP_LIMIT, h.hopLimit);
  for (let i = 0; i < 16; i++) {
    view.setUint8(off + OFF.SRC + i, h.src[i] ?? 0);
    view.setUint8(off + OFF.DST + i, h.dst[i] ?? 0);
  }
  return IPV6_LEN;
}
