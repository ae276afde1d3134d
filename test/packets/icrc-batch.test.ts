/** The batched ICRC in TypeScript (packets/icrc.ts jsIcrcBatch): frame by frame what icrcV2 and sealIcrcV2 give. */
import { icrcV2, jsIcrcBatch, readIcrc } from '../../packets/icrc';
import { lcg, randomIcrcBurst } from '../support/icrc-burst';

test('compute gives icrcV2 of every frame of the burst and leaves the frames alone', () => {
  const rnd = lcg(11);
  for (let round = 0; round < 20; round++) {
    const b = randomIcrcBurst(rnd, 1 + Math.floor(rnd() * 40));
    const before = b.buf.slice();
    const out = new Uint32Array(b.count);
    jsIcrcBatch.compute(b.buf, b.desc, b.count, out);
    for (let i = 0; i < b.count; i++) expect(out[i]).toBe(icrcV2(b.buf, b.desc[2 * i]!, b.desc[2 * i + 1]!));
    expect(b.buf).toEqual(before);
  }
});

test('seal writes each frame`s ICRC into its field, and only there', () => {
  const b = randomIcrcBurst(lcg(12), 33);
  const before = b.buf.slice();
  jsIcrcBatch.seal(b.buf, b.desc, b.count);
  const touched = new Set<number>();
  for (let i = 0; i < b.count; i++) {
    const at = b.desc[2 * i + 1]!;
    expect(readIcrc(b.buf, at)).toBe(icrcV2(b.buf, b.desc[2 * i]!, at));
    for (let k = 0; k < 4; k++) touched.add(at + k);
  }
  for (let j = 0; j < b.buf.length; j++) if (!touched.has(j)) expect(b.buf[j]).toBe(before[j]);
});

test('a count below the descriptors takes only that many frames', () => {
  const b = randomIcrcBurst(lcg(13), 5);
  const out = new Uint32Array(5).fill(7);
  jsIcrcBatch.compute(b.buf, b.desc, 2, out);
  expect(Array.from(out.subarray(2))).toEqual([7, 7, 7]);
});
