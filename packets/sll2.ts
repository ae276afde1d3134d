/**
 * Linux cooked capture header, version 2 (LINKTYPE_LINUX_SLL2 = 276).
 * Layout per tcpdump.org linktypes/LINKTYPE_LINUX_SLL2: 20 bytes, big-endian:
 * protocol type u16, reserved u16 (must be zero), interface index u32,
 * ARPHRD type u16, packet type u8, link-layer address length u8,
 * link-layer address (8 bytes, zero-padded).
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkUint } from './bytes';

export const SLL2_LEN = 20;

/** Field offsets from the start of the header. */
export const OFF = Object.freeze({
  PROTOCOL: 0,
  RESERVED: 2,
  IF_INDEX: 4,
  ARPHRD_TYPE: 8,
  PACKET_TYPE: 10,
  ADDR_LEN: 11,
  ADDR: 12,
});

/** Bytes reserved for the link-layer address. */
export const SLL2_ADDR_LEN = 8;

export interface Sll2Header {
  /** Protocol type: an EtherType for most ARPHRD types. */
  protocol: number;
  /** Reserved field, zero on the wire (kept so round trips are exact). */
  reserved: number;
  ifIndex: number;
  arphrdType: number;
  packetType: number;
  /** Declared address length (may exceed 8; only 8 bytes are stored). */
  addrLen: number;
  /** The 8-byte address field (a copy). */
  addr: Uint8Array;
}

/** Parses an SLL2 header at `off`; `end` is the end of the frame in `view`. Throws WireError. */
export function parseSll2(view: DataView, off: number, end: number = view.byteLength): Sll2Header {
  need(end, off, SLL2_LEN, 'SLL2 header');
  const a = view.byteOffset + off + OFF.ADDR;
  return {
    protocol: view.getUint16(off + OFF.PROTOCOL),
    reserved: view.getUint16(off + OFF.RESERVED),
    ifIndex: view.getUint32(off + OFF.IF_INDEX),
    arphrdType: view.getUint16(off + OFF.ARPHRD_TYPE),
    packetType: view.getUint8(off + OFF.PACKET_TYPE),
    addrLen: view.getUint8(off + OFF.ADDR_LEN),
    addr: new Uint8Array(view.buffer.slice(a, a + SLL2_ADDR_LEN)),
  };
}

/** Writes `h` at `off`; returns the bytes written (SLL2_LEN). Throws WireError. */
export function emitSll2(h: Sll2Header, view: DataView, off: number): number {
  need(view.byteLength, off, SLL2_LEN, 'SLL2 header');
  checkUint(h.protocol, 0xffff, 'SLL2 protocol');
  checkUint(h.reserved, 0xffff, 'SLL2 reserved');
  checkUint(h.ifIndex, 0xffffffff, 'SLL2 ifIndex');
  checkUint(h.arphrdType, 0xffff, 'SLL2 arphrdType');
  checkUint(h.packetType, 0xff, 'SLL2 packetType');
  checkUint(h.addrLen, 0xff, 'SLL2 addrLen');
  if (h.addr.length > SLL2_ADDR_LEN) {
    throw new WireError(WireErrorCode.BadValue, off + OFF.ADDR, `SLL2 address has ${h.addr.length} bytes, at most ${SLL2_ADDR_LEN} fit`);
  }
  view.setUint16(off + OFF.PROTOCOL, h.protocol);
  view.setUint16(off + OFF.RESERVED, h.reserved);
  view.setUint32(off + OFF.IF_INDEX, h.ifIndex >>> 0);
  view.setUint16(off + OFF.ARPHRD_TYPE, h.arphrdType);
  view.setUint8(off + OFF.PACKET_TYPE, h.packetType);
  view.setUint8(off + OFF.ADDR_LEN, h.addrLen);
  for (let i = 0; i < SLL2_ADDR_LEN; i++) view.setUint8(off + OFF.ADDR + i, h.addr[i] ?? 0);
  return SLL2_LEN;
}
