/**
 * The analysis's frames whose flags may still change (analysis/pending-frames.ts): it lets go of
 * the same frames, in the same order, as a Map asked for its first key (what it replaces), under
 * random runs of frames held, made final and let go; and its queue stays within twice what it holds
 * whatever the run's length.
 */
import { PendingFrames } from '../../analysis/pending-frames';
import type { FrameResult } from '../../analysis/types';
import { Rng } from '../../base/rng';

function result(frame: number): FrameResult {
  return { frame, timeNs: frame * 10, conversation: 0, from: 'a', opcode: 'RC_SEND_ONLY', psn: frame, flags: ['outOfSequence'] };
}

/** The Map that PendingFrames replaced, with its eviction by first key. */
class Reference {
  readonly map = new Map<number, FrameResult>();
  constructor(private readonly limit: number) {}
  add(frame: number, r: FrameResult): FrameResult | undefined {
    this.map.set(frame, r);
    if (this.map.size <= this.limit) return undefined;
    const oldest = this.map.keys().next().value as number;
    const gone = this.map.get(oldest);
    this.map.delete(oldest);
    return gone;
  }
}

test.each([
  [1, 0.0],
  [8, 0.3],
  [64, 0.7],
  [500, 0.5],
  [3, 0.95],
])('limit %d, %f of the frames made final at random: the same frames let go, in the same order', (limit, finalShare) => {
  const rng = new Rng(limit * 1000 + Math.round(finalShare * 100));
  const p = new PendingFrames(limit);
  const ref = new Reference(limit);
  let frame = 0;
  for (let step = 0; step < 10_000; step++) {
    frame += 1 + Math.floor(rng.float() * 3);
    const r = result(frame);
    const added = [p.add(frame, r), ref.add(frame, r)];
    // In the 10 000-step loop jest's matchers run only to show a difference.
    if (added[0] !== added[1]) expect({ step, added: added[0] }).toEqual({ step, added: added[1] });
    if (rng.float() < finalShare) {
      // A frame held becomes final: the newest, or one picked among those held.
      const held = [...ref.map.keys()];
      const pick = held[rng.float() < 0.5 ? held.length - 1 : Math.floor(rng.float() * held.length)];
      if (pick !== undefined) {
        if (p.get(pick) !== ref.map.get(pick)) expect({ step, pick, got: p.get(pick) }).toEqual({ step, pick, got: ref.map.get(pick) });
        p.delete(pick);
        ref.map.delete(pick);
      }
    }
    if (p.queued > 2 * ref.map.size + 1026) expect({ step, queued: p.queued }).toEqual({ step, queued: `at most ${2 * ref.map.size + 1026}` });
  }
  expect([...p.values()]).toEqual([...ref.map.values()]);
  p.clear();
  expect([...p.values()]).toEqual([]);
  expect(p.queued).toBe(0);
});

test('a million frames held and made final one by one: the queue stays small', () => {
  const p = new PendingFrames(1 << 16);
  let most = 0;
  for (let f = 1; f <= 1_000_000; f++) {
    p.add(f, result(f));
    p.delete(f);
    most = Math.max(most, p.queued);
  }
  expect(most).toBeLessThanOrEqual(1026);
});
