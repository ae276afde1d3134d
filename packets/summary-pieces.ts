/**
 * The runs of a summary line that repeat from frame to frame of one flow, each encoded once and
 * then copied: ` v2 198.18.0.1:49152 → 198.18.0.2:4791` for a RoCE v2 frame over IPv4, and
 * ` RC_SEND_MIDDLE QP=0x000011 PSN=` for an opcode sent to a QP. Writing such a run piece by piece
 * (addresses and ports digit by digit) cost more than the rest of the line. Each kind is a small table indexed by a hash of its key, an entry
 * replaced by the next key that lands on it: a capture of a few flows is all hits, one of many
 * costs a miss now and then.
 */
import type { BthHeader } from './bth';
import type { RocePacket } from './decode';
import type { Ipv4Header } from './ipv4';
import type { UdpHeader } from './udp';
import { writeEndpoints, writeOpcodeQp } from './summary';
import { textOf, utf8 } from '../base/text-bytes';

/** Entries per table (a power of two). */
const SLOTS = 64;
const SHIFT = 32 - Math.log2(SLOTS);

export class SummaryPieces {
  private readonly ends: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS).fill(undefined);
  /** Per slot: source address, destination address, source port << 16 | destination port. */
  private readonly endKeys = new Uint32Array(SLOTS * 3);
  private readonly ops: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS).fill(undefined);
  /** Per slot: opcode << 24 | destination QP. */
  private readonly opKeys = new Uint32Array(SLOTS);

  /** `writeEndpoints` of `p`, a RoCE v2 frame over IPv4 with these IP and UDP headers. */
  endpoints(p: RocePacket, ip: Ipv4Header, udp: UdpHeader): Uint8Array {
    const src = ip.src;
    const dst = ip.dst;
    const ports = ((udp.srcPort << 16) | udp.dstPort) >>> 0;
    const slot = Math.imul(src ^ Math.imul(dst, 0x85ebca6b) ^ Math.imul(ports, 0x9e3779b1), 0xc2b2ae35) >>> SHIFT;
    const k = slot * 3;
    const keys = this.endKeys;
    const hit = this.ends[slot];
    if (hit !== undefined && keys[k] === src >>> 0 && keys[k + 1] === dst >>> 0 && keys[k + 2] === ports) return hit;
    const piece = utf8(textOf((t) => writeEndpoints(t, p)));
    keys[k] = src;
    keys[k + 1] = dst;
    keys[k + 2] = ports;
    this.ends[slot] = piece;
    return piece;
  }

  /** `writeOpcodeQp` of `p`, whose opcode is in the table. */
  opcodeQp(p: RocePacket, b: BthHeader): Uint8Array {
    const key = ((b.opcode << 24) | b.destQp) >>> 0;
    const slot = Math.imul(key, 0x9e3779b1) >>> SHIFT;
    const hit = this.ops[slot];
    if (hit !== undefined && this.opKeys[slot] === key) return hit;
    const piece = utf8(textOf((t) => writeOpcodeQp(t, p, b)));
    this.opKeys[slot] = key;
    this.ops[slot] = piece;
    return piece;
  }
}
