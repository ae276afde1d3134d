/**
 * Linux cooked capture header, version 1 (LINKTYPE_LINUX_SLL = 113).
 * Layout per tcpdump.org linktypes/LINKTYPE_LINUX_SLL: 16 bytes, big-endian:
 * packet type u16, ARPHRD type u16, link-layer address length u16,
 * link-layer address (8 bytes, zero-padded), protocol type u16.
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkUint } from './bytes';

export const SLL_LEN = 16;

/** Field offsets from the start of the header. */
export const OFF = Object.freeze({
  PACKET_TYPE: 0,
  ARPHRD_TYPE: 2,
  ADDR_LEN: 4,
  ADDR: 6,
  PROTOCOL: 14,
});

/** Bytes reserved for the link-layer address. */
export const SLL_ADDR_LEN = 8;

/** Packet type values (tcpdump.org LINKTYPE_LINUX_SLL). */
export const SllPacketType = {
  Host: 0,
  Broadcast: 1,
  Multicast: 2,
  OtherHost: 3,
  Outgoing: 4,
} as const;

export interface SllHeader {
  packetType: number;
  arphrdType: number;
  /** Declared address length (may exceed 8; only 8 bytes are stored). */
  addrLen: number;
  /** The 8-byte address field (a copy). */
  addr: Uint8Array;
  /** Protocol type: an EtherType for most ARPHRD types. */
  protocol: number;
}

/** Parses an SLL header at `off`; `end` is the end of the frame in `view`. Throws WireError. */
export function parseSll(view: DataView, off: number, end: number = view.byteLength): SllHeader {
  need(end, off, SLL_LEN, 'SLL header');
  const a = view.byteOffset + off + OFF.ADDR;
  return {
    packetType: view.getUint16(off + OFF.PACKET_TYPE),
    arphrdType: view.getUint16(off + OFF.ARPHRD_TYPE),
    addrLen: view.getUint16(off + OFF.ADDR_LEN),
    addr: new Uint8Array(view.buffer.slice(a, a + SLL_ADDR_LEN)),
    protocol: view.getUint16(off + OFF.PROTOCOL),
  };
}

/** Writes `h` at `off`; returns the bytes written (SLL_LEN). Throws WireError. */
export function emitSll(h: SllHeader, view: DataView, off: number): number {
  need(view.byteLength, off, SLL_LEN, 'SLL header');
  checkUint(h.packetType, 0xffff, 'SLL packetType');
  checkUint(h.arphrdType, 0xffff, 'SLL arphrdType');
  checkUint(h.addrLen, 0xffff, 'SLL addrLen');
  checkUint(h.protocol, 0xffff, 'SLL protocol');
  if (h.addr.length > SLL_ADDR_LEN) {
    throw new WireError(WireErrorCode.BadValue, off + OFF.ADDR, `SLL address has ${h.addr.length} bytes, at most ${SLL_ADDR_LEN} fit`);
  }
  view.setUint16(off + OFF.PACKET_TYPE, h.packetType);
  view.setUint16(off + OFF.ARPHRD_TYPE, h.arphrdType);
  view.setUint16(off + OFF.ADDR_LEN, h.addrLen);
  for (let i = 0; i < SLL_ADDR_LEN; i++) view.setUint8(off + OFF.ADDR + i, h.addr[i] ?? 0);
  view.setUint16(off + OFF.PROTOCOL, h.protocol);
  return SLL_LEN;
}
