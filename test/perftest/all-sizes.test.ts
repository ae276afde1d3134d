/**
 * perftest -a: every size from 2 bytes to 8 MiB on one connection, both ends this implementation
 * over the simulated link (virtual clock), verified at each size where the receiver can see it.
 */
import { expectRefused, runPerftestPair } from './pair';

const SIZES = Array.from({ length: 23 }, (_, i) => 2 ** (i + 1));

test.each([
  ['write', false],
  ['read', false],
  ['write', true],
  ['read', true],
] as const)(
  '%s lat=%s -a: 23 sizes, 2 B .. 8 MiB, each with -n messages, all verified',
  async (verb, lat) => {
    const { s, c } = await runPerftestPair({ verb, lat, iters: 5, allSizes: true });
    expect(c.problems).toEqual([]);
    expect(s.problems).toEqual([]);
    expect(c.ok && s.ok).toBe(true);
    expect(c.sizes.map((x) => x.msgSize)).toEqual(SIZES);
    for (const x of c.sizes) {
      expect(x.messages).toBe(5);
      if (lat) expect(x.latencyUs?.p50 ?? 0).toBeGreaterThan(0);
      else expect(x.gbps).toBeGreaterThan(0);
    }
    // The last size is the run's figure, and the report the server got.
    expect(c.msgSize).toBe(8 << 20);
    expect(c.messages).toBe(5);
    if (!lat) expect(s.messages).toBe(5);
    // Something was checked at every size: ping-pong WRITEs and READs as they arrive, the last size's slots at the end.
    expect(c.verify.mismatches + s.verify.mismatches).toBe(0);
    expect(c.verify.bytesChecked + s.verify.bytesChecked).toBeGreaterThanOrEqual(8 << 20);
  },
  60_000,
);

test('-a is refused where perftest refuses it or it is not implemented', async () => {
  await expectRefused({ allSizes: true }, [
    [{ verb: 'write', durationS: 4 }, /duration mode/],
    [{ verb: 'write', size: 64 }, /cannot be combined/],
    [{ verb: 'send' }, /implemented for write and read/],
    [{ verb: 'atomic' }, /implemented for write and read/],
  ]);
});
