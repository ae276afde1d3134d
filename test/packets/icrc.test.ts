import * as fs from 'node:fs';
import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { crc32, crc32Step4, crc32Update, crc32UpdateFast, crc32UpdateZlib, wordLE, ZLIB_MIN_LEN } from '../../packets/crc32';
import { WireError, WireErrorCode } from '../../packets/errors';
import { ICRC_SEED_STATE, icrcV1, icrcV2, readIcrc, sealIcrcV2, verifyIcrcV1, verifyIcrcV2, writeIcrc } from '../../packets/icrc';
import { noPublicCaptures, publicCapture, testUnless } from '../support/skip';

// ---------------------------------------------------------------------------------------------
// Independent oracle: literally build 8×0xFF ‖ masked copy and run zlib.crc32 over it.

function naiveIcrc(frame: Uint8Array, l3Off: number, end: number, kind: 'v2' | 'v1'): number {
  const copy = Buffer.concat([Buffer.alloc(8, 0xff), Buffer.from(frame.subarray(l3Off, end))]);
  const ip = 8;
  let bth: number;
  const version = copy[ip]! >> 4;
  if (kind === 'v1' || version === 6) {
    copy[ip] = copy[ip]! | 0x0f; // traffic class (high nibble)
    copy.fill(0xff, ip + 1, ip + 4); // traffic class (low nibble) + flow label
    copy[ip + 7] = 0xff; // hop limit
    bth = ip + 40;
  } else {
    const ihl = (copy[ip]! & 0x0f) * 4;
    copy[ip + 1] = 0xff; // TOS
    copy[ip + 8] = 0xff; // TTL
    copy.fill(0xff, ip + 10, ip + 12); // header checksum
    bth = ip + ihl;
  }
  if (kind === 'v2') {
    copy.fill(0xff, bth + 6, bth + 8); // UDP checksum
    bth += 8;
  }
  copy[bth + 4] = 0xff; // FECN, BECN, resv6a
  return zlib.crc32(copy);
}

// ---------------------------------------------------------------------------------------------
// Tiny classic-pcap walker (kept local so this test does not depend on packets/pcap.ts).

function pcapRecords(file: string): Uint8Array[] {
  const b = fs.readFileSync(file);
  expect(b.readUInt32LE(0)).toBe(0xa1b2c3d4); // little-endian, microsecond timestamps
  expect(b.readUInt32LE(20)).toBe(1); // LINKTYPE_ETHERNET
  const out: Uint8Array[] = [];
  let o = 24;
  while (o + 16 <= b.length) {
    const incl = b.readUInt32LE(o + 8);
    out.push(b.subarray(o + 16, o + 16 + incl));
    o += 16 + incl;
  }
  expect(o).toBe(b.length);
  return out;
}

interface RoceFrame {
  kind: 'v2' | 'v1';
  off: number; // IP header or GRH
  end: number; // ICRC field
}

/** Classifies an Ethernet frame as RoCE v2 (UDP dport 4791) or RoCE v1 (0x8915); ends come from the IP/GRH lengths. */
function classify(f: Uint8Array): RoceFrame | null {
  const b = Buffer.from(f.buffer, f.byteOffset, f.length);
  const type = b.readUInt16BE(12);
  const ip = 14;
  if (type === 0x0800) {
    if (b[ip + 9] !== 17) return null;
    const ihl = (b[ip]! & 15) * 4;
    if (b.readUInt16BE(ip + ihl + 2) !== 4791) return null;
    return { kind: 'v2', off: ip, end: ip + b.readUInt16BE(ip + 2) - 4 };
  }
  if (type === 0x86dd) {
    if (b[ip + 6] !== 17 || b.readUInt16BE(ip + 40 + 2) !== 4791) return null;
    return { kind: 'v2', off: ip, end: ip + 40 + b.readUInt16BE(ip + 4) - 4 };
  }
  if (type === 0x8915) return { kind: 'v1', off: ip, end: ip + 40 + b.readUInt16BE(ip + 4) - 4 };
  return null;
}

/** Verification, counting a WireError (a flipped IP version / IHL bit) as a failure. */
function verify(f: Uint8Array, r: RoceFrame): boolean {
  try {
    return r.kind === 'v2' ? verifyIcrcV2(f, r.off, r.end) : verifyIcrcV1(f, r.off, r.end);
  } catch (e) {
    if (e instanceof WireError) return false;
    throw e;
  }
}

const captures: Array<[string, number, 'v2' | 'v1']> = [
  ['huawei-hiroce-proxy/roce.pcap', 105, 'v2'],
  ['scapy-roce-uts/cnp_connectx4lx.pcap', 1, 'v2'],
  ['pcpp-pr1603-rxe/rc_read_request_vmware.pcap', 1, 'v2'],
  ['scapy-roce-uts/rocev1_rc_rdma_write_only.pcap', 1, 'v1'],
  ['scapy-roce-uts/rocev1_rc_ack.pcap', 1, 'v1'],
];

const withCaptures = testUnless(noPublicCaptures);

describe('ICRC over real captures', () => {
  for (const [rel, count, kind] of captures) {
    withCaptures(`${rel}: all ${count} RoCE ${kind} frames verify`, () => {
      const frames = pcapRecords(publicCapture(rel));
      let n = 0;
      for (const f of frames) {
        const r = classify(f);
        if (r === null) continue;
        expect(r.kind).toBe(kind);
        const copy = Uint8Array.from(f);
        expect(verify(f, r)).toBe(true);
        expect(Buffer.compare(copy, f)).toBe(0); // frame not modified
        const value = r.kind === 'v2' ? icrcV2(f, r.off, r.end) : icrcV1(f, r.off, r.end);
        expect(value).toBe(naiveIcrc(f, r.off, r.end, r.kind));
        expect(value).toBe(readIcrc(f, r.end));
        n++;
      }
      expect(n).toBe(count);
    });
  }

  withCaptures('huawei frames: UDP source ports are 69/72 and ECN is ECT(0)', () => {
    const sports = new Set<number>();
    for (const f of pcapRecords(publicCapture('huawei-hiroce-proxy/roce.pcap'))) {
      const r = classify(f);
      if (r === null) continue;
      sports.add((f[34]! << 8) | f[35]!);
      expect(f[15]! & 3).toBe(2); // ECT(0): the ECN bits are masked, yet set on the wire
    }
    expect([...sports].sort((a, b) => a - b)).toEqual([69, 72]);
  });

  withCaptures('flipping any non-masked bit of a captured frame breaks verification (v2 and v1)', () => {
    const cases: Array<[string, Set<number>]> = [
      // IPv4 at 14: TOS 15, TTL 22, checksum 24-25; UDP checksum 40-41; BTH byte 4 at 46.
      ['pcpp-pr1603-rxe/rc_read_request_vmware.pcap', new Set([15, 22, 24, 25, 40, 41, 46])],
      // GRH at 14: bytes 15-17 + low nibble of 14, hop limit 21; BTH byte 4 at 58.
      ['scapy-roce-uts/rocev1_rc_ack.pcap', new Set([15, 16, 17, 21, 58])],
    ];
    for (const [rel, masked] of cases) {
      const f = Uint8Array.from(pcapRecords(publicCapture(rel))[0]!);
      const r = classify(f)!;
      for (let i = r.off; i < r.end + 4; i++) {
        for (let bit = 0; bit < 8; bit++) {
          if (masked.has(i) || (r.kind === 'v1' && i === r.off && bit < 4)) continue;
          f[i] = f[i]! ^ (1 << bit);
          expect(verify(f, r)).toBe(false);
          f[i] = f[i]! ^ (1 << bit);
        }
      }
      for (const i of masked) {
        for (const v of [0, 0x55, 0xff]) {
          const g = Uint8Array.from(f);
          g[i] = v;
          expect(verify(g, r)).toBe(true);
        }
      }
      expect(verify(f, r)).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Frames built by hand.

interface Fields {
  tos: number; // IPv4 TOS or IPv6 traffic class
  ttl: number; // or hop limit
  flow: number; // IPv6 flow label
  ipChecksum: number;
  udpChecksum: number;
  sport: number;
  bthByte4: number;
  opcode: number;
  qpn: number;
  psn: number;
  optionWords: number; // IPv4 options, 0..10 words
}

const defaults: Fields = {
  tos: 0x02,
  ttl: 64,
  flow: 0x12345,
  ipChecksum: 0xbeef,
  udpChecksum: 0,
  sport: 0xc123,
  bthByte4: 0,
  opcode: 0x04,
  qpn: 0x000011,
  psn: 0x123456,
  optionWords: 0,
};

/** Ethernet ‖ IPv4 or IPv6 ‖ UDP ‖ BTH ‖ payload ‖ ICRC (zero), placed at byteOffset `lead` of a larger buffer. */
function buildV2(ipv: 4 | 6, payload: Uint8Array, fields: Fields = defaults, lead = 0): { frame: Uint8Array; ipOff: number; end: number } {
  const ipLen = ipv === 4 ? 20 + fields.optionWords * 4 : 40;
  const ipOff = 14;
  const udp = ipOff + ipLen;
  const bth = udp + 8;
  const end = bth + 12 + payload.length;
  const backing = Buffer.alloc(lead + end + 4 + 3, 0xa5);
  const frame = backing.subarray(lead, lead + end + 4);
  frame.fill(0);
  frame.writeUInt16BE(ipv === 4 ? 0x0800 : 0x86dd, 12);
  if (ipv === 4) {
    frame[ipOff] = 0x40 | (5 + fields.optionWords);
    frame[ipOff + 1] = fields.tos;
    frame.writeUInt16BE(end + 4 - ipOff, ipOff + 2);
    frame.writeUInt16BE(0x4000, ipOff + 6);
    frame[ipOff + 8] = fields.ttl;
    frame[ipOff + 9] = 17;
    frame.writeUInt16BE(fields.ipChecksum, ipOff + 10);
    frame.writeUInt32BE(0x0a000001, ipOff + 12);
    frame.writeUInt32BE(0x0a000002, ipOff + 16);
    for (let i = 0; i < fields.optionWords * 4; i++) frame[ipOff + 20 + i] = (i * 37 + 1) & 0xff;
  } else {
    frame.writeUInt32BE(((6 << 28) | ((fields.tos & 0xff) << 20) | (fields.flow & 0xfffff)) >>> 0, ipOff);
    frame.writeUInt16BE(end + 4 - udp, ipOff + 4);
    frame[ipOff + 6] = 17;
    frame[ipOff + 7] = fields.ttl;
    for (let i = 0; i < 32; i++) frame[ipOff + 8 + i] = (0xfe + i * 11) & 0xff;
  }
  frame.writeUInt16BE(fields.sport, udp);
  frame.writeUInt16BE(4791, udp + 2);
  frame.writeUInt16BE(end + 4 - udp, udp + 4);
  frame.writeUInt16BE(fields.udpChecksum, udp + 6);
  frame[bth] = fields.opcode;
  frame[bth + 1] = 0x40;
  frame.writeUInt16BE(0xffff, bth + 2);
  frame[bth + 4] = fields.bthByte4;
  frame.writeUIntBE(fields.qpn, bth + 5, 3);
  frame.writeUIntBE(fields.psn, bth + 9, 3);
  frame.set(payload, bth + 12);
  return { frame, ipOff, end };
}

function pattern(n: number): Uint8Array {
  const p = new Uint8Array(n);
  for (let i = 0; i < n; i++) p[i] = (i * 131 + 7) & 0xff;
  return p;
}

describe('ICRC building blocks', () => {
  test('seed 0xdebb20e3 is the CRC state after 8 bytes of 0xFF', () => {
    const ff = new Uint8Array(8).fill(0xff);
    expect(crc32Update(0xffffffff, ff, 0, 8)).toBe(ICRC_SEED_STATE);
    expect(~zlib.crc32(ff) >>> 0).toBe(ICRC_SEED_STATE);
    // Starting from the seed equals feeding 8×0xFF first, for any continuation.
    const rest = pattern(100);
    const both = new Uint8Array(108).fill(0xff);
    both.set(rest, 8);
    expect(crc32Update(ICRC_SEED_STATE, rest, 0, 100)).toBe(crc32Update(0xffffffff, both, 0, 108));
  });

  test('crc32Step4 over a little-endian word equals 4 bytes of table walk', () => {
    const b = pattern(4);
    expect(crc32Step4(0x12345678, wordLE(b, 0)) >>> 0).toBe(crc32Update(0x12345678, b, 0, 4));
  });

  test('every CRC routine equals zlib.crc32 at every length 0..600 and around the threshold', () => {
    const buf = Buffer.from(pattern(700));
    for (let n = 0; n <= 600; n++) {
      const want = zlib.crc32(buf.subarray(50, 50 + n));
      expect(crc32(buf, 0, 50, 50 + n)).toBe(want);
      expect(~crc32Update(0xffffffff, buf, 50, 50 + n) >>> 0).toBe(want);
      expect(~crc32UpdateZlib(0xffffffff, buf, 50, 50 + n) >>> 0).toBe(want);
      expect(~crc32UpdateFast(0xffffffff, buf, 50, 50 + n) >>> 0).toBe(want);
    }
    expect(ZLIB_MIN_LEN).toBeGreaterThan(0);
  });

  test('crc32 wrapper matches zlib.crc32 for random buffers, offsets and continuation values', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5000 }), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 0xffffffff }), (data, a, b, value) => {
        const lo = data.length === 0 ? 0 : a % (data.length + 1);
        const hi = lo + (data.length === 0 ? 0 : b % (data.length - lo + 1));
        // zlib.crc32 returns 0 (not `value`) for an empty view over a zero-length ArrayBuffer.
        const want = hi === lo ? value : zlib.crc32(data.subarray(lo, hi), value);
        expect(crc32(data, value, lo, hi)).toBe(want);
        expect(~crc32Update(~value >>> 0, data, lo, hi) >>> 0).toBe(want);
      }),
      { numRuns: 300 },
    );
  });
});

describe('ICRC on hand-built frames', () => {
  test('RoCE v2 over IPv6: writeIcrc then verify, value equals the naive oracle', () => {
    const { frame, ipOff, end } = buildV2(6, pattern(1024));
    const value = icrcV2(frame, ipOff, end);
    expect(value).toBe(naiveIcrc(frame, ipOff, end, 'v2'));
    expect(verifyIcrcV2(frame, ipOff, end)).toBe(false);
    writeIcrc(frame, end, value);
    expect(verifyIcrcV2(frame, ipOff, end)).toBe(true);
    // Least-significant byte first.
    expect(frame[end]).toBe(value & 0xff);
    expect(frame[end + 3]).toBe(value >>> 24);
    expect(readIcrc(frame, end)).toBe(value);
    expect(sealIcrcV2(frame, ipOff, end)).toBe(value);
  });

  test.each([4, 6] as const)('IPv%i: masked fields do not change the ICRC, any other bit does', (ipv) => {
    const { frame, ipOff, end } = buildV2(ipv, pattern(37), { ...defaults, optionWords: 2 });
    sealIcrcV2(frame, ipOff, end);
    const base = Uint8Array.from(frame);
    const variants: Array<Partial<Fields>> = [
      { tos: 0xff },
      { tos: 0x03 }, // ECN CE
      { ttl: 1 },
      { ttl: 255 },
      { ipChecksum: 0x1234 },
      { udpChecksum: 0xffff },
      { bthByte4: 0x80 }, // FECN
      { bthByte4: 0x40 }, // BECN
      { bthByte4: 0x10 }, // reserved bit set (Huawei)
      { flow: 0xfffff },
      { flow: 0 },
    ];
    for (const v of variants) {
      const { frame: g } = buildV2(ipv, pattern(37), { ...defaults, optionWords: 2, ...v });
      writeIcrc(g, end, readIcrc(frame, end));
      expect(verifyIcrcV2(g, ipOff, end)).toBe(true);
    }
    const udp = ipOff + (ipv === 4 ? 28 : 40);
    const masked = (i: number, bit: number): boolean => {
      const r = i - ipOff;
      if (ipv === 4 && (r === 1 || r === 8 || r === 10 || r === 11)) return true;
      if (ipv === 6 && ((r === 0 && bit < 4) || r === 1 || r === 2 || r === 3 || r === 7)) return true;
      return i === udp + 6 || i === udp + 7 || i === udp + 8 + 4;
    };
    for (let i = ipOff; i < end + 4; i++) {
      for (let bit = 0; bit < 8; bit++) {
        if (masked(i, bit)) continue;
        frame[i] = frame[i]! ^ (1 << bit);
        expect(verify(frame, { kind: 'v2', off: ipOff, end })).toBe(false);
        frame[i] = frame[i]! ^ (1 << bit);
      }
    }
    expect(Buffer.compare(frame, base)).toBe(0);
  });

  test('RoCE v1: icrcV1 equals the naive oracle with GRH masks', () => {
    const { frame, end } = buildV2(6, pattern(300));
    // Reuse the IPv6 header as a GRH and drop the UDP header: BTH follows the GRH.
    const v1 = Buffer.concat([frame.subarray(0, 54), frame.subarray(62)]);
    v1.writeUInt16BE(0x8915, 12);
    const v1end = end - 8;
    const value = icrcV1(v1, 14, v1end);
    expect(value).toBe(naiveIcrc(v1, 14, v1end, 'v1'));
    writeIcrc(v1, v1end, value);
    expect(verifyIcrcV1(v1, 14, v1end)).toBe(true);
  });

  test('differential: icrcV2 equals the naive oracle for random headers and payloads (IPv4, IPv6)', () => {
    const fields = fc.record({
      tos: fc.integer({ min: 0, max: 255 }),
      ttl: fc.integer({ min: 0, max: 255 }),
      flow: fc.integer({ min: 0, max: 0xfffff }),
      ipChecksum: fc.integer({ min: 0, max: 0xffff }),
      udpChecksum: fc.integer({ min: 0, max: 0xffff }),
      sport: fc.integer({ min: 0, max: 0xffff }),
      bthByte4: fc.integer({ min: 0, max: 255 }),
      opcode: fc.integer({ min: 0, max: 255 }),
      qpn: fc.integer({ min: 0, max: 0xffffff }),
      psn: fc.integer({ min: 0, max: 0xffffff }),
      optionWords: fc.integer({ min: 0, max: 10 }),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(4 as const, 6 as const),
        fc.uint8Array({ maxLength: 4200 }),
        fields,
        fc.integer({ min: 0, max: 7 }),
        (ipv, payload, f, lead) => {
          const { frame, ipOff, end } = buildV2(ipv, payload, f, lead);
          const copy = Uint8Array.from(frame);
          const value = icrcV2(frame, ipOff, end);
          expect(value).toBe(naiveIcrc(frame, ipOff, end, 'v2'));
          expect(Buffer.compare(frame, copy)).toBe(0);
          writeIcrc(frame, end, value);
          expect(verifyIcrcV2(frame, ipOff, end)).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe('ICRC bounds', () => {
  function code(fn: () => unknown): { code: string; offset: number } {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(WireError);
      const w = e as WireError;
      return { code: w.code, offset: w.offset };
    }
    throw new Error('did not throw');
  }

  test('end beyond the frame, headers not fitting, bad offsets, bad version/IHL', () => {
    const { frame, ipOff, end } = buildV2(4, pattern(10));
    expect(code(() => icrcV2(frame, ipOff, frame.length + 1))).toEqual({ code: WireErrorCode.Truncated, offset: frame.length });
    // IPv4 (20) + UDP (8) + BTH (12) = 40 bytes must fit before end.
    expect(code(() => icrcV2(frame, ipOff, ipOff + 39))).toEqual({ code: WireErrorCode.Truncated, offset: ipOff });
    expect(icrcV2(frame, ipOff, ipOff + 40)).toBe(naiveIcrc(frame, ipOff, ipOff + 40, 'v2'));
    expect(code(() => icrcV2(frame, -1, end)).code).toBe(WireErrorCode.BadLength);
    expect(code(() => icrcV2(frame, 1.5, end)).code).toBe(WireErrorCode.BadLength);
    expect(code(() => icrcV2(frame, ipOff, Number.NaN)).code).toBe(WireErrorCode.BadLength);
    expect(code(() => icrcV2(frame, end, end))).toEqual({ code: WireErrorCode.Truncated, offset: end });
    // Verification needs the 4-byte ICRC field itself.
    expect(code(() => verifyIcrcV2(frame, ipOff, frame.length - 3))).toEqual({
      code: WireErrorCode.Truncated,
      offset: frame.length - 3,
    });
    const g = Uint8Array.from(frame);
    g[ipOff] = 0x55;
    expect(code(() => icrcV2(g, ipOff, end))).toEqual({ code: WireErrorCode.BadField, offset: ipOff });
    g[ipOff] = 0x44;
    expect(code(() => icrcV2(g, ipOff, end))).toEqual({ code: WireErrorCode.BadField, offset: ipOff });
    g[ipOff] = 0x4f; // IHL 15 = 60 bytes: headers no longer fit
    expect(code(() => icrcV2(g, ipOff, end)).code).toBe(WireErrorCode.Truncated);
    const six = buildV2(6, pattern(0));
    expect(code(() => icrcV2(six.frame, six.ipOff, six.end - 1)).code).toBe(WireErrorCode.Truncated);
    expect(code(() => icrcV1(six.frame, 14, 14 + 51)).code).toBe(WireErrorCode.Truncated);
    expect(code(() => writeIcrc(six.frame, six.frame.length - 2, 0)).code).toBe(WireErrorCode.Truncated);
  });
});
