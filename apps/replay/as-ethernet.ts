/**
 * RoCE v2 frames captured without an Ethernet header (raw IP, Linux cooked SLL and SLL2, BSD
 * loopback), given one for the stack a replay runs: its devices send and receive Ethernet frames.
 * The ICRC covers the IP header and what follows, never the link header, so it stays valid. The
 * MAC addresses are zero: the capture does not show them, and the replay's device does not filter
 * on them (replay-stack.ts gives each side a MAC of its own when the capture shows none).
 */
import type { RocePacket } from '../../packets/decode';
import { ETH_LEN, EtherType } from '../../packets/ethernet';

/** `bytes` (decoded as `p`) with an Ethernet header in place of its link header, or null when it has one already or is not RoCE v2. */
export function asEthernet(bytes: Uint8Array, p: RocePacket): Uint8Array | null {
  if (p.eth !== null || p.version !== 2 || p.l3Off < 0 || (p.ipv4 === null && p.ipv6 === null)) return null;
  const out = new Uint8Array(ETH_LEN + bytes.length - p.l3Off);
  new DataView(out.buffer).setUint16(ETH_LEN - 2, p.ipv4 !== null ? EtherType.IPv4 : EtherType.IPv6);
  out.set(bytes.subarray(p.l3Off), ETH_LEN);
  return out;
}
