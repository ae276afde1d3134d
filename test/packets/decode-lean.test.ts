/**
 * The stack's lean decode (`lean: true`) gives the same verdict and the same transport fields as
 * the full decoder for every opcode, over IPv4 and IPv6, for frames it reads in place and for
 * frames it hands to the full decoder (VLAN tags, IPv4 options), and for every truncation and
 * every single-byte change of a frame. With `leanWithIp` (roce decode's summary lines) it also
 * gives the full decoder's IP and UDP headers.
 */
import { isDeepStrictEqual } from 'node:util';
import { buildRoceV2Frame } from '../../packets/build';
import { type DecodedFrame, type DecodeOptions, decodeFrame } from '../../packets/decode';
import { OPCODES } from '../../packets/opcodes';
import { LinkType } from '../../packets/pcap';
import { Rng } from '../../base/rng';
import { transportSpecFor } from '../support/specs';

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const ipv4 = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };
const ipv6 = { version: 6 as const, src: 'fd00::1', dst: 'fd00::2', flowLabel: 0x12345, trafficClass: 0x60 };
const known = OPCODES.filter((e) => e !== undefined);

/** What the stack reads: everything except the link, IP and UDP header objects. */
function transportView(d: DecodedFrame): unknown {
  if (!d.roce) return { roce: false };
  const { eth: _e, ipv4: _4, ipv6: _6, udp: _u, ipChecksumOk: _c, error, ...rest } = d;
  return { ...rest, error: error === null ? null : { code: error.code, offset: error.offset } };
}

/** What a summary line reads: all but the Ethernet header and the IP checksum verdict. */
function summaryView(d: DecodedFrame): unknown {
  if (!d.roce) return { roce: false };
  const { eth: _e, ipChecksumOk: _c, error, ...rest } = d;
  return { ...rest, error: error === null ? null : { code: error.code, offset: error.offset } };
}

/** jest's toEqual, with node's strict deep equality first: thousands of frames compare fast, and a difference is shown by jest. */
function expectEqual(got: unknown, want: unknown): void {
  if (!isDeepStrictEqual(got, want)) expect(got).toEqual(want);
}

function same(frame: Uint8Array, opts: DecodeOptions = {}): void {
  const full = decodeFrame(frame, LinkType.Ethernet, opts);
  const lean = decodeFrame(frame, LinkType.Ethernet, { ...opts, lean: true });
  expectEqual(transportView(lean), transportView(full));
  const withIp = decodeFrame(frame, LinkType.Ethernet, { ...opts, lean: true, leanWithIp: true });
  expectEqual(summaryView(withIp), summaryView(full));
}

describe.each(known.map((e) => [e!.name, e!] as const))('%s', (_name, info) => {
  test.each([
    ['IPv4', ipv4],
    ['IPv6', ipv6],
  ] as const)('over %s: read in place, without header objects, same transport fields', (_n, ip) => {
    const frame = buildRoceV2Frame({ ...transportSpecFor(info, info.opcode + 3), eth, ip });
    const lean = decodeFrame(frame, LinkType.Ethernet, { lean: true });
    expect(lean.roce && lean.error === null && lean.icrcOk === true).toBe(true);
    expect(lean.roce && lean.eth === null && lean.ipv4 === null && lean.udp === null).toBe(true);
    const withIp = decodeFrame(frame, LinkType.Ethernet, { lean: true, leanWithIp: true });
    expect(withIp.roce && withIp.eth === null && (withIp.ipv4 ?? withIp.ipv6) !== null && withIp.udp !== null).toBe(true);
    same(frame);
    same(frame, { verifyIcrc: false });
  });
});

test('tagged frames and IPv4 options go through the full decoder', () => {
  const t = transportSpecFor(OPCODES[0x0a]!, 7); // RDMA WRITE ONLY
  const tagged = buildRoceV2Frame({ ...t, eth: { ...eth, vlan: { pcp: 3, dei: 0, vid: 7, tpid: 0x8100 } }, ip: ipv4 });
  const lean = decodeFrame(tagged, LinkType.Ethernet, { lean: true });
  expect(lean.roce && lean.eth?.vlan?.vid).toBe(7);
  same(tagged);
});

test('every truncation and every single-byte change gets the full decoder verdict', () => {
  const rng = new Rng(11);
  for (const op of [0x04, 0x06, 0x0a, 0x0c, 0x10, 0x11, 0x13, 0x64]) {
    const info = OPCODES[op]!;
    for (const ip of [ipv4, ipv6]) {
      const frame = buildRoceV2Frame({ ...transportSpecFor(info, op), eth, ip });
      for (let len = 0; len < frame.length; len++) same(frame.slice(0, len));
      for (let i = 0; i < frame.length; i++) {
        const f = frame.slice();
        f[i] = (f[i]! ^ (1 + (rng.u32() % 255))) & 0xff;
        same(f);
        same(f, { verifyIcrc: false });
      }
    }
  }
});
