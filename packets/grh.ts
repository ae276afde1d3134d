/**
 * Global Route Header (IBTA vol. 1 §8.3.1): the 40-byte header in front of the
 * BTH in RoCE v1 frames (EtherType 0x8915). Its layout is the IPv6 header's,
 * with Next Header 0x1B (IBA BTH) and GIDs for addresses.
 */
import { WireError, WireErrorCode } from './errors';
import { IPV6_LEN, type Ipv6Header, emitIpv6, parseIpv6 } from './ipv6';

export const GRH_LEN = IPV6_LEN;
/** GRH Next Header value that announces a BTH (IBTA vol. 1 §8.3.1). */
export const GRH_NEXT_HEADER_BTH = 0x1b;

export type GrhHeader = Ipv6Header;

export function parseGrh(view: DataView, off: number, end: number = view.byteLength): GrhHeader {
  const h = parseIpv6(view, off, end, 'GRH');
  if (h.nextHeader !== GRH_NEXT_HEADER_BTH) {
    throw new WireError(WireErrorCode.BadField, off + 6, `GRH next header is 0x${h.nextHeader.toString(16)}, not 0x1b (BTH)`);
  }
  return h;
}

export function emitGrh(h: GrhHeader, view: DataView, off: number): number {
  return emitIpv6(h, view, off);
}
