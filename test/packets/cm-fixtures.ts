/**
 * Byte fixtures of MADs and CM messages, each with its provenance.
 *
 * Real MADs (the whole 256 bytes, from the byte after the DETH; trailing zeros
 * written out by `mad()`):
 *   - the Endace capture (native InfiniBand, Mellanox HCAs, 2008) in the shared
 *     public captures, endace-ib-erf/infiniband.pcap frames 7, 8 and 9: an IPoIB-CM
 *     ConnectRequest / ConnectReply / ReadyToUse (service ID 0x1000000000000404, not
 *     an RDMA IP CM one);
 *   - captures/rxe/rping-req-retries.pcap frames 3 (REQ) and 15 (REJ), and
 *     captures/rxe/udaddy-sidr-req.pcap frame 3 (SIDR_REQ): Linux 6.1 rdma_rxe.
 *
 * Hand-made CM data (232 bytes from the end of the common header) for the
 * messages no capture here has, written byte by byte from the tables of IBTA
 * vol. 1 chapter 12 (as laid out in the kernel's include/rdma/ibta_vol1_c12.h),
 * every field a distinct non-zero value so a misplaced bit shows.
 */
import { fromHex } from '../../packets/bytes';

/** `hex` then zeros up to `len` bytes. */
export function padded(hex: string, len: number): Uint8Array {
  const head = fromHex(hex);
  if (head.length > len) throw new Error(`fixture longer than ${len} bytes`);
  const out = new Uint8Array(len);
  out.set(head);
  return out;
}
const mad = (hex: string): Uint8Array => padded(hex, 256);
const cmData = (hex: string): Uint8Array => padded(hex, 232);

// ---------------------------------------------------------------- real MADs

/** Endace infiniband.pcap frame 7: CM REQ (IPoIB-CM service 0x1000000000000404, RC over native IB). */
export const ENDACE_REQ = mad(`
  01 07 02 03 0000 0000 00000010278648e9 0010 0000 00000000
  e9488627 00000000 1000000000000404 0002c9020024f634 00000000 00000000
  870408 04 000000 00 000000 a0 000000 a0 ffff 40 f8 0004 0001
  fe800000000000000002c9020024f636 fe800000000000000002c9020020b4dd
  00000003 00 00 08 98
  0000 0000 00000000000000000000000000000000 00000000000000000000000000000000 00000000 00 00 00 00
  000004050000fff4`);

/** Endace infiniband.pcap frame 8: CM REP answering frame 7. */
export const ENDACE_REP = mad(`
  01 07 02 03 0000 0000 00000010278648e9 0013 0000 00000000
  f9024539 e9488627 00000000 fc0407 00 000000 00 d40a55 00 00 00 78 10 0002c9020020b4dc
  000004040000fff4`);

/** Endace infiniband.pcap frame 9: CM RTU. */
export const ENDACE_RTU = mad(`
  01 07 02 03 0000 0000 00000010278648e9 0014 0000 00000000
  e9488627 f9024539`);

/** captures/rxe/rping-req-retries.pcap frame 3: rdma_rxe's REQ for `rping -c -a 198.18.0.2` (TCP port space, port 7174). */
export const RXE_REQ = mad(`
  01 07 02 03 0000 0000 00000002fe9b0f77 0010 0000 00000000
  770f9bfe 00000000 0000000001061c06 505400fffe123401 00000000 00000000
  000011 01 000000 01 000000 a0 4fcd33 a7 ffff 37 f0 ffff ffff
  00000000000000000000ffffc6120001 00000000000000000000ffffc6120002
  4580d000 00 40 00 98
  0000 0000 00000000000000000000000000000000 00000000000000000000000000000000 00000000 00 00 00 00
  00 40 a719 000000000000000000000000c6120001 000000000000000000000000c6120002`);

/** captures/rxe/rping-req-retries.pcap frame 15: the REJ rxe's CM sent when rping gave up (reason 4, timeout; ARI = its CA GUID). */
export const RXE_REJ = mad(`
  01 07 02 03 0000 0000 00000002fe9b0f77 0012 0000 00000000
  770f9bfe 00000000 80 10 0004 505400fffe123401`);

/** captures/rxe/udaddy-sidr-req.pcap frame 3: rdma_rxe's SIDR_REQ for `udaddy -s 198.18.0.2` (UDP port space, port 7174). */
export const RXE_SIDR_REQ = mad(`
  01 07 02 03 0000 0000 0000000257f42065 0017 0000 00000000
  6520f457 ffff 0000 0000000001111c06
  00 40 d22f 000000000000000000000000c6120001 000000000000000000000000c6120002`);

// ------------------------------------------------------------ hand-made data

/** REQ with every field set: alternate path, SAP supported, flags, 5-bit timeouts next to 2- and 3-bit fields. */
export const REQ_ALL_FIELDS = cmData(`
  01020304 00000000 1122334455667788 8877665544332211 00000000 deadbeef
  abcdef 10 123456 20 654321 ad fedcba 55 8001 5e 9b 0102 0304
  20010db8000000000000000000000001 20010db8000000000000000000000002
  abcde02a b8 3f c8 f8
  0506 0708 20010db8000000000000000000000003 20010db8000000000000000000000004
  13579015 2e 01 50 8c
  00604e20 20010db8000000000000000000000001`);

/** MRA of a LAP (2), service timeout 21, private data "pd". */
export const MRA_DATA = cmData('11223344 55667788 80 a8 7064');

/** DREQ for QPN 0xabcdef with 3 bytes of private data. */
export const DREQ_DATA = cmData('11223344 55667788 abcdef 00 010203');

/** DREP whose private data has its first byte 0xff and its last (byte 223 of 224) 0xee. */
export const DREP_DATA = cmData(`11223344 55667788 ff ${'00'.repeat(222)} ee`);

/** SIDR_REP: status 3 (no QP), 72 bytes of additional information, QPN 0x13, Q_Key 0x01234567. */
export const SIDR_REP_DATA = cmData(`
  6520f457 03 48 0000 000013 00 0000000001111c06 01234567
  01 ${'00'.repeat(70)} 02
  aa ${'00'.repeat(134)} bb`);

/** LAP: alternate path fe80::1 → fe80::2, flow label 0x12345, traffic class 0x68, rate 7, SL 3, subnet local, ACK timeout 18. */
export const LAP_DATA = cmData(`
  11223344 55667788 00000000 000012 a0 00000000 1234 5678
  fe800000000000000000000000000001 fe800000000000000000000000000002
  12345068 40 07 38 90 5a`);

/** APR: 8 bytes of additional information, status 5 (the path is current), private data first byte 0xcc, last 0xdd. */
export const APR_DATA = cmData(`
  11223344 55667788 08 05 0000 0102030405060708 ${'00'.repeat(64)}
  cc ${'00'.repeat(146)} dd`);
