/**
 * The text of IP addresses, made once per address: the analyzer names every frame's source and
 * destination, and building the same IPv4 text per frame (four numbers and three dots) is a
 * measurable share of `roce analyze` (docs/performance.md). The same string object comes back
 * each time, so its hash is computed once too. Bounded: the cache starts over when it holds
 * `limit` addresses.
 */
import { ipv4ToString } from '../packets/bytes';
import { type RocePacket, packetAddresses } from '../packets/decode';

export class AddressNames {
  private readonly v4 = new Map<number, string>();

  constructor(private readonly limit = 65_536) {}

  /** `packetAddresses(p)`, from the cache for IPv4. */
  of(p: RocePacket): { src: string; dst: string } {
    const ip = p.ipv4;
    if (ip === null) return packetAddresses(p);
    return { src: this.name(ip.src), dst: this.name(ip.dst) };
  }

  private name(addr: number): string {
    let s = this.v4.get(addr);
    if (s === undefined) {
      if (this.v4.size >= this.limit) this.v4.clear();
      s = ipv4ToString(addr);
      this.v4.set(addr, s);
    }
    return s;
  }
}
