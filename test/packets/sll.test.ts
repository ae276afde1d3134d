import fc from 'fast-check';
import { WireError, WireErrorCode } from '../../packets/errors';
import { OFF as OFF1, SLL_LEN, emitSll, parseSll, type SllHeader } from '../../packets/sll';
import { OFF as OFF2, SLL2_LEN, emitSll2, parseSll2, type Sll2Header } from '../../packets/sll2';

function hex(s: string): Uint8Array {
  return Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
}

function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

describe('SLL (LINKTYPE_LINUX_SLL)', () => {
  // Outgoing (4), ARPHRD_ETHER (1), 6-byte MAC padded to 8, EtherType IPv4.
  const fixture = hex('0004 0001 0006 02 42 ac 11 00 02 00 00 0800');

  test('parses a fixed byte fixture', () => {
    expect(fixture.length).toBe(SLL_LEN);
    const h = parseSll(viewOf(fixture), 0, fixture.length);
    expect(h).toEqual({
      packetType: 4,
      arphrdType: 1,
      addrLen: 6,
      addr: hex('0242ac1100020000'),
      protocol: 0x0800,
    });
    expect(OFF1.PROTOCOL).toBe(14);
    expect(Object.isFrozen(OFF1)).toBe(true);
  });

  test('parses at an offset inside a larger buffer and copies the address', () => {
    const buf = new Uint8Array(40);
    buf.set(fixture, 10);
    const v = new DataView(buf.buffer, 3, 37);
    const h = parseSll(v, 7, 37);
    expect(h.protocol).toBe(0x0800);
    buf[10 + OFF1.ADDR] = 0xff;
    expect(h.addr[0]).toBe(0x02);
  });

  test('emit → parse round trip and emit reproduces the fixture', () => {
    const out = new Uint8Array(SLL_LEN + 4);
    const h = parseSll(viewOf(fixture), 0, SLL_LEN);
    expect(emitSll(h, viewOf(out), 4)).toBe(SLL_LEN);
    expect(Buffer.from(out.subarray(4)).equals(Buffer.from(fixture))).toBe(true);
    fc.assert(
      fc.property(
        fc.record({
          packetType: fc.integer({ min: 0, max: 0xffff }),
          arphrdType: fc.integer({ min: 0, max: 0xffff }),
          addrLen: fc.integer({ min: 0, max: 0xffff }),
          addr: fc.uint8Array({ minLength: 8, maxLength: 8 }),
          protocol: fc.integer({ min: 0, max: 0xffff }),
        }),
        (hdr: SllHeader) => {
          const b = new Uint8Array(SLL_LEN);
          emitSll(hdr, viewOf(b), 0);
          expect(parseSll(viewOf(b), 0, SLL_LEN)).toEqual(hdr);
        },
      ),
    );
  });

  test('short addresses are zero-padded', () => {
    const b = new Uint8Array(SLL_LEN).fill(0xee);
    emitSll({ packetType: 0, arphrdType: 1, addrLen: 2, addr: Uint8Array.of(1, 2), protocol: 0x86dd }, viewOf(b), 0);
    expect(Array.from(b.subarray(OFF1.ADDR, OFF1.ADDR + 8))).toEqual([1, 2, 0, 0, 0, 0, 0, 0]);
  });

  test('truncated input throws Truncated with the offset; bad values throw BadValue', () => {
    for (let len = 0; len < SLL_LEN; len++) {
      let err: unknown;
      try {
        parseSll(viewOf(fixture), 0, len);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(WireError);
      expect((err as WireError).code).toBe(WireErrorCode.Truncated);
      expect((err as WireError).offset).toBe(0);
    }
    const h = parseSll(viewOf(fixture), 0, SLL_LEN);
    const b = viewOf(new Uint8Array(SLL_LEN));
    expect(() => emitSll({ ...h, protocol: 0x10000 }, b, 0)).toThrow(WireError);
    expect(() => emitSll({ ...h, addr: new Uint8Array(9) }, b, 0)).toThrow(WireError);
    expect(() => emitSll(h, b, 1)).toThrow(WireError);
  });
});

describe('SLL2 (LINKTYPE_LINUX_SLL2)', () => {
  // EtherType IPv6, reserved 0, ifindex 3, ARPHRD_ETHER, packet type Host (0), 6-byte MAC.
  const fixture = hex('86dd 0000 00000003 0001 00 06 b8 ce f6 01 02 03 00 00');

  test('parses a fixed byte fixture', () => {
    expect(fixture.length).toBe(SLL2_LEN);
    expect(parseSll2(viewOf(fixture), 0, SLL2_LEN)).toEqual({
      protocol: 0x86dd,
      reserved: 0,
      ifIndex: 3,
      arphrdType: 1,
      packetType: 0,
      addrLen: 6,
      addr: hex('b8cef60102030000'),
    });
    expect(OFF2.ADDR).toBe(12);
    expect(Object.isFrozen(OFF2)).toBe(true);
  });

  test('emit → parse round trip and emit reproduces the fixture', () => {
    const out = new Uint8Array(SLL2_LEN);
    expect(emitSll2(parseSll2(viewOf(fixture), 0, SLL2_LEN), viewOf(out), 0)).toBe(SLL2_LEN);
    expect(Buffer.from(out).equals(Buffer.from(fixture))).toBe(true);
    fc.assert(
      fc.property(
        fc.record({
          protocol: fc.integer({ min: 0, max: 0xffff }),
          reserved: fc.integer({ min: 0, max: 0xffff }),
          ifIndex: fc.integer({ min: 0, max: 0xffffffff }),
          arphrdType: fc.integer({ min: 0, max: 0xffff }),
          packetType: fc.integer({ min: 0, max: 0xff }),
          addrLen: fc.integer({ min: 0, max: 0xff }),
          addr: fc.uint8Array({ minLength: 8, maxLength: 8 }),
        }),
        (hdr: Sll2Header) => {
          const b = new Uint8Array(SLL2_LEN + 3);
          emitSll2(hdr, viewOf(b), 3);
          expect(parseSll2(viewOf(b), 3, b.length)).toEqual(hdr);
        },
      ),
    );
  });

  test('truncated input throws Truncated with the offset; bad values throw BadValue', () => {
    const buf = new Uint8Array(SLL2_LEN + 5);
    buf.set(fixture, 5);
    for (let end = 5; end < 5 + SLL2_LEN; end++) {
      try {
        parseSll2(viewOf(buf), 5, end);
        throw new Error('no error');
      } catch (e) {
        expect(e).toBeInstanceOf(WireError);
        expect((e as WireError).code).toBe(WireErrorCode.Truncated);
        expect((e as WireError).offset).toBe(5);
      }
    }
    const h = parseSll2(viewOf(fixture), 0, SLL2_LEN);
    const b = viewOf(new Uint8Array(SLL2_LEN));
    for (const bad of [{ ifIndex: 2 ** 32 }, { packetType: 256 }, { addrLen: -1 }, { protocol: 1.5 }]) {
      try {
        emitSll2({ ...h, ...bad }, b, 0);
        throw new Error('no error');
      } catch (e) {
        expect((e as WireError).code).toBe(WireErrorCode.BadValue);
      }
    }
  });
});
