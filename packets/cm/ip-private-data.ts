/**
 * The IP CM private data header (IBTA vol. 1 Annex A11; the kernel's `struct
 * cma_hdr` in drivers/infiniband/core/cma.c), the first 36 bytes of the private
 * data of a REQ or SIDR_REQ whose service ID is in the RDMA IP CM range
 * (service-id.ts). The consumer's own private data follows it.
 *
 *   byte 0       MajV(7:4) MinV(3:0)      -- CMA_VERSION 0x00
 *   byte 1       IPV(7:4) Reserved(3:0)   -- 4 or 6
 *   bytes 2-3    source port
 *   bytes 4-19   source IP address
 *   bytes 20-35  destination IP address
 *
 * An IPv4 address is the last 4 bytes of its 16 (the kernel's `union
 * cma_ip_addr`: three zero words, then the address; Wireshark reads it there).
 * The header is not checked: any version and IP version are values.
 */
import { WireError, WireErrorCode, need } from '../errors';
import { checkUint, ipv4FromString, ipv4ToString, ipv6FromString, ipv6ToString } from '../bytes';

export const IP_CM_HEADER_LEN = 36;
export const OFF = Object.freeze({ VERSION: 0, IP_VERSION: 1, SRC_PORT: 2, SRC_ADDR: 4, DST_ADDR: 20 });
/** The kernel's CMA_VERSION: major 0, minor 0. */
export const CMA_VERSION = 0x00;

export interface IpCmPrivateData {
  majorVersion: number;
  minorVersion: number;
  /** 4 or 6 (any 4-bit value is kept). */
  ipVersion: number;
  reserved: number;
  srcPort: number;
  /** 16 bytes; for IPv4 the address is in the last 4. */
  srcAddr: Uint8Array;
  dstAddr: Uint8Array;
}

export function parseIpCmPrivateData(view: DataView, off: number, end: number = view.byteLength): IpCmPrivateData {
  need(end, off, IP_CM_HEADER_LEN, 'IP CM private data');
  const v = view.getUint8(off + OFF.VERSION);
  const ipv = view.getUint8(off + OFF.IP_VERSION);
  const addr = (at: number): Uint8Array => new Uint8Array(view.buffer, view.byteOffset + off + at, 16).slice();
  return {
    majorVersion: v >>> 4,
    minorVersion: v & 0xf,
    ipVersion: ipv >>> 4,
    reserved: ipv & 0xf,
    srcPort: view.getUint16(off + OFF.SRC_PORT),
    srcAddr: addr(OFF.SRC_ADDR),
    dstAddr: addr(OFF.DST_ADDR),
  };
}

export function emitIpCmPrivateData(h: IpCmPrivateData, view: DataView, off: number): number {
  checkUint(h.majorVersion, 0xf, 'majorVersion');
  checkUint(h.minorVersion, 0xf, 'minorVersion');
  checkUint(h.ipVersion, 0xf, 'ipVersion');
  checkUint(h.reserved, 0xf, 'reserved');
  checkUint(h.srcPort, 0xffff, 'srcPort');
  for (const [name, a] of [
    ['srcAddr', h.srcAddr],
    ['dstAddr', h.dstAddr],
  ] as const) {
    if (a.length !== 16) throw new WireError(WireErrorCode.BadValue, 0, `${name} must be 16 bytes, not ${a.length}`);
  }
  view.setUint8(off + OFF.VERSION, (h.majorVersion << 4) | h.minorVersion);
  view.setUint8(off + OFF.IP_VERSION, (h.ipVersion << 4) | h.reserved);
  view.setUint16(off + OFF.SRC_PORT, h.srcPort);
  for (let i = 0; i < 16; i++) {
    view.setUint8(off + OFF.SRC_ADDR + i, h.srcAddr[i] as number);
    view.setUint8(off + OFF.DST_ADDR + i, h.dstAddr[i] as number);
  }
  return IP_CM_HEADER_LEN;
}

/** An address of the header as text: dotted quad (its last 4 bytes) when `ipVersion` is 4, RFC 5952 otherwise. */
export function ipCmAddressToString(addr: Uint8Array, ipVersion: number): string {
  if (ipVersion === 4) return ipv4ToString((((addr[12] ?? 0) << 24) | ((addr[13] ?? 0) << 16) | ((addr[14] ?? 0) << 8) | (addr[15] ?? 0)) >>> 0);
  return ipv6ToString(addr);
}

/** The 16 address bytes the kernel writes for `text`: an IPv4 address in the last 4 (after 12 zeros), or an IPv6 address. */
export function ipCmAddressFromString(text: string): { ipVersion: 4 | 6; addr: Uint8Array } {
  if (!text.includes(':')) {
    const a = ipv4FromString(text);
    const addr = new Uint8Array(16);
    new DataView(addr.buffer).setUint32(12, a);
    return { ipVersion: 4, addr };
  }
  return { ipVersion: 6, addr: ipv6FromString(text) };
}
