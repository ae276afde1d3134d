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

test('a payload window of a larger buffer builds the same frame as a view of it, and a window outside it is refused', () => {
  const tpl = new FrameTemplate({ eth, ip: ips[0]![1], udp: { srcPort: 0xc001 } });
  const region = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 13) & 0xff);
  const bth = { opcode: 0x0a, destQp: 0x12, psn: 77, ackReq: true };
  const reth = { va: 0x1000n, rkey: 5, dmaLength: 0 };
  for (const [at, len] of [
    [0, 1],
    [3, 16],
    [5000, 17],
    [9000, 1000],
  ] as const) {
    const viaView = new Uint8Array(6000);
    const viaWindow = new Uint8Array(6000);
    const n1 = tpl.emitInto({ bth, reth: { ...reth, dmaLength: len }, payload: region.subarray(at, at + len) }, viaView, new DataView(viaView.buffer), 0);
    const n2 = tpl.emitInto(
      { bth, reth: { ...reth, dmaLength: len }, payload: region, payloadOffset: at, payloadLength: len },
      viaWindow,
      new DataView(viaWindow.buffer),
      0,
    );
    expect(n2).toBe(n1);
    expect(Buffer.from(viaWindow.subarray(0, n2)).equals(Buffer.from(viaView.subarray(0, n1)))).toBe(true);
  }
  const out = new Uint8Array(6000);
  expect(() => tpl.emitInto({ bth, reth, payload: region, payloadOffset: 9999, payloadLength: 2 }, out, new DataView(out.buffer), 0)).toThrow(
    /payload window \[9999, 10001\) is outside its 10000-byte buffer/,
  );
});
