/**
 * RoCE v1 captures in a replay. The stack speaks RoCE v2 only, and what a replay compares is the
 * transport (BTH and what follows), which is the same in both: IBTA vol. 1 annex A16 (RoCE) carries
 * it after a GRH in an Ethernet frame of EtherType 0x8915; annex A17 (RoCE v2) after IP and UDP
 * port 4791. So a v1 frame is fed to the stack as the v2 frame with the same transport: the GRH,
 * which has the layout of an IPv6 header, becomes one (next header UDP), a UDP header to port 4791
 * follows, and the ICRC is computed for v2. The stack answers in v2 to the GIDs as IPv6 addresses.
 */
import type { RocePacket } from '../../packets/decode';
import { EtherType } from '../../packets/ethernet';
import { GRH_LEN } from '../../packets/grh';
import { IpProtocol } from '../../packets/ipv4';
import { ROCE_V2_PORT, UDP_LEN } from '../../packets/udp';
import { sealIcrcV2 } from '../../packets/icrc';

/** The v2 form of v1 frame `bytes` (decoded as `p`; a truncated capture's missing bytes are zeros), or null for anything else. */
export function v1AsV2(bytes: Uint8Array, p: RocePacket): Uint8Array | null {
  const b = p.bth;
  if (p.version !== 1 || p.grh === null || b === null || p.eth === null || p.payloadOff < 0) return null;
  const l2 = p.l3Off;
  const tStart = p.bthOff;
  const tEnd = p.payloadOff + p.payloadLength + b.padCount; // the transport without its ICRC
  const tLen = tEnd - tStart;
  const out = new Uint8Array(l2 + GRH_LEN + UDP_LEN + tLen + 4);
  const view = new DataView(out.buffer);
  out.set(bytes.subarray(0, l2));
  view.setUint16(l2 - 2, EtherType.IPv6);
  out.set(bytes.subarray(l2, l2 + GRH_LEN), l2);
  view.setUint16(l2 + 4, UDP_LEN + tLen + 4); // payload length
  out[l2 + 6] = IpProtocol.UDP; // next header (the GRH said 0x1B: a BTH follows)
  const u = l2 + GRH_LEN;
  view.setUint16(u, 0xc000 | (b.destQp & 0x3fff));
  view.setUint16(u + 2, ROCE_V2_PORT);
  view.setUint16(u + 4, UDP_LEN + tLen + 4);
  out.set(bytes.subarray(tStart, Math.min(tEnd, bytes.length)), u + UDP_LEN);
  sealIcrcV2(out, l2, u + UDP_LEN + tLen);
  return out;
}
