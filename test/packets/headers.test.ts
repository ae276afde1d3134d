/**
 * Per-header fixtures in smoltcp's four-way style: parse a fixture into the
 * expected value, emit the value into a 0xa5-filled buffer (at an odd offset)
 * and get the fixture back byte for byte, and a truncated buffer gives a
 * WireError with the right offset. Fixtures are written from the IBTA layouts;
 * the BTH/AETH/RETH/CNP ones carry the field values of real frames in
 * ../shared/captures/public (noted per case).
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import { fromHex, viewOf } from '../../packets/bytes';
import { parseBth, emitBth, BTH_LEN } from '../../packets/bth';
import { parseReth, emitReth, RETH_LEN } from '../../packets/reth';
import { parseAeth, emitAeth, AETH_LEN, decodeSyndrome, encodeSyndrome, describeSyndrome, CREDIT_TABLE, RNR_TIMER_USEC } from '../../packets/aeth';
import { parseAtomicEth, emitAtomicEth, ATOMIC_ETH_LEN } from '../../packets/atomic-eth';
import { parseAtomicAckEth, emitAtomicAckEth, ATOMIC_ACK_ETH_LEN } from '../../packets/atomic-ack-eth';
import { parseImmDt, emitImmDt, IMMDT_LEN } from '../../packets/immdt';
import { parseIeth, emitIeth, IETH_LEN } from '../../packets/ieth';
import { parseDeth, emitDeth, DETH_LEN } from '../../packets/deth';
import { parseXrcEth, emitXrcEth, XRCETH_LEN } from '../../packets/xrceth';
import { parseRdEth, emitRdEth, RDETH_LEN } from '../../packets/rdeth';
import { parseFeth, emitFeth, FETH_LEN } from '../../packets/feth';
import { parseCnpReserved, emitCnpReserved, CNP_RESERVED_LEN } from '../../packets/cnp';
import { parseEthernet, emitEthernet } from '../../packets/ethernet';
import { parseIpv4, emitIpv4, ipv4ChecksumOk } from '../../packets/ipv4';
import { parseIpv6, emitIpv6 } from '../../packets/ipv6';
import { parseGrh } from '../../packets/grh';
import { parseUdp, emitUdp, UDP_LEN } from '../../packets/udp';

interface Case {
  name: string;
  hex: string;
  len: number;
  value: unknown;
  parse: (v: DataView, off: number, end?: number) => unknown;
  emit: (h: never, v: DataView, off: number) => number;
}

const cases: Case[] = [
  {
    // Huawei HiRoCE ACK (roce.pcap frame 16): MigReq set, DestQP 0x45, PSN 0.
    name: 'BTH (ACK from Huawei hardware, MigReq=1)',
    hex: '11 40 ffff 00 000045 00 000000',
    len: BTH_LEN,
    value: {
      opcode: 0x11,
      se: false,
      migReq: true,
      padCount: 0,
      tver: 0,
      pkey: 0xffff,
      fecn: false,
      becn: false,
      resv6: 0,
      destQp: 0x45,
      ackReq: false,
      resv7: 0,
      psn: 0,
    },
    parse: parseBth,
    emit: emitBth as Case['emit'],
  },
  {
    // Every bit of the flag bytes set differently: SE, pad 3, TVer 0, FECN, resv6 0x10 (Huawei's resv8a), AckReq, resv7.
    name: 'BTH (all flags)',
    hex: '0a b0 8001 90 abcdef 81 fedcba',
    len: BTH_LEN,
    value: {
      opcode: 0x0a,
      se: true,
      migReq: false,
      padCount: 3,
      tver: 0,
      pkey: 0x8001,
      fecn: true,
      becn: false,
      resv6: 0x10,
      destQp: 0xabcdef,
      ackReq: true,
      resv7: 1,
      psn: 0xfedcba,
    },
    parse: parseBth,
    emit: emitBth as Case['emit'],
  },
  {
    // rxe RDMA READ REQUEST (PcapPlusPlus PR #1603 frame): VA 0x7fee260fb000, rkey 0x2b8, 64 KiB.
    name: 'RETH',
    hex: '00007fee260fb000 000002b8 00010000',
    len: RETH_LEN,
    value: { va: 0x7fee260fb000n, rkey: 0x2b8, dmaLength: 65536 },
    parse: parseReth,
    emit: emitReth as Case['emit'],
  },
  {
    name: 'AETH (ACK, credit code 6, MSN 1: Huawei frame 16)',
    hex: '06 000001',
    len: AETH_LEN,
    value: { syndrome: 6, msn: 1 },
    parse: parseAeth,
    emit: emitAeth as Case['emit'],
  },
  {
    name: 'AtomicETH',
    hex: 'ffffffffffff0008 12345678 0000000000000001 8000000000000000',
    len: ATOMIC_ETH_LEN,
    value: { va: 0xffffffffffff0008n, rkey: 0x12345678, swapAdd: 1n, compare: 0x8000000000000000n },
    parse: parseAtomicEth,
    emit: emitAtomicEth as Case['emit'],
  },
  {
    name: 'AtomicAckETH',
    hex: 'fedcba9876543210',
    len: ATOMIC_ACK_ETH_LEN,
    value: { origData: 0xfedcba9876543210n },
    parse: parseAtomicAckEth,
    emit: emitAtomicAckEth as Case['emit'],
  },
  { name: 'ImmDt', hex: 'deadbeef', len: IMMDT_LEN, value: { value: 0xdeadbeef }, parse: parseImmDt, emit: emitImmDt as Case['emit'] },
  { name: 'IETH', hex: '00001234', len: IETH_LEN, value: { rkey: 0x1234 }, parse: parseIeth, emit: emitIeth as Case['emit'] },
  // GSI Q_Key 0x80010000, source QP 1.
  { name: 'DETH', hex: '80010000 00 000001', len: DETH_LEN, value: { qkey: 0x80010000, srcQp: 1 }, parse: parseDeth, emit: emitDeth as Case['emit'] },
  { name: 'XRCETH', hex: '00 00abcd', len: XRCETH_LEN, value: { xrcSrq: 0xabcd }, parse: parseXrcEth, emit: emitXrcEth as Case['emit'] },
  { name: 'RDETH', hex: '00 123456', len: RDETH_LEN, value: { eeContext: 0x123456 }, parse: parseRdEth, emit: emitRdEth as Case['emit'] },
  { name: 'FETH', hex: '00000013', len: FETH_LEN, value: { selectivity: 1, placementType: 3 }, parse: parseFeth, emit: emitFeth as Case['emit'] },
  {
    name: 'UDP (rxe source port 49441 for QPN 0x11, checksum 0)',
    hex: 'c121 12b7 0028 0000',
    len: UDP_LEN,
    value: { srcPort: 0xc121, dstPort: 4791, length: 40, checksum: 0 },
    parse: parseUdp,
    emit: emitUdp as Case['emit'],
  },
  {
    name: 'Ethernet with 802.1Q tag (PCP 3, VID 100)',
    hex: '020000000002 020000000001 8100 6064 0800',
    len: 18,
    value: { dst: 0x020000000002, src: 0x020000000001, vlan: { pcp: 3, dei: 0, vid: 100, tpid: 0x8100 }, etherType: 0x0800 },
    parse: parseEthernet,
    emit: emitEthernet as Case['emit'],
  },
  {
    name: 'Ethernet untagged',
    hex: 'ffffffffffff 7cfe90753cd8 8915',
    len: 14,
    value: { dst: 0xffffffffffff, src: 0x7cfe90753cd8, vlan: null, etherType: 0x8915 },
    parse: parseEthernet,
    emit: emitEthernet as Case['emit'],
  },
];

describe.each(cases)('$name', (c) => {
  const fixture = fromHex(c.hex);

  test('fixture has the header length', () => {
    expect(fixture.length).toBe(c.len);
  });

  test('parse gives the expected fields', () => {
    const buf = new Uint8Array(fixture.length + 5).fill(0xa5);
    buf.set(fixture, 3);
    expect(c.parse(viewOf(buf), 3)).toEqual(c.value);
  });

  test('emit writes every byte of the fixture and returns the length', () => {
    const buf = new Uint8Array(fixture.length + 5).fill(0xa5);
    const n = c.emit(c.value as never, viewOf(buf), 3);
    expect(n).toBe(c.len);
    expect(Array.from(buf.subarray(3, 3 + c.len))).toEqual(Array.from(fixture));
    expect(buf[2]).toBe(0xa5);
    expect(buf[3 + c.len]).toBe(0xa5);
  });

  test('a buffer one byte short is a Truncated WireError at the header offset', () => {
    const buf = new Uint8Array(3 + fixture.length - 1);
    buf.set(fixture.subarray(0, fixture.length - 1), 3);
    let err: unknown;
    try {
      c.parse(viewOf(buf), 3);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe(WireErrorCode.Truncated);
    expect((err as WireError).offset).toBe(3);
  });
});

describe('emitters reject values that do not fit', () => {
  const v = viewOf(new Uint8Array(64));
  test.each([
    [
      'BTH PSN of 25 bits',
      () =>
        emitBth(
          {
            opcode: 4,
            se: false,
            migReq: false,
            padCount: 0,
            tver: 0,
            pkey: 0,
            fecn: false,
            becn: false,
            resv6: 0,
            destQp: 1,
            ackReq: false,
            resv7: 0,
            psn: 1 << 24,
          },
          v,
          0,
        ),
    ],
    [
      'BTH pad count 4',
      () =>
        emitBth(
          {
            opcode: 4,
            se: false,
            migReq: false,
            padCount: 4,
            tver: 0,
            pkey: 0,
            fecn: false,
            becn: false,
            resv6: 0,
            destQp: 1,
            ackReq: false,
            resv7: 0,
            psn: 0,
          },
          v,
          0,
        ),
    ],
    ['RETH VA of 65 bits', () => emitReth({ va: 1n << 64n, rkey: 0, dmaLength: 0 }, v, 0)],
    ['RETH negative rkey', () => emitReth({ va: 0n, rkey: -1, dmaLength: 0 }, v, 0)],
    ['DETH source QP of 25 bits', () => emitDeth({ qkey: 0, srcQp: 0x1000000 }, v, 0)],
    ['AETH MSN 2^24', () => emitAeth({ syndrome: 0, msn: 0x1000000 }, v, 0)],
  ])('%s', (_name, fn) => {
    expect(fn).toThrow(WireError);
    try {
      fn();
    } catch (e) {
      expect((e as WireError).code).toBe(WireErrorCode.BadValue);
    }
  });
});

describe('AETH syndrome', () => {
  test('kinds and values (IBTA table 44)', () => {
    expect(decodeSyndrome(0x1f)).toEqual({ kind: 'ACK', value: 31 });
    expect(decodeSyndrome(0x06)).toEqual({ kind: 'ACK', value: 6 });
    expect(decodeSyndrome(0x2c)).toEqual({ kind: 'RNR_NAK', value: 12 });
    expect(decodeSyndrome(0x60)).toEqual({ kind: 'NAK', value: 0 });
    expect(decodeSyndrome(0x63)).toEqual({ kind: 'NAK', value: 3 });
    expect(decodeSyndrome(0x40)).toEqual({ kind: 'RESERVED', value: 0 });
  });
  test('encode is the inverse of decode for every syndrome with bit 7 clear', () => {
    for (let s = 0; s < 0x80; s++) {
      const d = decodeSyndrome(s);
      expect(encodeSyndrome(d.kind, d.value)).toBe(s);
    }
  });
  test('credit and RNR timer tables', () => {
    expect(CREDIT_TABLE).toHaveLength(31);
    expect(CREDIT_TABLE[6]).toBe(8);
    expect(CREDIT_TABLE[30]).toBe(32768);
    expect(RNR_TIMER_USEC).toHaveLength(32);
    expect(RNR_TIMER_USEC[0]).toBe(655360);
    expect(RNR_TIMER_USEC[12]).toBe(640);
    expect(RNR_TIMER_USEC[25]).toBe(61440);
    expect(describeSyndrome(0x1f)).toBe('ACK credits=unlimited');
    expect(describeSyndrome(0x06)).toBe('ACK credits=8');
    expect(describeSyndrome(0x2c)).toBe('RNR NAK 0.64 ms');
    expect(describeSyndrome(0x60)).toBe('NAK PSN sequence error');
    expect(describeSyndrome(0x62)).toBe('NAK remote access error');
  });
});

describe('IPv4', () => {
  // Huawei frame 16's IPv4 header: ECT(0), DF, TTL 64, UDP, checksum 0x2d60.
  const hex = '45 02 0030 0000 4000 40 11 2d60 c0a84606 c0a84604';
  test('parse and checksum', () => {
    const b = fromHex(hex);
    const h = parseIpv4(viewOf(b), 0);
    expect(h).toMatchObject({
      ihl: 5,
      dscp: 0,
      ecn: 2,
      totalLength: 48,
      dontFragment: true,
      ttl: 64,
      protocol: 17,
      checksum: 0x2d60,
      src: 0xc0a84606,
      dst: 0xc0a84604,
    });
    expect(ipv4ChecksumOk(viewOf(b), 0, 5)).toBe(true);
    b[8] = 63;
    expect(ipv4ChecksumOk(viewOf(b), 0, 5)).toBe(false);
  });
  test('emit computes the checksum', () => {
    const h = parseIpv4(viewOf(fromHex(hex)), 0);
    const out = new Uint8Array(20).fill(0xa5);
    emitIpv4({ ...h, checksum: 0 }, viewOf(out), 0);
    expect(Array.from(out)).toEqual(Array.from(fromHex(hex)));
  });
  test('bad version, IHL and total length are typed errors', () => {
    const b = fromHex(hex);
    b[0] = 0x55;
    expect(() => parseIpv4(viewOf(b), 0)).toThrow(/version 5/);
    b[0] = 0x44;
    expect(() => parseIpv4(viewOf(b), 0)).toThrow(/IHL 4/);
    b[0] = 0x45;
    b[2] = 0;
    b[3] = 10;
    expect(() => parseIpv4(viewOf(b), 0)).toThrow(WireError);
  });
});

describe('IPv6 and GRH', () => {
  // RoCE v1 ACK GRH (scapy roce.uts): TClass 2, next header 0x1b, hop limit 64, ::ffff:15.0.0.2 both ways.
  const grh = '60200000 0014 1b 40 00000000000000000000ffff0f000002 00000000000000000000ffff0f000002';
  test('GRH parse', () => {
    const h = parseGrh(viewOf(fromHex(grh)), 0);
    expect(h.trafficClass).toBe(2);
    expect(h.flowLabel).toBe(0);
    expect(h.payloadLength).toBe(20);
    expect(h.nextHeader).toBe(0x1b);
    expect(h.hopLimit).toBe(64);
  });
  test('GRH with another next header is refused', () => {
    const b = fromHex(grh);
    b[6] = 17;
    expect(() => parseGrh(viewOf(b), 0)).toThrow(/next header/);
  });
  test('IPv6 emit/parse', () => {
    const b = fromHex(grh);
    const h = parseIpv6(viewOf(b), 0);
    const out = new Uint8Array(40).fill(0xa5);
    emitIpv6({ ...h, flowLabel: 0xabcde, trafficClass: 0xe1 }, viewOf(out), 0);
    expect(parseIpv6(viewOf(out), 0)).toMatchObject({ flowLabel: 0xabcde, trafficClass: 0xe1, payloadLength: 20, nextHeader: 0x1b });
  });
});

describe('CNP reserved field', () => {
  test('16 zero bytes round trip', () => {
    const buf = new Uint8Array(20).fill(0xa5);
    expect(emitCnpReserved(null, viewOf(buf), 2)).toBe(CNP_RESERVED_LEN);
    expect(Array.from(parseCnpReserved(viewOf(buf), 2).reserved)).toEqual(new Array(16).fill(0));
    expect(buf[18]).toBe(0xa5);
  });
});
