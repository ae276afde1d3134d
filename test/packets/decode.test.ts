/** The decoder against frames built from the opcode table, and its behaviour on bad input. */
import { buildRoceV1Frame, buildRoceV2Frame, type RoceV2Spec } from '../../packets/build';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { WireErrorCode } from '../../packets/errors';
import { OPCODES } from '../../packets/opcodes';
import { LinkType } from '../../packets/pcap';
import { frameToJson } from '../../packets/json';
import { transportSpecFor } from '../support/specs';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const ipv4 = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };
const ipv6 = { version: 6 as const, src: 'fd00::1', dst: '::ffff:198.18.0.2', flowLabel: 0x12345, trafficClass: 0x60 };

function roce(frame: Uint8Array, link: number = LinkType.Ethernet): RocePacket {
  const d = decodeFrame(frame, link);
  if (!d.roce) throw new Error('not decoded as RoCE');
  return d;
}

const known = OPCODES.filter((e) => e !== undefined);

describe.each(known.map((e) => [e!.name, e!] as const))('%s', (_name, info) => {
  test.each([
    ['IPv4', ipv4, null],
    ['IPv6', ipv6, null],
    ['IPv4 + 802.1Q', ipv4, { pcp: 5, dei: 0, vid: 42, tpid: 0x8100 }],
  ] as const)('builds and decodes over %s', (_n, ip, vlan) => {
    const t = transportSpecFor(info, info.opcode + 11);
    const frame = buildRoceV2Frame({ ...t, eth: { ...eth, vlan }, ip });
    const p = roce(frame);
    expect(p.error).toBeNull();
    expect(p.icrcOk).toBe(true);
    expect(p.version).toBe(2);
    expect(p.info).toBe(info);
    expect(p.bth).toMatchObject(t.bth);
    expect(p.reth).toEqual(t.reth ?? null);
    expect(p.aeth).toEqual(t.aeth ?? null);
    expect(p.atomicEth).toEqual(t.atomicEth ?? null);
    expect(p.atomicAckEth).toEqual(t.atomicAckEth ?? null);
    expect(p.deth).toEqual(t.deth ?? null);
    expect(p.xrcEth).toEqual(t.xrcEth ?? null);
    expect(p.rdEth).toEqual(t.rdEth ?? null);
    expect(p.feth).toEqual(t.feth ?? null);
    expect(p.immDt?.value ?? null).toEqual(t.immDt ?? null);
    expect(p.ieth?.rkey ?? null).toEqual(t.ieth ?? null);
    expect(p.payloadLength).toBe(t.payload?.length ?? 0);
    expect(p.bth?.padCount).toBe((4 - ((t.payload?.length ?? 0) % 4)) % 4);
    expect(Array.from(frame.subarray(p.payloadOff, p.payloadOff + p.payloadLength))).toEqual(Array.from(t.payload ?? []));
    if (vlan) expect(p.eth?.vlan).toEqual(vlan);
  });

  test('builds and decodes as RoCE v1 (GRH)', () => {
    const t = transportSpecFor(info, info.opcode + 5);
    const frame = buildRoceV1Frame({ ...t, eth, grh: { sgid: 'fe80::1', dgid: 'fe80::2', trafficClass: 2 } });
    const p = roce(frame);
    expect(p.version).toBe(1);
    expect(p.error).toBeNull();
    expect(p.icrcOk).toBe(true);
    expect(p.bth?.psn).toBe(t.bth.psn);
  });
});

describe('link types', () => {
  const t = transportSpecFor(OPCODES[0x04]!, 3);
  const ethFrame = buildRoceV2Frame({ ...t, eth, ip: ipv4 });
  const ip = ethFrame.subarray(14);
  test('raw IP', () => {
    expect(roce(ip, LinkType.Raw).icrcOk).toBe(true);
    expect(roce(ip, LinkType.Ipv4).bth?.psn).toBe(t.bth.psn);
  });
  test('Linux cooked SLL and SLL2', () => {
    const sll = new Uint8Array(16 + ip.length);
    sll.set([0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00]);
    sll.set(ip, 16);
    expect(roce(sll, LinkType.LinuxSll).icrcOk).toBe(true);
    const sll2 = new Uint8Array(20 + ip.length);
    sll2.set([0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
    sll2.set(ip, 20);
    expect(roce(sll2, LinkType.LinuxSll2).icrcOk).toBe(true);
  });
  test('unknown link type, ARP and other UDP ports are not RoCE', () => {
    expect(decodeFrame(ethFrame, 147).roce).toBe(false);
    const other = ethFrame.slice();
    other[14 + 20 + 3] = 53; // UDP destination port 4791 -> 4661 ... any other port
    expect(decodeFrame(other).roce).toBe(false);
    const arp = ethFrame.slice(0, 42);
    arp[12] = 0x08;
    arp[13] = 0x06;
    expect(decodeFrame(arp).roce).toBe(false);
  });
  test('--roce-port moves RoCE v2 to another UDP port', () => {
    const f = buildRoceV2Frame({ ...t, eth, ip: ipv4, udp: { dstPort: 9741 } });
    expect(decodeFrame(f).roce).toBe(false);
    const d = decodeFrame(f, LinkType.Ethernet, { rocePort: 9741 });
    expect(d.roce && d.icrcOk).toBe(true);
  });
});

describe('bad input is a typed error on the frame, with its byte offset', () => {
  const base: RoceV2Spec = { ...transportSpecFor(OPCODES[0x0a]!, 9, 37), eth, ip: ipv4 };
  const frame = buildRoceV2Frame(base);
  const icrcOff = frame.length - 4;

  test('bad ICRC', () => {
    const f = frame.slice();
    f[60] = (f[60] ?? 0) ^ 1;
    const p = roce(f);
    expect(p.icrcOk).toBe(false);
    expect(p.error?.code).toBe(WireErrorCode.BadIcrc);
    expect(p.error?.offset).toBe(icrcOff);
    expect(p.reth).not.toBeNull(); // fields are still there
  });

  test('masked fields do not break the ICRC', () => {
    const f = frame.slice();
    f[14 + 1] = 0x03; // ECN CE
    f[14 + 8] = 1; // TTL
    f[42 + 4] = 0x80; // FECN
    expect(roce(f).icrcOk).toBe(true);
  });

  test('unknown opcode', () => {
    const f = buildRoceV2Frame({ ...base, icrc: 0 });
    f[42] = 0x1f;
    const p = roce(f);
    expect(p.error?.code).toBe(WireErrorCode.UnknownOpcode);
    expect(p.error?.offset).toBe(42);
    expect(frameToJson(1, ZERO_FRAME_TIME, p)['opcodeName']).toBe('UNKNOWN_0x1f');
  });

  test('every truncation gives an error or not-RoCE, never a throw', () => {
    for (let n = 0; n < frame.length; n++) {
      const d = decodeFrame(frame.subarray(0, n));
      if (d.roce) {
        expect(d.error).not.toBeNull();
        expect(d.error!.offset).toBeLessThanOrEqual(n);
      }
    }
    // Once the UDP header is there, the frame is known to be RoCE and the error says truncated.
    const p = roce(frame.subarray(0, 42 + 20));
    expect(p.error?.code).toBe(WireErrorCode.Truncated);
    expect(p.error?.offset).toBe(62);
  });

  test('UDP length beyond the IP packet', () => {
    const f = frame.slice();
    f[14 + 20 + 4] = 0x7f;
    const p = roce(f);
    expect(p.error?.code).toBe(WireErrorCode.BadLength);
    expect(p.error?.offset).toBe(38);
  });

  test('pad count larger than the bytes after the headers', () => {
    const f = buildRoceV2Frame({ ...base, payload: new Uint8Array(0), bth: { ...base.bth, padCount: 3 } });
    const p = roce(f);
    expect(p.error?.code).toBe(WireErrorCode.BadLength);
  });

  test('an ACK with a payload breaks the payload rule', () => {
    const ack = buildRoceV2Frame({ eth, ip: ipv4, bth: { opcode: 0x11, destQp: 1, psn: 1 }, aeth: { syndrome: 0x1f, msn: 1 } });
    const longer = new Uint8Array(ack.length + 8);
    longer.set(ack.subarray(0, ack.length - 4));
    const v = new DataView(longer.buffer);
    v.setUint16(14 + 2, v.getUint16(14 + 2) + 8);
    v.setUint16(14 + 20 + 4, v.getUint16(14 + 20 + 4) + 8);
    const p = roce(longer);
    expect(p.error?.code).toBe(WireErrorCode.BadLength); // the payload rule is checked before the ICRC
    expect(p.icrcOk).toBe(false);
    expect(p.payloadLength).toBe(8);
  });

  test('a SEND FIRST that is not a whole path MTU', () => {
    const f = buildRoceV2Frame({ eth, ip: ipv4, bth: { opcode: 0x00, destQp: 1, psn: 1 }, payload: new Uint8Array(1000) });
    expect(roce(f).error?.message).toMatch(/path MTU/);
  });
});
