/**
 * ICRC (invariant CRC) of RoCE v2 (IBTA Annex A17) and RoCE v1 (Annex A16).
 *
 * The ICRC is a standard CRC-32 (as zlib) over
 *   8 bytes of 0xFF (stand-in for the masked LRH) ‖ IP header / GRH ‖ UDP header (v2) ‖ BTH ‖ rest,
 * up to the ICRC field, with the variant fields replaced by all-ones:
 *   IPv4: TOS (DSCP+ECN), TTL, header checksum;  IPv6 / GRH: traffic class, flow label, hop limit;
 *   UDP: checksum;  BTH: byte 4 (FECN, BECN, resv6a).
 * (rxe_icrc.c `rxe_icrc_hdr()`; scapy contrib/roce.py `compute_icrc()`.)
 *
 * Fast path: no copy of the headers. The CRC starts from state 0xdebb20e3, the CRC state after
 * 8 bytes of 0xFF (rxe_icrc.c), then walks the headers as 4-byte words with the masks OR-ed in on
 * the fly (every header length is a multiple of 4), then hands the rest of the packet to the
 * fastest routine for its length (`crc32UpdateFast`).
 *
 * Byte order on the wire: the ICRC field carries the CRC-32 value least-significant byte first
 * (rxe stores `~crc32_le` state as a host-order u32 on little-endian machines; scapy stores
 * `pack("!I", crc)[::-1]`). This is the same order as the Ethernet FCS.
 */
import { crc32Step4, crc32Update, crc32UpdateFast, wordLE } from './crc32';
import { WireError, WireErrorCode, need } from './errors';

/** rxe_icrc.c: seed 0xdebb20e3 = CRC state after 8 bytes of 0xFF (masked LRH), from 0xFFFFFFFF. */
export const ICRC_SEED_STATE = 0xdebb20e3;

/** Size of the ICRC field. */
export const ICRC_SIZE = 4;

// Masks as little-endian words (byte n of the header at bit 8n), OR-ed into the header words.
/** IPv4 word 0: byte 1 = TOS. */
const V4_W0 = 0x0000ff00;
/** IPv4 word 2: byte 8 = TTL, bytes 10-11 = header checksum (byte 9, protocol, is kept). */
const V4_W2 = 0xffff00ff | 0;
/** IPv6 / GRH word 0: low nibble of byte 0 and bytes 1-3 = traffic class + flow label. */
const V6_W0 = 0xffffff0f | 0;
/** IPv6 / GRH word 1: byte 7 = hop limit. */
const V6_W1 = 0xff000000 | 0;
/** UDP word 1: bytes 6-7 = checksum. */
const UDP_W1 = 0xffff0000 | 0;
/** BTH word 1: byte 4 = FECN, BECN, resv6a. */
const BTH_W1 = 0x000000ff;

const UDP_LEN = 8;
const BTH_LEN = 12;
const IPV6_LEN = 40;

function checkRange(frame: Uint8Array, off: number, end: number, what: string): void {
  if (!Number.isSafeInteger(off) || off < 0) {
    throw new WireError(WireErrorCode.BadLength, 0, `${what} offset ${off} is not a valid offset`);
  }
  if (!Number.isSafeInteger(end) || end < 0) {
    throw new WireError(WireErrorCode.BadLength, 0, `ICRC field offset ${end} is not a valid offset`);
  }
  if (end > frame.length) {
    throw new WireError(WireErrorCode.Truncated, frame.length, `ICRC field offset ${end} lies beyond the end of the ${frame.length}-byte frame`);
  }
}

/** Advances `s` over an IPv6 header / GRH at `o` (40 bytes, masks applied). */
function ipv6Prefix(s: number, frame: Uint8Array, o: number): number {
  s = crc32Step4(s, wordLE(frame, o) | V6_W0);
  s = crc32Step4(s, wordLE(frame, o + 4) | V6_W1);
  return crc32Update(s, frame, o + 8, o + IPV6_LEN); // source and destination GID / address
}

/** Advances `s` over a BTH at `o` (byte 4 masked) and then the rest up to `end`; returns the ICRC value. */
function bthAndRest(s: number, frame: Uint8Array, o: number, end: number): number {
  s = crc32Step4(s, wordLE(frame, o));
  s = crc32Step4(s, wordLE(frame, o + 4) | BTH_W1);
  s = crc32Step4(s, wordLE(frame, o + 8));
  s = crc32UpdateFast(s, frame, o + BTH_LEN, end);
  return ~s >>> 0;
}

/**
 * ICRC of a RoCE v2 packet whose IP header starts at `ipOff` and whose ICRC field starts at `end`.
 * IPv4 (options included, per IHL) or IPv6 by the version nibble; the UDP header is taken to follow
 * the IP header directly. Does not modify `frame`. Returns the unsigned 32-bit CRC value
 * (compare with `readIcrc`).
 * @throws WireError Truncated when the headers do not fit before `end` or `end` is beyond the frame,
 *   BadLength for invalid offsets, BadField for an IP version other than 4/6 or an IHL below 5.
 */
export function icrcV2(frame: Uint8Array, ipOff: number, end: number): number {
  checkRange(frame, ipOff, end, 'IP header');
  need(end, ipOff, 1, 'IP header');
  const b0 = frame[ipOff]!;
  const version = b0 >>> 4;
  let s = ICRC_SEED_STATE;
  let udp: number;
  if (version === 4) {
    const ihl = (b0 & 0x0f) * 4;
    if (ihl < 20) throw new WireError(WireErrorCode.BadField, ipOff, `IPv4 IHL ${ihl / 4} is below 5`);
    need(end, ipOff, ihl + UDP_LEN + BTH_LEN, 'IPv4 + UDP + BTH headers');
    s = crc32Step4(s, wordLE(frame, ipOff) | V4_W0);
    s = crc32Step4(s, wordLE(frame, ipOff + 4));
    s = crc32Step4(s, wordLE(frame, ipOff + 8) | V4_W2);
    s = crc32Update(s, frame, ipOff + 12, ipOff + ihl); // addresses and options
    udp = ipOff + ihl;
  } else if (version === 6) {
    need(end, ipOff, IPV6_LEN + UDP_LEN + BTH_LEN, 'IPv6 + UDP + BTH headers');
    s = ipv6Prefix(s, frame, ipOff);
    udp = ipOff + IPV6_LEN;
  } else {
    throw new WireError(WireErrorCode.BadField, ipOff, `IP version ${version} is neither 4 nor 6`);
  }
  s = crc32Step4(s, wordLE(frame, udp)); // ports
  s = crc32Step4(s, wordLE(frame, udp + 4) | UDP_W1);
  return bthAndRest(s, frame, udp + UDP_LEN, end);
}

/**
 * ICRC of a RoCE v1 packet (EtherType 0x8915) whose 40-byte GRH starts at `grhOff` (the BTH follows
 * it) and whose ICRC field starts at `end`. Decode-only: this stack sends RoCE v2.
 * @throws WireError as `icrcV2`.
 */
export function icrcV1(frame: Uint8Array, grhOff: number, end: number): number {
  checkRange(frame, grhOff, end, 'GRH');
  need(end, grhOff, IPV6_LEN + BTH_LEN, 'GRH + BTH headers');
  return bthAndRest(ipv6Prefix(ICRC_SEED_STATE, frame, grhOff), frame, grhOff + IPV6_LEN, end);
}

/** Reads the 4-byte ICRC field at `off` (least-significant byte first). */
export function readIcrc(frame: Uint8Array, off: number): number {
  need(frame.length, off, ICRC_SIZE, 'ICRC');
  return wordLE(frame, off) >>> 0;
}

/** Writes `value` into the 4-byte ICRC field at `off` (least-significant byte first). */
export function writeIcrc(frame: Uint8Array, off: number, value: number): void {
  need(frame.length, off, ICRC_SIZE, 'ICRC');
  frame[off] = value & 0xff;
  frame[off + 1] = (value >>> 8) & 0xff;
  frame[off + 2] = (value >>> 16) & 0xff;
  frame[off + 3] = value >>> 24;
}

/** True when the ICRC field at `end` matches `icrcV2(frame, ipOff, end)`. */
export function verifyIcrcV2(frame: Uint8Array, ipOff: number, end: number): boolean {
  const stored = readIcrc(frame, end);
  return icrcV2(frame, ipOff, end) === stored;
}

/** True when the ICRC field at `end` matches `icrcV1(frame, grhOff, end)`. */
export function verifyIcrcV1(frame: Uint8Array, grhOff: number, end: number): boolean {
  const stored = readIcrc(frame, end);
  return icrcV1(frame, grhOff, end) === stored;
}

/** Computes the RoCE v2 ICRC and writes it at `end`; returns the value. */
export function sealIcrcV2(frame: Uint8Array, ipOff: number, end: number): number {
  const value = icrcV2(frame, ipOff, end);
  writeIcrc(frame, end, value);
  return value;
}

/**
 * ICRCs of many RoCE v2 frames that lie in one buffer, in one call. The engine builds a burst of
 * frames in one slab (or in a driver's transmit memory) and receives runs of frames in one buffer;
 * frame i is described by `desc[2i]`, the offset of its IP header, and `desc[2i + 1]`, the offset
 * of its ICRC field, both into `buf`. Implementations: `jsIcrcBatch` below, and the native addon's
 * (nic-driver/native-icrc.ts), which gives the same values 15-40x faster.
 */
export interface IcrcBatch {
  /** What computes them, for reports: 'typescript' or 'native'. */
  readonly name: string;
  /** Computes the ICRC of each of `count` frames and writes it into the frame's ICRC field (as `sealIcrcV2`). */
  seal(buf: Uint8Array, desc: Uint32Array, count: number): void;
  /** Computes the ICRC of each of `count` frames into `out[i]` (as `icrcV2`), leaving the frames as they are. */
  compute(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array): void;
}

/** The batched ICRC in TypeScript: `icrcV2` frame by frame. */
export const jsIcrcBatch: IcrcBatch = Object.freeze({
  name: 'typescript',
  seal(buf: Uint8Array, desc: Uint32Array, count: number): void {
    for (let i = 0; i < count; i++) sealIcrcV2(buf, desc[2 * i] as number, desc[2 * i + 1] as number);
  },
  compute(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array): void {
    for (let i = 0; i < count; i++) out[i] = icrcV2(buf, desc[2 * i] as number, desc[2 * i + 1] as number);
  },
});
