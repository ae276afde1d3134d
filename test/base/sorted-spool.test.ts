/**
 * base/sorted-spool.ts: lines come back in key order, equal keys in push order, whatever the runs
 * and the read buffer cut; several spools share one store; text that is not ASCII survives reads
 * that cut a character; misuse is a typed error.
 */
import { SortedSpool } from '../../base/sorted-spool';
import { ProgrammingError } from '../../base/programming-error';
import { Rng } from '../../base/rng';
import { memoryStore } from '../support/memory-spool-store';

/** What the spool must give: the lines stably sorted by key. */
function expected(items: readonly [number, string][]): string[] {
  return [...items].sort((a, b) => a[0] - b[0]).map(([, line]) => line);
}

function filled(items: readonly [number, string][], opts: { runBytes?: number; readBytes?: number }, store = memoryStore()): SortedSpool {
  const spool = new SortedSpool(store, opts);
  for (const [k, line] of items) spool.push(k, line);
  return spool;
}

describe('SortedSpool', () => {
  test('random keys with many equal ones, over many runs and small reads: a stable sort', () => {
    const rng = new Rng(7);
    const items: [number, string][] = [];
    for (let i = 0; i < 5000; i++) items.push([rng.int(400), JSON.stringify({ i, pad: 'x'.repeat(rng.int(60)) })]);
    for (const opts of [{}, { runBytes: 4096, readBytes: 100 }, { runBytes: 997, readBytes: 13 }]) {
      const store = memoryStore();
      const spool = filled(items, opts, store);
      expect(spool.length).toBe(items.length);
      expect([...spool.lines()]).toEqual(expected(items));
      expect(store.bytes()).toBeGreaterThan(0);
    }
  });

  test('keys nearly in order (as messages complete), negative and fractional keys', () => {
    const items: [number, string][] = [];
    for (let i = 0; i < 3000; i++) items.push([i - (i % 7 === 0 ? 50 : 0), `m${i}`]);
    items.push([-3.5, 'negative'], [1e21, 'huge'], [0.25, 'quarter']);
    expect([...filled(items, { runBytes: 2048, readBytes: 64 }).lines()]).toEqual(expected(items));
  });

  test('text that is not ASCII, cut anywhere by the reads, comes back whole', () => {
    const words = ['é', 'ß', '€', '日本', '🙂', '\u2028', 'a"b\\c'];
    const items: [number, string][] = Array.from({ length: 800 }, (_, i) => [i % 13, JSON.stringify(`${words[i % words.length]!.repeat(1 + (i % 5))}#${i}`)]);
    for (const readBytes of [1, 2, 3, 5, 64]) expect([...filled(items, { runBytes: 1500, readBytes }).lines()]).toEqual(expected(items));
  });

  test('a line longer than the run and than a read', () => {
    const long = 'L'.repeat(10_000);
    const items: [number, string][] = [
      [2, 'b'],
      [1, long],
      [0, 'a'],
      [1, `${long}€`],
    ];
    expect([...filled(items, { runBytes: 256, readBytes: 16 }).lines()]).toEqual(expected(items));
  });

  test('several spools share one store, each reading back only its own lines', () => {
    const store = memoryStore();
    const a = new SortedSpool(store, { runBytes: 300, readBytes: 32 });
    const b = new SortedSpool(store, { runBytes: 300, readBytes: 32 });
    const ia: [number, string][] = [];
    const ib: [number, string][] = [];
    for (let i = 0; i < 400; i++) {
      const ka = (i * 37) % 101;
      const kb = (i * 53) % 89;
      a.push(ka, `a${i}`);
      ia.push([ka, `a${i}`]);
      b.push(kb, `b${i}`);
      ib.push([kb, `b${i}`]);
    }
    expect([...b.lines()]).toEqual(expected(ib));
    expect([...a.lines()]).toEqual(expected(ia));
  });

  test('an empty spool gives nothing and writes nothing', () => {
    const store = memoryStore();
    const spool = new SortedSpool(store);
    expect([...spool.lines()]).toEqual([]);
    expect(store.bytes()).toBe(0);
  });

  test('misuse is a ProgrammingError: a newline in a line, a key that is not finite, a push after reading', () => {
    const spool = new SortedSpool(memoryStore());
    expect(() => spool.push(1, 'two\nlines')).toThrow(ProgrammingError);
    expect(() => spool.push(Number.NaN, 'x')).toThrow(ProgrammingError);
    expect(() => spool.push(Number.POSITIVE_INFINITY, 'x')).toThrow(ProgrammingError);
    spool.push(1, 'one');
    expect([...spool.lines()]).toEqual(['one']);
    expect(() => spool.push(2, 'late')).toThrow(/once read/);
  });
});
