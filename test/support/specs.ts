/** Valid transport specs for any opcode of the table, for decoder and property tests. */
import { type OpcodeInfo, Hdr, PayloadRule } from '../../packets/opcodes';
import type { TransportSpec } from '../../packets/build';

/** A payload length the opcode's payload rule accepts, picked from `n` (any non-negative integer). */
export function validPayloadLength(info: OpcodeInfo, n: number, mtu = 1024): number {
  switch (info.payload) {
    case PayloadRule.NONE:
      return 0;
    case PayloadRule.FIXED:
      return info.fixedPayload;
    case PayloadRule.FULL:
      return mtu;
    case PayloadRule.LAST:
      return 1 + (n % mtu);
    case PayloadRule.ONLY:
      return n % (mtu + 1);
  }
}

/** A spec with every header the opcode needs, values derived from `seed`. */
export function transportSpecFor(info: OpcodeInfo, seed: number, payloadLen?: number): TransportSpec {
  const len = payloadLen ?? validPayloadLength(info, seed * 7919);
  const payload = new Uint8Array(len);
  for (let i = 0; i < len; i++) payload[i] = (seed + i * 31) & 0xff;
  const s = seed >>> 0;
  const t: TransportSpec = {
    bth: { opcode: info.opcode, destQp: (s * 2654435761) & 0xffffff, psn: (s * 40503) & 0xffffff, ackReq: (s & 1) === 1, se: (s & 2) === 2 },
    payload,
  };
  const h = info.hdrs;
  if (h & Hdr.XRCETH) t.xrcEth = { xrcSrq: (s * 13) & 0xffffff };
  if (h & Hdr.RDETH) t.rdEth = { eeContext: (s * 17) & 0xffffff };
  if (h & Hdr.DETH) t.deth = { qkey: (s * 2246822519) >>> 0, srcQp: (s * 19) & 0xffffff };
  if (h & Hdr.FETH) t.feth = { selectivity: s & 1, placementType: (s >>> 1) & 3 };
  if (h & Hdr.RETH) t.reth = { va: BigInt(s) * 0x1_0000_1000n, rkey: (s * 977) >>> 0, dmaLength: len + (s & 0xffff) };
  if (h & Hdr.ATOMIC_ETH) t.atomicEth = { va: BigInt(s) << 3n, rkey: (s * 7) >>> 0, swapAdd: BigInt(s) * 3n, compare: BigInt(s) * 5n };
  if (h & Hdr.AETH) t.aeth = { syndrome: s & 0x7f, msn: (s * 3) & 0xffffff };
  if (h & Hdr.ATOMIC_ACK_ETH) t.atomicAckEth = { origData: BigInt(s) * 0x1_0000_0001n };
  if (h & Hdr.IMMDT) t.immDt = (s * 2654435761) >>> 0;
  if (h & Hdr.IETH) t.ieth = (s * 40503) >>> 0;
  return t;
}
