/**
 * The text keys the upper-layer decoders keep their state under, for a frame to a queue pair: its
 * addresses, its destination QP end (`address/QPN`) and its address pair (the lower address first,
 * a space between). RPC-over-RDMA and SMB Direct look at every frame (either may claim a queue pair
 * from a SEND's shape), and spelling out two IPv4 addresses, joining them and hashing the result
 * for each frame cost more than the rest of their work on a frame that is not theirs. So the keys
 * are found by numbers (the destination QPN, then the IPv4 source and destination) and spelled out
 * when first seen; the same string objects come back, their hashes already computed. Frames over
 * IPv6 or with a GRH are spelled out each time.
 */
import { ipv4ToString } from '../packets/bytes';
import { type RocePacket, packetAddresses } from '../packets/decode';

export interface FrameKeys {
  readonly src: string;
  readonly dst: string;
  /** The destination QP end: `dst/QPN`. */
  readonly end: string;
  /** The two addresses, the lower (as strings compare) first, a space between. */
  readonly pair: string;
}

/** `FrameKeys` for IPv4 frames, with the numbers they were made from. */
interface Ipv4Keys extends FrameKeys {
  readonly srcAddr: number;
  readonly dstAddr: number;
}

/** The keys of `dst`/`destQp` and `src` spelled out. */
export function frameKeysOf(src: string, dst: string, destQp: number): FrameKeys {
  return { src, dst, end: `${dst}/${destQp}`, pair: src < dst ? `${src} ${dst}` : `${dst} ${src}` };
}

/** Per decoder: the keys last made for each destination QPN. Bounded: it starts over past `limit` QPNs. */
export class FrameKeyCache {
  private readonly byQp = new Map<number, Ipv4Keys>();

  constructor(private readonly limit = 4096) {}

  /** The keys of `p`, a frame to `destQp` (its BTH's destination QP). */
  of(p: RocePacket, destQp: number): FrameKeys {
    const ip = p.ipv4;
    if (ip === null) {
      const { src, dst } = packetAddresses(p);
      return frameKeysOf(src, dst, destQp);
    }
    const known = this.byQp.get(destQp);
    if (known !== undefined && known.dstAddr === ip.dst && known.srcAddr === ip.src) return known;
    const keys: Ipv4Keys = { ...frameKeysOf(ipv4ToString(ip.src), ipv4ToString(ip.dst), destQp), srcAddr: ip.src, dstAddr: ip.dst };
    if (known === undefined && this.byQp.size >= this.limit) this.byQp.clear();
    this.byQp.set(destQp, keys);
    return keys;
  }
}
