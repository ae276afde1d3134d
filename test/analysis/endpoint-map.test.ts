/** The analyzer's per-frame lookups: values by (address, QPN), and address texts made once. */
import { EndpointMap } from '../../analysis/endpoint-map';
import { AddressNames } from '../../analysis/address-names';
import { buildRoceV2Frame } from '../../packets/build';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { Opcode } from '../../packets/opcodes';

test('EndpointMap: by address and QPN; deleteIf removes only the value it names', () => {
  const m = new EndpointMap<string>();
  m.set('198.18.0.1', 17, 'a');
  m.set('198.18.0.1', 18, 'b');
  m.set('198.18.0.2', 17, 'c');
  expect([m.get('198.18.0.1', 17), m.get('198.18.0.1', 18), m.get('198.18.0.2', 17), m.get('198.18.0.2', 18)]).toEqual(['a', 'b', 'c', undefined]);
  m.deleteIf('198.18.0.1', 17, 'other');
  expect(m.get('198.18.0.1', 17)).toBe('a');
  m.deleteIf('198.18.0.1', 17, 'a');
  expect(m.get('198.18.0.1', 17)).toBeUndefined();
  expect(m.get('198.18.0.1', 18)).toBe('b');
  m.set('198.18.0.1', 17, 'd');
  expect(m.get('198.18.0.1', 17)).toBe('d');
});

test('AddressNames: the texts packetAddresses gives, the same string each time, and a bounded cache', () => {
  const frame = (src: string, dst: string) =>
    decodeFrame(
      buildRoceV2Frame({
        eth: { src: 2, dst: 4 },
        ip: { version: 4, src, dst },
        bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 5, psn: 1 },
        payload: new Uint8Array(4),
      }),
    );
  const names = new AddressNames(2);
  const p = frame('198.18.0.1', '198.18.255.254');
  if (!p.roce) throw new Error('not RoCE');
  const first = names.of(p);
  expect(first).toEqual(packetAddresses(p));
  expect(names.of(p).src).toBe(first.src);
  // Past the limit the cache starts over and still answers right.
  for (const a of ['198.18.1.1', '198.18.1.2', '198.18.1.3']) {
    const q = frame(a, '198.18.0.9');
    if (!q.roce) throw new Error('not RoCE');
    expect(names.of(q)).toEqual(packetAddresses(q));
  }
  const v6 = decodeFrame(
    buildRoceV2Frame({
      eth: { src: 2, dst: 4 },
      ip: { version: 6, src: 'fd00::1', dst: 'fd00::2' },
      bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 5, psn: 1 },
      payload: new Uint8Array(4),
    }),
  );
  if (!v6.roce) throw new Error('not RoCE');
  expect(names.of(v6)).toEqual({ src: 'fd00::1', dst: 'fd00::2' });
});
