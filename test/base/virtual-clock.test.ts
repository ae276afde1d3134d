/**
 * The virtual clock's event queue: events run in time order (ties in the order scheduled), a
 * cancelled event never runs, and cancelled events do not pile up: once they are half the queue
 * it is compacted, with the order of what remains unchanged.
 */
import { VirtualClock } from '../../base/clock';
import { Rng } from '../../base/rng';

test('events run in time order, ties in the order they were scheduled; cancelled ones never run', () => {
  const c = new VirtualClock();
  const ran: string[] = [];
  c.schedule(30, () => ran.push('c'));
  c.schedule(10, () => ran.push('a1'));
  const x = c.schedule(20, () => ran.push('x'));
  c.schedule(10, () => ran.push('a2'));
  c.cancel(x);
  c.runUntilIdle();
  expect(ran).toEqual(['a1', 'a2', 'c']);
  expect(c.now()).toBe(30);
});

test('timers cancelled long before they are due (a retransmission timer per message) do not pile up', () => {
  const c = new VirtualClock();
  let ran = 0;
  // Each "message" arms a timer due far ahead and cancels it when its "ACK" comes.
  for (let i = 0; i < 100_000; i++) {
    const t = c.schedule(1e9 + i, () => ran++);
    c.cancel(t);
  }
  // Without compaction all 100 000 would wait in the queue until 1 s.
  expect(c.pending).toBeLessThan(3000);
  c.runUntilIdle();
  expect(ran).toBe(0);
});

test('compaction keeps the order: the same events run at the same times as without cancelling', () => {
  const rng = new Rng(7);
  const c = new VirtualClock();
  const ran: number[] = [];
  const expected: [number, number][] = [];
  for (let i = 0; i < 20_000; i++) {
    const at = Math.floor(rng.float() * 1000);
    const t = c.schedule(at, () => ran.push(i));
    if (rng.float() < 0.8) c.cancel(t);
    else expected.push([at, i]);
  }
  // Cancelling an event that already ran is harmless.
  const done = c.schedule(0, () => undefined);
  c.step();
  c.cancel(done);
  c.runUntilIdle();
  expected.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  expect(ran).toEqual(expected.map(([, i]) => i));
});
