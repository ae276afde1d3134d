/** perftest's out-of-band messages, byte for byte (linux-rdma/perftest src/perftest_communication.{c,h}). */
import {
  KEY_MSG_SIZE,
  KEY_MSG_SIZE_DV,
  KEY_MSG_SIZE_GID,
  KEY_MSG_SIZE_GID_DV,
  PERFTEST_VERSION,
  type BwReport,
  type PerftestDest,
  bwReportLayout,
  checkBwReport,
  checkPeerVersion,
  decodeBwReportField,
  decodeInt32BE,
  decodeKeyMessage,
  decodeMtu,
  decodeVersion,
  emptyBwReport,
  encodeBwReportField,
  encodeInt32BE,
  encodeKeyMessage,
  encodeMtu,
  encodeVersion,
  keyMessageSize,
  mtuMessageSize,
} from '../../apps/oob/perftest-messages';
import { OobError } from '../../apps/oob/tcp-channel';
import { ipv6FromString } from '../../packets/bytes';

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** printf("%0Nx") written independently of the code under test. */
const x = (v: number | bigint, w: number): string => v.toString(16).padStart(w, '0');

function oobErr(f: () => unknown): OobError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(OobError);
    return e as OobError;
  }
  throw new Error('expected an OobError');
}

test('version: 16 bytes, the text NUL-padded (strncpy into char version[16])', () => {
  const b = encodeVersion('6.06');
  expect(b.length).toBe(16);
  expect(hex(b)).toBe(`362e3036${'00'.repeat(12)}`);
  expect(decodeVersion(b)).toEqual({ text: '6.06', value: 6.06 });
  expect(decodeVersion(encodeVersion('6.29'))).toEqual({ text: '6.29', value: 6.29 });
  expect(Number(PERFTEST_VERSION)).toBeGreaterThanOrEqual(5.7);
  expect(Number(PERFTEST_VERSION)).toBeLessThan(6.28); // no negotiate_params
});

test('version errors name the field', () => {
  expect(oobErr(() => decodeVersion(ascii('garbage'.padEnd(16, '\0')))).field).toBe('version');
  expect(oobErr(() => decodeVersion(new Uint8Array(8))).message).toMatch(/must be 16 bytes, got 8/);
  const old = oobErr(() => checkPeerVersion(decodeVersion(encodeVersion('5.60'))));
  expect(old.code).toBe('ROCE_ERR_OOB_INCOMPATIBLE');
  expect(old.message).toMatch(/older than 5.70/);
  expect(() => checkPeerVersion(decodeVersion(encodeVersion('5.70')))).not.toThrow();
});

test('system data: 4-byte big-endian ints, as seen on the wire (00001000, 00000040)', () => {
  expect(hex(encodeInt32BE(4096))).toBe('00001000');
  expect(hex(encodeInt32BE(64))).toBe('00000040');
  expect(decodeInt32BE(Uint8Array.of(0, 0, 0x10, 0), 'cycle_buffer')).toBe(4096);
  const e = oobErr(() => decodeInt32BE(Uint8Array.of(0xff, 0xff, 0xff, 0xff), 'cache_line_size'));
  expect(e.field).toBe('cache_line_size');
  expect(e.message).toMatch(/positive/);
  expect(oobErr(() => decodeInt32BE(Uint8Array.of(1, 2), 'cycle_buffer')).message).toMatch(/4 bytes, got 2/);
});

test('MTU: "%d" of the ibv_mtu enum, 2 bytes for peers from 5.31 on (bytes 33 00 for 1024), else 4', () => {
  expect(hex(encodeMtu(3))).toBe('3300');
  expect(hex(encodeMtu(5, 4))).toBe('35000000');
  expect(mtuMessageSize(6.06)).toBe(2);
  expect(mtuMessageSize(5.3)).toBe(4);
  expect(decodeMtu(Uint8Array.of(0x33, 0))).toBe(3);
  expect(decodeMtu(Uint8Array.of(0x35, 0, 0xaa, 0xbb))).toBe(5);
  expect(oobErr(() => decodeMtu(Uint8Array.of(0x39, 0))).message).toMatch(/field mtu must be an ibv_mtu from 1 \(256\) to 5 \(4096\), got 9/);
  expect(oobErr(() => decodeMtu(Uint8Array.of(0x41, 0))).field).toBe('mtu');
});

describe('key message', () => {
  const gid = ipv6FromString('::ffff:198.18.0.1');
  const d: PerftestDest = {
    lid: 0,
    outReads: 0x80,
    qpn: 0x11,
    psn: 0xabcdef,
    rkey: 0x136,
    vaddr: 0x7f0000001000n,
    tailMarkersVaddr: 0x7f0000009040n,
    gid,
    srqn: 0,
  };
  const gidText = Array.from(gid, (b) => `${x(b, 2)}:`).join('');
  const head = `${x(0, 4)}:${x(0x80, 4)}:${x(0x11, 6)}:${x(0xabcdef, 6)}:${x(0x136, 8)}:${x(0x7f0000001000n, 16)}:`;
  const dv = `${x(0x7f0000009040n, 16)}:`;

  test.each([
    ['KEY_PRINT_FMT_GID', { gid: true, dataValidation: false }, `${head}${gidText}${x(0, 8)}:`, KEY_MSG_SIZE_GID, 108],
    ['KEY_PRINT_FMT', { gid: false, dataValidation: false }, `${head}${x(0, 8)}`, KEY_MSG_SIZE, 59],
    ['KEY_PRINT_FMT_GID_DV', { gid: true, dataValidation: true }, `${head}${dv}${gidText}${x(0, 8)}:`, KEY_MSG_SIZE_GID_DV, 125],
    ['KEY_PRINT_FMT_DV', { gid: false, dataValidation: true }, `${head}${dv}${x(0, 8)}`, KEY_MSG_SIZE_DV, 76],
  ])('%s: the text and its NUL, %#', (_n, fmt, text, constant, size) => {
    expect(constant).toBe(size);
    expect(keyMessageSize(fmt)).toBe(size);
    const b = encodeKeyMessage(fmt.gid ? d : { ...d, gid: null }, fmt);
    expect(b.length).toBe(size);
    expect(Buffer.from(b).toString('latin1')).toBe(`${text}\0`);
    const back = decodeKeyMessage(b, fmt);
    expect(back).toEqual({ ...d, gid: fmt.gid ? gid : null, tailMarkersVaddr: fmt.dataValidation ? d.tailMarkersVaddr : 0n });
  });

  test('a 108-byte message from a real peer (rxe, QPN 0x11) decodes', () => {
    const wire = `0000:0001:000011:2f1a9c:00000216:00005586b2c1f000:${'00:'.repeat(10)}ff:ff:c6:12:00:02:00000000:\0`;
    expect(wire.length).toBe(108);
    const r = decodeKeyMessage(ascii(wire), { gid: true, dataValidation: false });
    expect(r).toMatchObject({ lid: 0, outReads: 1, qpn: 0x11, psn: 0x2f1a9c, rkey: 0x216, vaddr: 0x5586b2c1f000n, srqn: 0 });
    expect(Array.from(r.gid as Uint8Array)).toEqual(Array.from(ipv6FromString('::ffff:198.18.0.2')));
  });

  const good = (): string => Buffer.from(encodeKeyMessage(d, { gid: true, dataValidation: false })).toString('latin1');
  const withAt = (s: string, at: number, c: string): Uint8Array => ascii(s.slice(0, at) + c + s.slice(at + c.length));
  test.each([
    ['lid', 1, 'g', /field lid must be 4 hex digits at byte 0/],
    ['out_reads', 4, '-', /field lid must be followed by ':' at byte 4/],
    ['qpn', 12, 'x', /field qpn must be 6 hex digits at byte 10/],
    ['psn', 23, ' ', /field psn must be followed by ':'/],
    ['rkey', 25, 'Z', /field rkey must be 8 hex digits/],
    ['vaddr', 40, '?', /field vaddr must be 16 hex digits/],
    ['gid[15]', 95, 'q', /field gid\[15\] must be 2 hex digits at byte 95/],
    ['srqn', 100, '.', /field srqn must be 8 hex digits at byte 98/],
    ['terminator', 107, 'x', /field terminator must be a NUL at byte 107/],
  ])('a bad %s is named', (field, at, c, msg) => {
    const e = oobErr(() => decodeKeyMessage(withAt(good(), at as number, c as string), { gid: true, dataValidation: false }));
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.message).toMatch(msg);
    if (field !== 'out_reads') expect(e.field).toBe(field);
  });

  // Issue 15: a peer naming a special QP or a LID no port has is refused on arrival, by field.
  test.each([
    ['qpn', 10, '000001', /field qpn must be a QP number in 0x2\.\.0xffffff, got 0x1 \(QP1 is the GSI/],
    ['qpn', 10, '000000', /field qpn must be a QP number in 0x2\.\.0xffffff, got 0x0 \(QP0 is the SMI/],
    ['lid', 0, 'ffff', /field lid must be 0 \(RoCE\) or a unicast LID up to 0xbfff, got 0xffff \(the permissive LID\)/],
    ['lid', 0, 'c001', /got 0xc001 \(a multicast LID\)/],
  ])('a %s of %s (at byte %s) is refused', (field, at, text, msg) => {
    const e = oobErr(() => decodeKeyMessage(withAt(good(), at as number, text as string), { gid: true, dataValidation: false }));
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.field).toBe(field);
    expect(e.message).toMatch(msg as RegExp);
  });

  test('wrong length is refused before parsing', () => {
    const e = oobErr(() => decodeKeyMessage(ascii(good()).subarray(0, 59), { gid: true, dataValidation: false }));
    expect(e.field).toBe('length');
    expect(e.message).toMatch(/must be 108 bytes, got 59/);
  });
});

describe('bandwidth report (xchg_bw_reports)', () => {
  const r: BwReport = { size: 65536n, iters: 5000n, bwPeak: 11000.5, bwAvg: 10900.25, msgRateAvg: 0.174404 };
  test('layout: size 8, iters 8 (4 before 5.33), then three doubles', () => {
    expect(bwReportLayout(6.06).map((f) => `${f.field}:${f.size}`)).toEqual(['size:8', 'iters:8', 'bw_peak:8', 'bw_avg:8', 'msgRate_avg:8']);
    expect(bwReportLayout(5.32)[1]).toEqual({ field: 'iters', size: 4 });
  });
  test('big-endian integers and IEEE doubles (hton_long, hton_double)', () => {
    expect(hex(encodeBwReportField(r, 'size', 8))).toBe('0000000000010000');
    expect(hex(encodeBwReportField(r, 'iters', 8))).toBe('0000000000001388');
    expect(hex(encodeBwReportField(r, 'iters', 4))).toBe('00001388');
    const dbl = Buffer.alloc(8);
    dbl.writeDoubleBE(10900.25);
    expect(hex(encodeBwReportField(r, 'bw_avg', 8))).toBe(dbl.toString('hex'));
    const back = emptyBwReport();
    for (const { field, size } of bwReportLayout(6.06)) decodeBwReportField(back, field, encodeBwReportField(r, field, size));
    expect(back).toEqual(r);
    expect(() => checkBwReport(back, { size: 65536, iters: 5000 })).not.toThrow();
  });
  test('a report that does not match the test names the field', () => {
    expect(oobErr(() => checkBwReport({ ...r, iters: 7n }, { size: 65536, iters: 5000 })).field).toBe('iters');
    expect(oobErr(() => checkBwReport({ ...r, bwAvg: NaN }, { size: 65536, iters: 5000 })).field).toBe('bw_avg');
    expect(oobErr(() => decodeBwReportField(emptyBwReport(), 'bw_peak', new Uint8Array(4))).message).toMatch(/bw_peak must be 8 bytes, got 4/);
  });
  // Issue 15: values from a hostile client, checked before the server uses them.
  test.each([
    ['size 2^64-1', { size: (1n << 64n) - 1n }, {}, 'size'],
    ['size -1 (as unsigned)', { size: BigInt.asUintN(64, -1n) }, {}, 'size'],
    ['iters 2^63 in duration mode', { iters: 1n << 63n }, { duration: true }, 'iters'],
    ['iters -5 (as unsigned) in duration mode', { iters: BigInt.asUintN(64, -5n) }, { duration: true }, 'iters'],
    ['iters 0 in duration mode', { iters: 0n }, { duration: true }, 'iters'],
    ['an infinite average bandwidth', { bwAvg: Infinity }, {}, 'bw_avg'],
    ['a NaN message rate', { msgRateAvg: NaN }, {}, 'msgRate_avg'],
    ['a negative peak', { bwPeak: -1 }, {}, 'bw_peak'],
  ] as const)('%s is refused, naming the field', (_n, change, o, field) => {
    const expected = 'duration' in o ? { size: 65536 } : { size: 65536, iters: 5000 };
    const e = oobErr(() => checkBwReport({ ...r, ...change }, expected));
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.field).toBe(field);
  });
});
