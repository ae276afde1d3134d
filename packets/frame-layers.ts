/**
 * The link, network and transport headers of any captured frame, RoCE or not: Ethernet (with its
 * VLAN tag), Linux cooked SLL/SLL2 or raw IP, then IPv4 or IPv6, then UDP. A display filter and
 * tshark's field output ask for `ip.src` or `udp.port` of an ARP, TCP or DNS frame as well as of a
 * RoCE one, which the RoCE decoder does not read. A header the frame is too short for is null, as
 * are the ones after it; nothing here throws.
 */
import { EtherType, type EthernetHeader, ethernetHeaderLen, parseEthernet } from './ethernet';
import { type Ipv4Header, IpProtocol, parseIpv4 } from './ipv4';
import { IPV6_LEN, type Ipv6Header, parseIpv6 } from './ipv6';
import { type UdpHeader, UDP_LEN, parseUdp } from './udp';
import { LinkType } from './pcap';
import { SLL_LEN, parseSll } from './sll';
import { SLL2_LEN, parseSll2 } from './sll2';

export interface FrameLayers {
  eth: EthernetHeader | null;
  ipv4: Ipv4Header | null;
  ipv6: Ipv6Header | null;
  udp: UdpHeader | null;
}

/** The headers of `bytes`, a frame of link type `linkType`. */
export function frameLayers(bytes: Uint8Array, linkType: number): FrameLayers {
  const out: FrameLayers = { eth: null, ipv4: null, ipv6: null, udp: null };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.byteLength;
  let off: number;
  let type: number;
  try {
    switch (linkType) {
      case LinkType.Ethernet:
        out.eth = parseEthernet(view, 0, end);
        off = ethernetHeaderLen(out.eth);
        type = out.eth.etherType;
        break;
      case LinkType.LinuxSll:
        type = parseSll(view, 0, end).protocol;
        off = SLL_LEN;
        break;
      case LinkType.LinuxSll2:
        type = parseSll2(view, 0, end).protocol;
        off = SLL2_LEN;
        break;
      case LinkType.Raw:
      case LinkType.Ipv4:
      case LinkType.Ipv6: {
        const v = end > 0 ? (bytes[0] ?? 0) >>> 4 : 0;
        type = v === 4 ? EtherType.IPv4 : v === 6 ? EtherType.IPv6 : -1;
        off = 0;
        break;
      }
      default:
        return out;
    }
    let udpOff = -1;
    if (type === EtherType.IPv4 && end - off >= 20 && (bytes[off] ?? 0) >>> 4 === 4) {
      const ip = parseIpv4(view, off, end);
      out.ipv4 = ip;
      // A later fragment carries no UDP header.
      if (ip.protocol === IpProtocol.UDP && ip.fragmentOffset === 0) udpOff = off + ip.ihl * 4;
    } else if (type === EtherType.IPv6 && end - off >= IPV6_LEN && (bytes[off] ?? 0) >>> 4 === 6) {
      const ip = parseIpv6(view, off, end);
      out.ipv6 = ip;
      if (ip.nextHeader === IpProtocol.UDP) udpOff = off + IPV6_LEN;
    }
    if (udpOff >= 0 && end - udpOff >= UDP_LEN) out.udp = parseUdp(view, udpOff, end);
  } catch {
    // A header cut short (or an IPv4 header length below 5): the headers read so far stand.
  }
  return out;
}
