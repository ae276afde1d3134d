/**
 * The ECN field of an IP header (RFC 3168 §5): the low two bits of the IPv4 TOS byte or of the
 * IPv6 traffic class. RoCE v2 uses it for congestion control: a switch sets CE on a packet of
 * an ECN-capable flow, the receiving NIC answers with a CNP (annex A17.9).
 */

export const Ecn = { NOT_ECT: 0, ECT1: 1, ECT0: 2, CE: 3 } as const;
export type Ecn = (typeof Ecn)[keyof typeof Ecn];

/**
 * The ECN bits of the IP header at `ipOff` of `bytes` (IPv4: TOS byte 1; IPv6: bits 4-5 of byte 1,
 * the low bits of the traffic class that straddles bytes 0 and 1), or NOT_ECT for anything else.
 */
export function ecnAt(bytes: Uint8Array, ipOff: number): Ecn {
  const v = (bytes[ipOff] ?? 0) >>> 4;
  const b1 = bytes[ipOff + 1] ?? 0;
  if (v === 4) return (b1 & 3) as Ecn;
  if (v === 6) return ((b1 >>> 4) & 3) as Ecn;
  return Ecn.NOT_ECT;
}
