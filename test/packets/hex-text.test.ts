/** Hex text of values and bytes (packets/bytes.ts): what `toString(16)` gives, for every kind of 32-bit input. */
import { hex32, toHex } from '../../packets/bytes';
import { Rng } from '../../base/rng';

const reference = (v: number): string => `0x${(v >>> 0).toString(16).padStart(8, '0')}`;

test('hex32: 0x and eight lowercase digits, as toString(16) gives them', () => {
  const r = new Rng(32);
  const values = [0, 1, 0xff, 0x100, 0x12345678, 0xdeadbeef, 0xffffffff, -1, -0x80000000, 0x7fffffff, 2 ** 32 + 5];
  for (let i = 0; i < 10_000; i++) values.push(r.int(2 ** 31) * 2 + r.int(2), r.int(2 ** 31) | 0x80000000);
  // Compared as one list: jest's matcher once, not 20 000 times; a difference shows the value.
  expect(values.map((v) => [v, hex32(v)])).toEqual(values.map((v) => [v, reference(v)]));
});

test('toHex: two digits a byte', () => {
  const b = Uint8Array.from({ length: 256 }, (_, i) => i);
  expect(toHex(b)).toBe([...b].map((x) => x.toString(16).padStart(2, '0')).join(''));
  expect(toHex(new Uint8Array(0))).toBe('');
});
