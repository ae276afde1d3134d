/**
 * The display filter of `roce decode -Y` (packets/display-filter.ts) on frames built here: its
 * grammar, each operator and literal kind, Wireshark 4.0's rules for fields that occur twice or
 * not at all, and a typed error with the position for each kind of bad filter. tshark itself
 * judges the same filters on the bundled captures in test/crosscheck/tshark-cli.test.ts.
 */
import { DisplayFilterError, compileDisplayFilter } from '../../packets/display-filter';
import type { FieldFrame } from '../../packets/frame-fields';
import { frameLayers } from '../../packets/frame-layers';
import { buildRoceV2Frame } from '../../packets/build';
import { decodeFrame } from '../../packets/decode';
import { LinkType } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';

function frame(number: number, spec: Parameters<typeof buildRoceV2Frame>[0]): FieldFrame {
  const bytes = buildRoceV2Frame(spec);
  return {
    number,
    origLen: bytes.length,
    bytes,
    epochNs: 1_705_320_000_000_000_000n + BigInt(number) * 1000n,
    relativeNs: BigInt(number - 1) * 1000n,
    deltaNs: number === 1 ? 0n : 1000n,
    deltaDisplayedNs: 0n,
    decoded: decodeFrame(bytes),
    layers: frameLayers(bytes, LinkType.Ethernet),
  };
}

const SEND = frame(1, {
  eth: { src: 0x0200c6120001, dst: 0x0200c6120002 },
  ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2', ecn: 2, dscp: 26, ttl: 64 },
  udp: { srcPort: 49152 },
  bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x12, psn: 7, ackReq: true },
  payload: new Uint8Array(40),
});
const ACK = frame(2, {
  eth: { src: 0x0200c6120002, dst: 0x0200c6120001 },
  ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1', ttl: 63 },
  udp: { srcPort: 49153 },
  bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn: 7 },
  aeth: { syndrome: 0x1f, msn: 1 },
});
const V6 = frame(3, {
  eth: { src: 0x0200c6120001, dst: 0x0200c6120002, vlan: { vid: 100, pcp: 3, dei: 0, tpid: 0x8100 } },
  ip: { version: 6, src: 'fd00::1', dst: 'fd00::2', hopLimit: 9, trafficClass: 0x6a },
  udp: { srcPort: 4791, dstPort: 4791 },
  bth: { opcode: Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, destQp: 0x31, psn: 0x10000 },
  immDt: 0xc0ffee01,
  payload: new Uint8Array(8),
});
const ALL = [SEND, ACK, V6];

const kept = (filter: string): number[] => {
  const f = compileDisplayFilter(filter);
  return ALL.filter((x) => f.matches(x)).map((x) => x.number);
};

describe('display filter: what it keeps', () => {
  test.each([
    ['infiniband', [1, 2, 3]],
    ['ip', [1, 2]],
    ['ipv6 && vlan', [3]],
    ['infiniband.aeth', [2]],
    ['!infiniband.aeth', [1, 3]],
    ['not infiniband.aeth', [1, 3]],
    ['infiniband.bth.opcode == 4', [1]],
    ['infiniband.bth.opcode eq 0x04', [1]],
    ['infiniband.bth.opcode == 04', [1]],
    ['infiniband.bth.opcode != 4', [2, 3]],
    ['infiniband.bth.opcode in {4, 17}', [1, 2]],
    ['infiniband.bth.opcode in {4 17}', [1, 2]],
    ['infiniband.bth.psn > 7', [3]],
    ['infiniband.bth.psn ge 7 and infiniband.bth.psn lt 0x10000', [1, 2]],
    ['infiniband.bth.destqp <= 0x12', [1, 2]],
    ['infiniband.bth.a == 1', [1]],
    ['infiniband.bth.a == true', [1]],
    ['infiniband.bth.a == False', [2, 3]],
    ['infiniband.aeth.syndrome.credit_count == 31', [2]],
    ['infiniband.immdt == c0:ff:ee:01', [3]],
    ['infiniband.immdt == c0ffee01', [3]],
    ['ip.src == 198.18.0.1', [1]],
    ['ip.dst == 198.18.0.0/24', [1, 2]],
    ['ip.src > ip.dst', [2]],
    ['ip.addr == 198.18.0.1', [1, 2]],
    // Wireshark 4.0: != is "every occurrence differs", ~= and !== "some occurrence differs".
    ['ip.addr != 198.18.0.1', []],
    ['ip.addr ~= 198.18.0.1', [1, 2]],
    ['ip.addr !== 198.18.0.1', [1, 2]],
    ['ip.addr === 198.18.0.1', []],
    ['ip.dsfield.ecn == 2 && ip.dsfield.dscp == 26', [1]],
    ['ip.ttl < 64', [2]],
    ['ipv6.src == fd00::1 && ipv6.hlim == 9', [3]],
    ['ipv6.dst == fd00::/8', [3]],
    ['ipv6.tclass.dscp == 26 && ipv6.tclass.ecn == 2', [3]],
    ['vlan.id == 100 && vlan.priority == 3', [3]],
    ['eth.src == 02:00:c6:12:00:01', [1, 3]],
    ['eth.dst == 02-00-c6-12-00-01', [2]],
    ['eth.addr == 0200.c612.0002', [1, 2, 3]],
    ['udp.srcport == udp.dstport', [3]],
    ['udp.port == 49153', [2]],
    ['frame.number > 1 && frame.time_relative < 0.0000015', [2]],
    ['frame.time_delta == 0', [1]],
    // A comparison with a field the frame lacks is false, and its negation true.
    ['ip.ttl == 64 || ipv6', [1, 3]],
    ['!(ip.ttl == 64)', [2, 3]],
    // && binds tighter than ||.
    ['frame.number == 1 || frame.number == 3 && ip', [1]],
    ['(frame.number == 1 || frame.number == 3) && ipv6', [3]],
    ['frame.number == 1 or frame.number == 2 and infiniband.aeth', [1, 2]],
  ])('%s', (filter, frames) => {
    expect(kept(filter)).toEqual(frames);
  });
});

describe('display filter: bad filters are typed errors that say where', () => {
  test.each([
    ['', 0, /empty/],
    ['infiniband.bth.opcode ==', 24, /ends where a value/],
    ['infiniband.bth.opcode == 17 &&', 30, /ends where a field name/],
    ['nosuch.field == 1', 0, /not a field roce decode knows/],
    ['(ip', 3, /"\(" is not closed/],
    ['ip)', 2, /unexpected "\)"/],
    ['infiniband.bth.opcode == 256', 25, /too large/],
    ['infiniband.bth.opcode == x1', 25, /not an integer/],
    ['ip.src == 198.18.0.300', 10, /not an IPv4 address/],
    ['ip.src == 198.18.0.0/33', 10, /prefix length/],
    ['eth.src == 02:00', 11, /not a MAC address/],
    ['infiniband.bth.a == 2', 20, /not a boolean/],
    ['ip == 1', 0, /protocol or header/],
    ['ip.src == ipv6.src', 10, /different types/],
    ['infiniband.bth.opcode contains 1', 22, /not supported/],
    ['ip.src == "x"', 10, /strings are not supported/],
    ['infiniband.bth.opcode in 4', 25, /expected "\{"/],
    ['frame.number in {}', 16, /empty set/],
    ['ip.src # 1', 7, /unexpected character/],
  ])('%j', (filter, position, message) => {
    let err: unknown;
    try {
      compileDisplayFilter(filter);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DisplayFilterError);
    const e = err as DisplayFilterError;
    expect(e.code).toBe('ROCE_ERR_DISPLAY_FILTER');
    expect(e.reason).toMatch(message);
    expect(e.position).toBe(position);
    expect(e.message).toContain(`(at character ${position + 1})`);
  });
});
