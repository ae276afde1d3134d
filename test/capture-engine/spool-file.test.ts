/**
 * capture-engine/spool-file.ts: the temporary file behind `roce analyze --json`'s spooled lists leaves
 * nothing in the directory, holds what a SortedSpool writes through several runs, and is not made
 * where it cannot be (the command then keeps its lists in memory).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SortedSpool } from '../../base/sorted-spool';
import { openSpoolFile } from '../../capture-engine/spool-file';

describe('openSpoolFile', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-spool-test-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('runs written and merged back through the file; nothing is left in the directory, even while open', () => {
    const file = openSpoolFile(dir);
    expect(file).not.toBeNull();
    expect(fs.readdirSync(dir)).toEqual([]);
    const a = new SortedSpool(file!, { runBytes: 1000, readBytes: 77 });
    const b = new SortedSpool(file!, { runBytes: 700, readBytes: 50 });
    const want: [number, string][] = [];
    for (let i = 0; i < 2000; i++) {
      const line = JSON.stringify({ i, text: `été ${i}` });
      a.push((i * 7919) % 1009, line);
      want.push([(i * 7919) % 1009, line]);
      b.push(-i, `b${i}`);
    }
    expect([...a.lines()]).toEqual(want.sort((x, y) => x[0] - y[0]).map(([, l]) => l));
    expect([...b.lines()]).toEqual(Array.from({ length: 2000 }, (_, i) => `b${1999 - i}`));
    file!.close();
    file!.close();
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a directory that does not exist, or a file in place of one: null', () => {
    expect(openSpoolFile(path.join(dir, 'missing'))).toBeNull();
    fs.writeFileSync(path.join(dir, 'plain'), 'x');
    expect(openSpoolFile(path.join(dir, 'plain'))).toBeNull();
  });
});
