/**
 * The runs of a frame's JSON (packets/json.ts) that repeat from frame to frame of one flow, each
 * encoded once and then copied, as packets/summary-pieces.ts does for the summary line:
 * `,"roce":true,"version":2,"src":"198.18.0.1","dst":"198.18.0.2","srcPort":49152,"dstPort":4791,
 * "srcMac":…,"dstMac":…,"vlan":…,"dscp":…,"ecn":…,"ttl":…` for a RoCE v2 frame over IPv4, and `,"opcode":1,"opcodeName":"RC_SEND_MIDDLE","se":false, … ,
 * "destQp":17,"ackReq":false,"psn":` for the BTH fields but the PSN. Written piece by piece they
 * took about 14 calls a frame (addresses and numbers digit by digit), one copy each now. Each kind
 * is a small table indexed by a hash of its key, two entries a slot (the newest first), as there.
 */
import type { BthHeader } from './bth';
import type { RocePacket } from './decode';
import { linkAndIpJson } from './json';
import type { Ipv4Header } from './ipv4';
import type { UdpHeader } from './udp';
import { OPCODES } from './opcodes';
import { ipv4ToString } from './bytes';
import { utf8 } from '../base/text-bytes';

/** Slots per table (a power of two), of `WAYS` entries each. */
const SLOTS = 64;
const WAYS = 2;
const SHIFT = 32 - Math.log2(SLOTS);

export class JsonFramePieces {
  /** The entries of slot `s` are `s * WAYS` and the next. */
  private readonly ends: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS * WAYS).fill(undefined);
  /**
   * Per entry: source address, destination address, source port << 16 | destination port, source
   * MAC, destination MAC (-1 without Ethernet), and the VLAN tag, TOS byte and TTL as one number.
   */
  private readonly endKeys = new Float64Array(SLOTS * WAYS * 6);
  private readonly bths: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(SLOTS * WAYS).fill(undefined);
  /** Per entry: opcode << 24 | destination QP, and pkey << 16 | se, migReq, padCount, tver << 8 | fecn, becn, ackReq. */
  private readonly bthKeys = new Uint32Array(SLOTS * WAYS * 2);

  /** The members from `roce` to `ttl` of `d`, a RoCE v2 frame over IPv4 with these IP and UDP headers. */
  endpoints(d: RocePacket, ip: Ipv4Header, udp: UdpHeader): Uint8Array {
    const src = ip.src >>> 0;
    const dst = ip.dst >>> 0;
    const ports = ((udp.srcPort << 16) | udp.dstPort) >>> 0;
    const e = d.eth;
    const srcMac = e === null ? -1 : e.src;
    const dstMac = e === null ? -1 : e.dst;
    const vlan = e === null || e.vlan === null ? 0 : 0x10000 | (e.vlan.pcp << 12) | e.vlan.vid;
    const rest = vlan * 0x10000 + ((((ip.dscp << 2) | ip.ecn) << 8) | ip.ttl);
    const first = (Math.imul(src ^ Math.imul(dst, 0x85ebca6b) ^ Math.imul(ports, 0x9e3779b1), 0xc2b2ae35) >>> SHIFT) * WAYS;
    const keys = this.endKeys;
    const ends = this.ends;
    for (let i = first; i < first + WAYS; i++) {
      const hit = ends[i];
      const k = i * 6;
      if (
        hit !== undefined &&
        keys[k] === src &&
        keys[k + 1] === dst &&
        keys[k + 2] === ports &&
        keys[k + 3] === srcMac &&
        keys[k + 4] === dstMac &&
        keys[k + 5] === rest
      )
        return hit;
    }
    const piece = utf8(
      `,"roce":true,"version":2,"src":"${ipv4ToString(src)}","dst":"${ipv4ToString(dst)}","srcPort":${udp.srcPort},"dstPort":${udp.dstPort}${linkAndIpJson(d)}`,
    );
    // The newest entry first: the older one moves to the second way, the one there goes.
    const k = first * 6;
    keys.copyWithin(k + 6, k, k + 6);
    ends[first + 1] = ends[first];
    keys[k] = src;
    keys[k + 1] = dst;
    keys[k + 2] = ports;
    keys[k + 3] = srcMac;
    keys[k + 4] = dstMac;
    keys[k + 5] = rest;
    ends[first] = piece;
    return piece;
  }

  /**
   * The members from `opcode` up to the PSN's key, `,"psn":`, of a BTH whose opcode is in the
   * table: `,"opcode":N,"opcodeName":"NAME","se":…,"migReq":…,"padCount":P,"tver":T,"pkey":K,
   * "fecn":…,"becn":…,"destQp":Q,"ackReq":…,"psn":`.
   */
  bth(b: BthHeader): Uint8Array {
    const who = ((b.opcode << 24) | (b.destQp & 0xffffff)) >>> 0;
    const bits = ((b.se ? 0x80 : 0) | (b.migReq ? 0x40 : 0) | ((b.padCount & 3) << 4) | (b.tver & 15)) << 8;
    const how = (((b.pkey & 0xffff) << 16) | bits | (b.fecn ? 4 : 0) | (b.becn ? 2 : 0) | (b.ackReq ? 1 : 0)) >>> 0;
    const first = (Math.imul(who ^ Math.imul(how, 0x85ebca6b), 0x9e3779b1) >>> SHIFT) * WAYS;
    const keys = this.bthKeys;
    const bths = this.bths;
    for (let i = first; i < first + WAYS; i++) {
      const hit = bths[i];
      const k = i * 2;
      if (hit !== undefined && keys[k] === who && keys[k + 1] === how) return hit;
    }
    const name = OPCODES[b.opcode]?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`;
    const piece = utf8(
      `,"opcode":${b.opcode},"opcodeName":${JSON.stringify(name)},"se":${b.se},"migReq":${b.migReq},"padCount":${b.padCount & 3},"tver":${b.tver & 15},` +
        `"pkey":${b.pkey & 0xffff},"fecn":${b.fecn},"becn":${b.becn},"destQp":${b.destQp & 0xffffff},"ackReq":${b.ackReq},"psn":`,
    );
    const k = first * 2;
    keys.copyWithin(k + 2, k, k + 2);
    bths[first + 1] = bths[first];
    keys[k] = who;
    keys[k + 1] = how;
    bths[first] = piece;
    return piece;
  }
}
