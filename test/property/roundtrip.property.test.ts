/** fast-check: emit then parse gives back the same value, for every header module. */
import fc from 'fast-check';
import { viewOf } from '../../packets/bytes';
import { parseBth, emitBth, BTH_LEN } from '../../packets/bth';
import { parseReth, emitReth } from '../../packets/reth';
import { parseAeth, emitAeth } from '../../packets/aeth';
import { parseAtomicEth, emitAtomicEth } from '../../packets/atomic-eth';
import { parseAtomicAckEth, emitAtomicAckEth } from '../../packets/atomic-ack-eth';
import { parseImmDt, emitImmDt } from '../../packets/immdt';
import { parseIeth, emitIeth } from '../../packets/ieth';
import { parseDeth, emitDeth } from '../../packets/deth';
import { parseXrcEth, emitXrcEth } from '../../packets/xrceth';
import { parseRdEth, emitRdEth } from '../../packets/rdeth';
import { parseFeth, emitFeth } from '../../packets/feth';
import { parseEthernet, emitEthernet } from '../../packets/ethernet';
import { parseIpv4, emitIpv4 } from '../../packets/ipv4';
import { parseIpv6, emitIpv6 } from '../../packets/ipv6';
import { parseUdp, emitUdp } from '../../packets/udp';
import { parseSll, emitSll } from '../../packets/sll';
import { parseSll2, emitSll2 } from '../../packets/sll2';

const u8 = fc.integer({ min: 0, max: 0xff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u24 = fc.integer({ min: 0, max: 0xffffff });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const mac = fc.integer({ min: 0, max: 2 ** 48 - 1 });
const bytes16 = fc.uint8Array({ minLength: 16, maxLength: 16 });

/** Emits at a random offset into a 0xa5-filled buffer, checks the bytes around are untouched, parses back. */
function roundTrip<T>(
  name: string,
  arb: fc.Arbitrary<T>,
  emit: (h: T, v: DataView, off: number) => number,
  parse: (v: DataView, off: number) => T,
  norm: (h: T) => unknown = (h) => h,
): void {
  test(name, () => {
    fc.assert(
      fc.property(arb, fc.integer({ min: 0, max: 7 }), (h, off) => {
        const buf = new Uint8Array(off + 100).fill(0xa5);
        const n = emit(h, viewOf(buf), off);
        for (let i = 0; i < off; i++) if (buf[i] !== 0xa5) return false;
        for (let i = off + n; i < buf.length; i++) if (buf[i] !== 0xa5) return false;
        expect(norm(parse(viewOf(buf), off))).toEqual(norm(h));
        return true;
      }),
      { numRuns: 300 },
    );
  });
}

const toPlain = (h: { src: Uint8Array; dst: Uint8Array }): unknown => ({ ...h, src: Array.from(h.src), dst: Array.from(h.dst) });

roundTrip(
  'BTH',
  fc.record({
    opcode: u8,
    se: fc.boolean(),
    migReq: fc.boolean(),
    padCount: fc.integer({ min: 0, max: 3 }),
    tver: fc.integer({ min: 0, max: 15 }),
    pkey: u16,
    fecn: fc.boolean(),
    becn: fc.boolean(),
    resv6: fc.integer({ min: 0, max: 63 }),
    destQp: u24,
    ackReq: fc.boolean(),
    resv7: fc.integer({ min: 0, max: 127 }),
    psn: u24,
  }),
  emitBth,
  parseBth,
);
roundTrip('RETH', fc.record({ va: u64, rkey: u32, dmaLength: u32 }), emitReth, parseReth);
roundTrip('AETH', fc.record({ syndrome: u8, msn: u24 }), emitAeth, parseAeth);
roundTrip('AtomicETH', fc.record({ va: u64, rkey: u32, swapAdd: u64, compare: u64 }), emitAtomicEth, parseAtomicEth);
roundTrip('AtomicAckETH', fc.record({ origData: u64 }), emitAtomicAckEth, parseAtomicAckEth);
roundTrip('ImmDt', fc.record({ value: u32 }), emitImmDt, parseImmDt);
roundTrip('IETH', fc.record({ rkey: u32 }), emitIeth, parseIeth);
roundTrip('DETH', fc.record({ qkey: u32, srcQp: u24 }), emitDeth, parseDeth);
roundTrip('XRCETH', fc.record({ xrcSrq: u24 }), emitXrcEth, parseXrcEth);
roundTrip('RDETH', fc.record({ eeContext: u24 }), emitRdEth, parseRdEth);
roundTrip('FETH', fc.record({ selectivity: fc.integer({ min: 0, max: 3 }), placementType: fc.integer({ min: 0, max: 15 }) }), emitFeth, parseFeth);
roundTrip('UDP', fc.record({ srcPort: u16, dstPort: u16, length: fc.integer({ min: 8, max: 0xffff }), checksum: u16 }), emitUdp, parseUdp);
roundTrip(
  'Ethernet',
  fc.record({
    dst: mac,
    src: mac,
    vlan: fc.option(
      fc.record({
        pcp: fc.integer({ min: 0, max: 7 }),
        dei: fc.integer({ min: 0, max: 1 }),
        vid: fc.integer({ min: 0, max: 4095 }),
        tpid: fc.constantFrom(0x8100, 0x88a8),
      }),
      { nil: null },
    ),
    etherType: u16.filter((t) => t !== 0x8100 && t !== 0x88a8),
  }),
  emitEthernet,
  parseEthernet,
);
roundTrip(
  'IPv4 (with options, checksum as given)',
  fc.integer({ min: 5, max: 15 }).chain((ihl) =>
    fc.record({
      ihl: fc.constant(ihl),
      dscp: fc.integer({ min: 0, max: 63 }),
      ecn: fc.integer({ min: 0, max: 3 }),
      totalLength: fc.integer({ min: ihl * 4, max: 0xffff }),
      identification: u16,
      dontFragment: fc.boolean(),
      moreFragments: fc.boolean(),
      fragmentOffset: fc.integer({ min: 0, max: 0x1fff }),
      ttl: u8,
      protocol: u8,
      checksum: u16,
      src: u32,
      dst: u32,
      options: fc.uint8Array({ minLength: ihl * 4 - 20, maxLength: ihl * 4 - 20 }),
    }),
  ),
  (h, v, off) => emitIpv4(h, v, off, { computeChecksum: false }),
  parseIpv4,
  (h) => ({ ...h, options: Array.from(h.options) }),
);
roundTrip(
  'IPv6',
  fc.record({
    trafficClass: u8,
    flowLabel: fc.integer({ min: 0, max: 0xfffff }),
    payloadLength: u16,
    nextHeader: u8,
    hopLimit: u8,
    src: bytes16,
    dst: bytes16,
  }),
  emitIpv6,
  parseIpv6,
  toPlain,
);
roundTrip(
  'Linux SLL',
  fc.record({ packetType: u16, arphrdType: u16, addrLen: fc.integer({ min: 0, max: 8 }), addr: fc.uint8Array({ minLength: 8, maxLength: 8 }), protocol: u16 }),
  emitSll,
  parseSll,
  (h) => ({ ...h, addr: Array.from(h.addr) }),
);
roundTrip(
  'Linux SLL2',
  fc.record({
    protocol: u16,
    reserved: u16,
    ifIndex: u32,
    arphrdType: u16,
    packetType: u8,
    addrLen: fc.integer({ min: 0, max: 8 }),
    addr: fc.uint8Array({ minLength: 8, maxLength: 8 }),
  }),
  emitSll2,
  parseSll2,
  (h) => ({ ...h, addr: Array.from(h.addr) }),
);

test('BTH length constant', () => expect(BTH_LEN).toBe(12));
