/**
 * Where the UDP header of an Ethernet frame is, read without decoding the frame: Ethernet, an
 * optional 802.1Q or 802.1ad tag, IPv4 (any header length) or IPv6 (no extension headers, as RoCE
 * v2 sends), protocol UDP. For the places that only need the ports: choosing a transmit queue per
 * flow (multi-queue-driver.ts) and picking the RoCE v2 frames of a capture to re-send (replay --onto).
 */

/** Byte offset of the UDP header in `f`, or -1 when `f` is not an IPv4/IPv6 UDP frame whose UDP header it holds. */
export function udpHeaderOffset(f: Uint8Array): number {
  let off = 12;
  let type = ((f[off] ?? 0) << 8) | (f[off + 1] ?? 0);
  if (type === 0x8100 || type === 0x88a8) {
    off += 4;
    type = ((f[off] ?? 0) << 8) | (f[off + 1] ?? 0);
  }
  const l3 = off + 2;
  let udp: number;
  if (type === 0x0800 && f[l3 + 9] === 17) udp = l3 + ((f[l3] ?? 0) & 0xf) * 4;
  else if (type === 0x86dd && f[l3 + 6] === 17) udp = l3 + 40;
  else return -1;
  return udp + 8 <= f.length ? udp : -1;
}

/** The UDP source port of `f`, or -1. */
export function udpSourcePort(f: Uint8Array): number {
  const u = udpHeaderOffset(f);
  return u < 0 ? -1 : ((f[u] ?? 0) << 8) | (f[u + 1] ?? 0);
}

/** The UDP destination port of `f`, or -1. */
export function udpDestinationPort(f: Uint8Array): number {
  const u = udpHeaderOffset(f);
  return u < 0 ? -1 : ((f[u + 2] ?? 0) << 8) | (f[u + 3] ?? 0);
}
