/**
 * RealClock's deferred work (`soon`): one immediate runs it in order, and `runSoon` runs it at
 * once instead (the busy-poll wait), including what that work defers in turn; nothing runs twice.
 * Its timers never run before their time (Node's own timers may, by up to a millisecond).
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

test('a timer never runs before its time, however its delay falls against the event loop’s millisecond clock', async () => {
  const c = new RealClock();
  const early: number[] = [];
  // Delays below a millisecond and around it, set at different points of a turn of the event loop.
  const delaysNs = [50_000, 300_000, 640_000, 999_000, 1_000_000, 1_300_000];
  for (let round = 0; round < 20; round++) {
    await Promise.all(
      delaysNs.map(
        (d) =>
          new Promise<void>((done) => {
            const at = c.now() + d;
            const t = setTimeout(() => undefined, 10_000); // keeps the process alive: clock timers are unref'd
            c.schedule(at, () => {
              clearTimeout(t);
              if (c.now() < at) early.push(at - c.now());
              done();
            });
          }),
      ),
    );
    // Busy for a fraction of a millisecond, so the next round's timers are set late in a turn.
    const until = c.now() + (round % 5) * 200_000;
    while (c.now() < until);
  }
  expect(early).toEqual([]);
});

test('a cancelled timer does not run', async () => {
  const c = new RealClock();
  let ran = 0;
  const ids = [0, 1, 2, 3].map((i) => c.schedule(c.now() + 700_000 + i * 100_000, () => ran++));
  for (const id of ids) c.cancel(id);
  await new Promise((r) => setTimeout(r, 5));
  expect(ran).toBe(0);
});
