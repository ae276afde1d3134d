/** The native batched ICRC the composition roots hand the device: the same values as the TypeScript one. */
import { jsIcrcBatch } from '../../packets/icrc';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';
import { fastestIcrcBatch, nativeIcrcBatch } from '../../nic-driver/native-icrc';
import { lcg, randomIcrcBurst } from '../support/icrc-burst';
import { testUnless } from '../support/skip';

const noNative = nativeAvailable() ? null : `native addon not available (${nativeLoadError()})`;

test('fastestIcrcBatch is the native one exactly when the addon loads', () => {
  expect(nativeIcrcBatch() === null).toBe(!nativeAvailable());
  expect(fastestIcrcBatch().name).toBe(nativeAvailable() ? 'native' : jsIcrcBatch.name);
});

testUnless(noNative)('native compute and seal agree with jsIcrcBatch on random bursts', () => {
  const nat = nativeIcrcBatch()!;
  const rnd = lcg(21);
  for (let round = 0; round < 20; round++) {
    const b = randomIcrcBurst(rnd, 1 + Math.floor(rnd() * 64));
    const want = new Uint32Array(b.count);
    const got = new Uint32Array(b.count);
    jsIcrcBatch.compute(b.buf, b.desc, b.count, want);
    nat.compute(b.buf, b.desc, b.count, got);
    expect(Array.from(got)).toEqual(Array.from(want));
    const sealedJs = b.buf.slice();
    jsIcrcBatch.seal(sealedJs, b.desc, b.count);
    nat.seal(b.buf, b.desc, b.count);
    expect(b.buf).toEqual(sealedJs);
  }
});
