/**
 * The fuzz corpora as regression tests: every entry of test/fuzz/corpus/<target>/ (the
 * seeds cut from the test captures, inputs the fuzzer kept, and every input that ever crashed a
 * target) goes through its target in this process, without the fuzzer. A target returns, or
 * throws only a typed error inside it; anything else fails here with the entry's name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FUZZ_TARGETS } from '../../fuzz/targets';

const CORPUS = path.resolve(__dirname, 'corpus');

describe.each(FUZZ_TARGETS.map((t) => [t.name, t] as const))('fuzz corpus of %s', (name, t) => {
  const dir = path.join(CORPUS, name);
  const entries = fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];

  test('has seeds', () => {
    expect(entries.length).toBeGreaterThan(0);
  });

  test('every entry runs through the target without an untyped exception', () => {
    const failures: string[] = [];
    for (const e of entries) {
      const data = fs.readFileSync(path.join(dir, e));
      if (data.length > t.maxLen) failures.push(`${e}: ${data.length} bytes, more than the target's max_len ${t.maxLen}`);
      try {
        t.fn(new Uint8Array(data.buffer, data.byteOffset, data.length));
      } catch (err) {
        failures.push(`${e}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
