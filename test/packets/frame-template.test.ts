/**
 * The stack's fast frame builder (FrameTemplate) against the general builder: byte-identical
 * frames for every opcode and a spread of payload lengths, over IPv4 (its incrementally updated
 * header checksum included) and IPv6, with and without a VLAN tag, written at odd offsets of a
 * buffer that holds older bytes.
 */
import { buildRoceV2Frame, type Ipv4Spec, type Ipv6Spec } from '../../packets/build';
import { decodeFrame } from '../../packets/decode';
import { FrameTemplate } from '../../packets/frame-template';
import { OPCODES } from '../../packets/opcodes';
import { transportSpecFor } from '../support/specs';

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const ips: [string, Ipv4Spec | Ipv6Spec][] = [
  ['IPv4', { version: 4, src: '198.18.0.1', dst: '198.19.255.254', dscp: 26, ecn: 1, ttl: 17, dontFragment: true }],
  ['IPv6', { version: 6, src: 'fd00::1', dst: 'fd00::2', trafficClass: 0x68, flowLabel: 0xabcde, hopLimit: 9 }],
];
const known = OPCODES.filter((e) => e !== undefined);

describe.each(ips)('over %s', (_n, ip) => {
  test.each([
    ['untagged', null],
    ['802.1Q', { pcp: 5, dei: 0, vid: 100, tpid: 0x8100 }],
  ] as const)('%s: every opcode and several payload lengths, same bytes as the general builder', (_t, vlan) => {
    const tpl = new FrameTemplate({ eth: { ...eth, vlan }, ip, udp: { srcPort: 0xc123 } });
    const buf = new Uint8Array(6000).fill(0xee);
    const view = new DataView(buf.buffer);
    let checked = 0;
    for (const info of known) {
      for (const seed of [1, 2, 3, 250, 4093]) {
        const t = transportSpecFor(info!, seed);
        const want = buildRoceV2Frame({ ...t, eth: { ...eth, vlan }, ip, udp: { srcPort: 0xc123 } });
        const off = 1 + (seed % 7);
        const n = tpl.emitInto(t, buf, view, off);
        expect(n).toBe(tpl.frameLength(t));
        expect(Buffer.from(buf.subarray(off, off + n)).equals(Buffer.from(want))).toBe(true);
        const d = decodeFrame(buf.slice(off, off + n));
        expect(d.roce && d.error === null && d.icrcOk === true && (d.ipv4 === null || d.ipChecksumOk === true)).toBe(true);
        checked++;
      }
    }
    expect(checked).toBe(known.length * 5);
  });
});
