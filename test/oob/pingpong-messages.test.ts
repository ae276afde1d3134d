/** rc_pingpong's out-of-band messages, byte for byte (rdma-core libibverbs/examples/rc_pingpong.c, pingpong.c). */
import { PINGPONG_MSG_SIZE, checkDone, decodePingpongDest, encodeDone, encodePingpongDest, gidFromWire, gidToWire } from '../../apps/oob/pingpong-messages';
import { OobError } from '../../apps/oob/tcp-channel';
import { ipv6FromString } from '../../packets/bytes';

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

function expectField(f: () => unknown, field: string, msg: RegExp): void {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(OobError);
  expect((err as OobError).code).toBe('ROCE_ERR_OOB_MALFORMED');
  expect((err as OobError).field).toBe(field);
  expect((err as OobError).message).toMatch(msg);
}

describe('address message', () => {
  // The message sent by hand to an rxe guest in rxe-lab.md, which answered it.
  const lab = '0000:000123:00abcd:00000000000000000000ffffc6120102';
  const dest = { lid: 0, qpn: 0x123, psn: 0xabcd, gid: ipv6FromString('::ffff:198.18.1.2') };

  test('is the sprintf("%04x:%06x:%06x:%s") text plus its NUL: 52 bytes', () => {
    const b = encodePingpongDest(dest);
    expect(b.length).toBe(PINGPONG_MSG_SIZE);
    expect(b.length).toBe('0000:000000:000000:00000000000000000000000000000000'.length + 1);
    expect(Buffer.from(b).equals(Buffer.from(`${lab}\0`, 'latin1'))).toBe(true);
  });

  test('decodes the lab message and the one rxe sent', () => {
    expect(decodePingpongDest(ascii(`${lab}\0`))).toEqual(dest);
    const rxe = decodePingpongDest(ascii('0000:000011:84590b:00000000000000000000ffffc6120002\0'));
    expect(rxe.qpn).toBe(0x11);
    expect(rxe.psn).toBe(0x84590b);
    expect(Array.from(rxe.gid)).toEqual(Array.from(ipv6FromString('::ffff:198.18.0.2')));
  });

  test('wire GID: the 16 raw bytes in network order as 32 lowercase hex digits', () => {
    const g = ipv6FromString('fe80::5054:ff:fe12:3401');
    expect(gidToWire(g)).toBe('fe800000000000005054' + '00fffe123401');
    expect(Array.from(gidFromWire(gidToWire(g)))).toEqual(Array.from(g));
    expect(decodePingpongDest(encodePingpongDest({ lid: 0xbfff, qpn: 0xffffff, psn: 0xffffff, gid: g }))).toEqual({
      lid: 0xbfff,
      qpn: 0xffffff,
      psn: 0xffffff,
      gid: g,
    });
  });

  test('encoding refuses values that do not fit', () => {
    expect(() => encodePingpongDest({ ...dest, qpn: 1 << 24 })).toThrow(/qpn/);
    expect(() => encodePingpongDest({ ...dest, qpn: 1 << 24 })).toThrow(expect.objectContaining({ code: 'ROCE_ERR_OOB_BAD_VALUE', field: 'qpn' }));
    expect(() => encodePingpongDest({ ...dest, gid: new Uint8Array(4) })).toThrow(/16 bytes/);
    expect(() => encodePingpongDest({ ...dest, gid: new Uint8Array(4) })).toThrow(OobError);
  });

  test.each([
    ['short', `${lab}`.slice(0, 40), 'length', /must be 52 bytes, got 40/],
    ['non-hex LID', `00x0${lab.slice(4)}\0`, 'lid', /lid must be 4 hex digits/],
    ['no colon after the QPN', `${lab.slice(0, 11)}-${lab.slice(12)}\0`, 'qpn', /followed by ':'/],
    ['non-hex PSN', `${lab.slice(0, 12)}zzzzzz${lab.slice(18)}\0`, 'psn', /psn must be 6 hex digits/],
    ['non-hex GID', `${lab.slice(0, 19)}g${lab.slice(20)}\0`, 'gid', /gid must be 32 hex digits/],
    ['GID cut short by a NUL', `${lab.slice(0, 40)}\0${'0'.repeat(11)}`, 'gid', /32 hex digits then a NUL/],
    ['no NUL at the end', `${lab}x`, 'gid', /32 hex digits then a NUL/],
  ])('%s: an error naming the field', (_name, text, field, msg) => {
    expectField(() => decodePingpongDest(ascii(text)), field, msg);
  });

  // Issue 15: rc_pingpong's exchange accepted QPN 1 and LID 0xffff, and QPN 0 surfaced as modifyQp's internal message.
  test.each([
    ['0000:000001:00abcd:', 'qpn', /field qpn must be a QP number in 0x2\.\.0xffffff, got 0x1 \(QP1 is the GSI/],
    ['0000:000000:00abcd:', 'qpn', /got 0x0 \(QP0 is the SMI/],
    ['ffff:000123:00abcd:', 'lid', /field lid must be 0 \(RoCE\) or a unicast LID up to 0xbfff, got 0xffff \(the permissive LID\)/],
    ['c000:000123:00abcd:', 'lid', /got 0xc000 \(a multicast LID\)/],
  ])('%s is refused, naming %s', (head, field, msg) => {
    expectField(() => decodePingpongDest(ascii(`${head}${lab.slice(19)}\0`)), field as string, msg as RegExp);
  });
  test('a unicast LID of an IB port is tolerated', () => {
    expect(decodePingpongDest(ascii(`0001:000123:00abcd:${lab.slice(19)}\0`)).lid).toBe(1);
  });
});

describe('"done"', () => {
  test('is 5 bytes with the NUL', () => {
    expect(Array.from(encodeDone())).toEqual([0x64, 0x6f, 0x6e, 0x65, 0x00]);
    expect(() => checkDone(encodeDone())).not.toThrow();
  });
  test.each([['dome\0'], ['done!'], ['don']])('%j is refused, naming the message', (t) => {
    expectField(() => checkDone(ascii(t)), 'done', /must be "done" and a NUL/);
  });
});
