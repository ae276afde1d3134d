/**
 * Fast RoCE v2 frame building for one path: the Ethernet, IP and UDP headers
 * are emitted once into a template; each packet then copies the template,
 * patches the lengths and the IPv4 checksum, writes the transport headers and
 * payload, and seals the ICRC. The stack's transmit path uses this; the
 * general builder (build.ts) stays for tools and tests.
 */
import { ETH_LEN, EtherType, VLAN_TAG_LEN, emitEthernet } from './ethernet';
import { IPV4_MIN_LEN, IpProtocol, emitIpv4 } from './ipv4';
import { IPV6_LEN, emitIpv6 } from './ipv6';
import { ROCE_V2_PORT, UDP_LEN, emitUdp } from './udp';
import { type EthSpec, type Ipv4Spec, type Ipv6Spec, type TransportSpec, emitTransport, transportLength } from './build';
import { icrcV2, writeIcrc } from './icrc';
import { ICRC_LEN } from './decode';
import { ipv4FromString, ipv6FromString } from './bytes';

export interface TemplateSpec {
  eth: EthSpec;
  ip: Ipv4Spec | Ipv6Spec;
  udp: { srcPort: number; dstPort?: number };
}

export class FrameTemplate {
  private readonly header: Uint8Array;
  private readonly ipOff: number;
  private readonly udpOff: number;
  private readonly v4: boolean;
  /** IPv4: the one's-complement sum of the header words that never change (all but total length and checksum). */
  private readonly ipSum: number;

  constructor(spec: TemplateSpec) {
    const l2 = ETH_LEN + (spec.eth.vlan ? VLAN_TAG_LEN : 0);
    this.v4 = spec.ip.version === 4;
    const l3 = this.v4 ? IPV4_MIN_LEN : IPV6_LEN;
    this.header = new Uint8Array(l2 + l3 + UDP_LEN);
    const view = new DataView(this.header.buffer);
    this.ipOff = emitEthernet(
      { dst: spec.eth.dst, src: spec.eth.src, vlan: spec.eth.vlan ?? null, etherType: this.v4 ? EtherType.IPv4 : EtherType.IPv6 },
      view,
      0,
    );
    if (spec.ip.version === 4) {
      const ip = spec.ip;
      emitIpv4(
        {
          ihl: 5,
          dscp: ip.dscp ?? 0,
          ecn: ip.ecn ?? 0,
          totalLength: 0,
          identification: ip.identification ?? 0,
          dontFragment: ip.dontFragment ?? true,
          moreFragments: false,
          fragmentOffset: 0,
          ttl: ip.ttl ?? 64,
          protocol: IpProtocol.UDP,
          checksum: 0,
          src: typeof ip.src === 'string' ? ipv4FromString(ip.src) : ip.src,
          dst: typeof ip.dst === 'string' ? ipv4FromString(ip.dst) : ip.dst,
          options: new Uint8Array(0),
        },
        view,
        this.ipOff,
        { computeChecksum: false },
      );
    } else {
      const ip = spec.ip;
      emitIpv6(
        {
          trafficClass: ip.trafficClass ?? 0,
          flowLabel: ip.flowLabel ?? 0,
          payloadLength: 0,
          nextHeader: IpProtocol.UDP,
          hopLimit: ip.hopLimit ?? 64,
          src: typeof ip.src === 'string' ? ipv6FromString(ip.src) : ip.src,
          dst: typeof ip.dst === 'string' ? ipv6FromString(ip.dst) : ip.dst,
        },
        view,
        this.ipOff,
      );
    }
    this.udpOff = this.ipOff + l3;
    // The header checksum of each frame is the fixed words' sum plus its total length (RFC 1624's incremental update).
    let sum = 0;
    if (this.v4) for (let i = 0; i < IPV4_MIN_LEN; i += 2) if (i !== 2 && i !== 10) sum += view.getUint16(this.ipOff + i);
    this.ipSum = sum;
    emitUdp({ srcPort: spec.udp.srcPort, dstPort: spec.udp.dstPort ?? ROCE_V2_PORT, length: UDP_LEN, checksum: 0 }, view, this.udpOff);
  }

  /** Frame length for transport `t`. */
  frameLength(t: TransportSpec): number {
    return this.header.length + transportLength(t);
  }

  /** Offset of the IP header in the frames this template builds. */
  get ipOffset(): number {
    return this.ipOff;
  }

  /**
   * Writes the frame for `t` at `off` of `buf` (`view` covers the same
   * memory) and returns its length. The caller makes sure it fits. With
   * `sealIcrc` false the ICRC field is left for the caller to fill (a
   * batched ICRC over a whole burst).
   */
  emitInto(t: TransportSpec, buf: Uint8Array, view: DataView, off: number, sealIcrc = true): number {
    buf.set(this.header, off);
    const ip = off + this.ipOff;
    const udp = off + this.udpOff;
    const bth = udp + UDP_LEN;
    const icrcOff = emitTransport(t, view, buf, bth);
    const end = icrcOff + ICRC_LEN;
    view.setUint16(udp + 4, end - udp);
    if (this.v4) {
      const total = end - ip;
      view.setUint16(ip + 2, total);
      let sum = this.ipSum + total;
      sum = (sum & 0xffff) + (sum >>> 16);
      sum = (sum & 0xffff) + (sum >>> 16);
      view.setUint16(ip + 10, ~sum & 0xffff);
    } else {
      view.setUint16(ip + 4, end - ip - IPV6_LEN);
    }
    if (sealIcrc) writeIcrc(buf, icrcOff, icrcV2(buf, ip, icrcOff));
    return end - off;
  }
}
