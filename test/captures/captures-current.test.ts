/**
 * The committed files in captures/ must be exactly what test/support/make-captures.ts
 * produces, so they never go stale. After changing the generator (or the frame
 * builder it uses), regenerate them with
 *
 *   UPDATE_CAPTURES=1 npx jest test/captures/captures-current
 *
 * and commit the result together with the change.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeCaptures } from '../support/make-captures';

const DIR = path.resolve(__dirname, '..', '..', 'captures');
const update = process.env['UPDATE_CAPTURES'] === '1';
const captures = makeCaptures();

describe('captures/ is current', () => {
  if (update) {
    test('writes captures/ (UPDATE_CAPTURES=1)', () => {
      fs.mkdirSync(DIR, { recursive: true });
      for (const [name, bytes] of captures) fs.writeFileSync(path.join(DIR, name), bytes);
      expect(captures.size).toBeGreaterThan(0);
    });
  }

  test.each([...captures.keys()])('%s equals a fresh run of makeCaptures()', (name) => {
    const file = path.join(DIR, name);
    if (!fs.existsSync(file)) {
      throw new Error(`captures/${name} is missing; run UPDATE_CAPTURES=1 npx jest test/captures/captures-current`);
    }
    const onDisk = new Uint8Array(fs.readFileSync(file));
    const fresh = captures.get(name)!;
    if (Buffer.compare(Buffer.from(onDisk), Buffer.from(fresh)) !== 0) {
      throw new Error(
        `captures/${name} (${onDisk.length} bytes) differs from makeCaptures() (${fresh.length} bytes); ` +
          'regenerate with UPDATE_CAPTURES=1 npx jest test/captures/captures-current',
      );
    }
  });

  test('makeCaptures() is deterministic', () => {
    const again = makeCaptures();
    expect([...again.keys()]).toEqual([...captures.keys()]);
    for (const [name, bytes] of captures) expect(Buffer.compare(Buffer.from(again.get(name)!), Buffer.from(bytes))).toBe(0);
  });

  test('every capture file in captures/ is produced by makeCaptures()', () => {
    // demo.pcap is written by `roce demo` and is not committed.
    const files = fs.existsSync(DIR) ? fs.readdirSync(DIR).filter((f) => /\.pcap(ng)?$/.test(f) && f !== 'demo.pcap') : [];
    expect(files.sort()).toEqual([...captures.keys()].sort());
  });
});
