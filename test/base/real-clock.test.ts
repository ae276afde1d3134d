/**
 * RealClock's deferred work (`soon`): one immediate runs it in order, and `runSoon` runs it at
 * once instead (the busy-poll wait), including what that work defers in turn; nothing runs twice.
 */
import { RealClock } from '../../base/clock';

const nextImmediate = (): Promise<void> => new Promise((r) => setImmediate(r));

test('soon runs in order on the next turn of the event loop', async () => {
  const c = new RealClock();
  const ran: number[] = [];
  c.soon(() => ran.push(1));
  c.soon(() => ran.push(2));
  expect(ran).toEqual([]);
  await nextImmediate();
  expect(ran).toEqual([1, 2]);
});

test('runSoon runs the queue now, work deferred while it runs too, and the immediate finds nothing left', async () => {
  const c = new RealClock();
  const ran: string[] = [];
  c.soon(() => {
    ran.push('a');
    c.soon(() => ran.push('c'));
  });
  c.soon(() => ran.push('b'));
  c.runSoon();
  expect(ran).toEqual(['a', 'b', 'c']);
  await nextImmediate();
  await nextImmediate();
  expect(ran).toEqual(['a', 'b', 'c']);
  // The clock schedules a fresh immediate for work deferred after that.
  c.soon(() => ran.push('d'));
  await nextImmediate();
  expect(ran).toEqual(['a', 'b', 'c', 'd']);
});

test('an empty runSoon does nothing', () => {
  const c = new RealClock();
  expect(() => c.runSoon()).not.toThrow();
});

test('work that throws leaves the queue: nothing runs twice', () => {
  const c = new RealClock();
  const ran: string[] = [];
  c.soon(() => ran.push('a'));
  c.soon(() => {
    throw new Error('boom');
  });
  c.soon(() => ran.push('c'));
  expect(() => c.runSoon()).toThrow('boom');
  c.runSoon();
  expect(ran).toEqual(['a', 'c']);
});
