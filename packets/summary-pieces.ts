/**
 * The runs of a summary line that repeat from frame to frame of one flow, each encoded once and
 * then copied: ` v2 198.18.0.1:49152 → 198.18.0.2:4791` for a RoCE v2 frame over IPv4, and
 * ` RC_SEND_MIDDLE QP=0x000011 PSN=` for an opcode sent to a QP. Writing such a run piece by piece
 * (addresses and ports digit by digit) cost more than the rest of the line. Each kind is a small table indexed by a hash of its key, two
 * entries a slot (the newest first): a capture of a few flows is all hits, one of many costs a miss
 * now and then. With one entry a slot, two keys of one flow that landed on the same slot missed at
 * every turn (an NVMe-oF capture's READ request and READ RESPONSE MIDDLE: a miss every nine frames).
 */
import type { BthHeader } from './bth';
import type { RocePacket } from './decode';
import type { Ipv4Header } from './ipv4';
import type { UdpHeader } from './udp';
import { writeEndpoints, writeOpcodeQp } from './summary';
import { textOf, utf8 } from '../base/text-bytes';

/** Slots per table (a power of two), of `WAYS` entries each. */
const SLOTS = 64;
const WAYS = 2;
const SHIFT = 32 - Math.log2(SLOTS);

export class SummaryPieces {
  /** The entries of slot `s` are `s * WAYS` and the next. */
  private readonly ends: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS * WAYS).fill(undefined);
  /** Per entry: source address, destination address, source port << 16 | destination port. */
  private readonly endKeys = new Uint32Array(SLOTS * WAYS * 3);
  private readonly ops: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS * WAYS).fill(undefined);
  /** Per entry: opcode << 24 | destination QP. */
  private readonly opKeys = new Uint32Array(SLOTS * WAYS);

  /** `writeEndpoints` of `p`, a RoCE v2 frame over IPv4 with these IP and UDP headers. */
  endpoints(p: RocePacket, ip: Ipv4Header, udp: UdpHeader): Uint8Array {
    const src = ip.src;
    const dst = ip.dst;
    const ports = ((udp.srcPort << 16) | udp.dstPort) >>> 0;
    const first = (Math.imul(src ^ Math.imul(dst, 0x85ebca6b) ^ Math.imul(ports, 0x9e3779b1), 0xc2b2ae35) >>> SHIFT) * WAYS;
    const keys = this.endKeys;
    const ends = this.ends;
    for (let i = first; i < first + WAYS; i++) {
      const hit = ends[i];
      const k = i * 3;
      if (hit !== undefined && keys[k] === src >>> 0 && keys[k + 1] === dst >>> 0 && keys[k + 2] === ports) return hit;
    }
    const piece = utf8(textOf((t) => writeEndpoints(t, p)));
    // The newest entry first: the older one moves to the second way, the one there goes.
    const k = first * 3;
    keys.copyWithin(k + 3, k, k + 3);
    ends[first + 1] = ends[first];
    keys[k] = src;
    keys[k + 1] = dst;
    keys[k + 2] = ports;
    ends[first] = piece;
    return piece;
  }

  /** `writeOpcodeQp` of `p`, whose opcode is in the table. */
  opcodeQp(p: RocePacket, b: BthHeader): Uint8Array {
    const key = ((b.opcode << 24) | b.destQp) >>> 0;
    const first = (Math.imul(key, 0x9e3779b1) >>> SHIFT) * WAYS;
    const keys = this.opKeys;
    const ops = this.ops;
    for (let i = first; i < first + WAYS; i++) {
      const hit = ops[i];
      if (hit !== undefined && keys[i] === key) return hit;
    }
    const piece = utf8(textOf((t) => writeOpcodeQp(t, p, b)));
    keys[first + 1] = keys[first] as number;
    ops[first + 1] = ops[first];
    keys[first] = key;
    ops[first] = piece;
    return piece;
  }
}
