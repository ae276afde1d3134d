/**
 * The UDP ports of a frame read without decoding it (nic-driver/udp-ports.ts): IPv4 with and
 * without options, IPv6, behind an 802.1Q tag; -1 for anything else and for a frame cut before
 * the UDP header ends.
 */
import { udpDestinationPort, udpHeaderOffset, udpSourcePort } from '../../nic-driver/udp-ports';

function frame(o: { vlan?: boolean; v6?: boolean; ihl?: number; proto?: number }): Uint8Array {
  const l2 = o.vlan === true ? 18 : 14;
  const l3 = o.v6 === true ? 40 : (o.ihl ?? 5) * 4;
  const f = new Uint8Array(l2 + l3 + 8 + 12);
  const v = new DataView(f.buffer);
  if (o.vlan === true) {
    v.setUint16(12, 0x8100);
    v.setUint16(14, 5);
  }
  v.setUint16(l2 - 2, o.v6 === true ? 0x86dd : 0x0800);
  if (o.v6 === true) {
    f[l2] = 0x60;
    f[l2 + 6] = o.proto ?? 17;
  } else {
    f[l2] = 0x40 | (o.ihl ?? 5);
    f[l2 + 9] = o.proto ?? 17;
  }
  v.setUint16(l2 + l3, 0xc123);
  v.setUint16(l2 + l3 + 2, 4791);
  return f;
}

test.each([
  ['IPv4', {}, 34],
  ['IPv4 with options (IHL 7)', { ihl: 7 }, 42],
  ['IPv6', { v6: true }, 54],
  ['802.1Q, IPv4', { vlan: true }, 38],
  ['802.1Q, IPv6', { vlan: true, v6: true }, 58],
])('%s: the UDP header and both ports', (_, o, at) => {
  const f = frame(o);
  expect(udpHeaderOffset(f)).toBe(at);
  expect(udpSourcePort(f)).toBe(0xc123);
  expect(udpDestinationPort(f)).toBe(4791);
});

test('not UDP, not IP, or cut inside the UDP header: -1', () => {
  expect(udpSourcePort(frame({ proto: 6 }))).toBe(-1);
  const arp = frame({});
  arp[12] = 0x08;
  arp[13] = 0x06;
  expect(udpDestinationPort(arp)).toBe(-1);
  expect(udpSourcePort(frame({}).subarray(0, 40))).toBe(-1);
  expect(udpSourcePort(new Uint8Array(0))).toBe(-1);
});
