/**
 * The lookups replay compares with (apps/replay/answer-index.ts, apps/replay/captured-index.ts)
 * against the scans they replace, on random lists: PSNs repeat (resends, wrap), frames come in any
 * order, kinds mix.
 */
import { AnswerIndex } from '../../apps/replay/answer-index';
import { CapturedIndex } from '../../apps/replay/captured-index';
import type { CapturedPacket } from '../../apps/replay/conversation';
import type { RocePacket } from '../../packets/decode';
import { Rng } from '../../base/rng';

/** Seeded, so a failure repeats. */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.float();
}

const packet = (frame: number, psn: number | null, flags: number): CapturedPacket => ({
  frame,
  timeNs: frame * 1000,
  p: { bth: psn === null ? null : { psn }, info: { flags } } as unknown as RocePacket,
  bytes: new Uint8Array(0),
});

describe('CapturedIndex', () => {
  for (const seed of [1, 2, 3]) {
    test(`seed ${seed}: next, someBetween and between give what a scan of the frame-ordered list gives`, () => {
      const r = rng(seed);
      const frames = Array.from({ length: 400 }, (_, i) => i + 1).filter(() => r() < 0.7);
      // Shuffled: the index orders by frame.
      const list = frames.map((f) => packet(f, r() < 0.05 ? null : Math.floor(r() * 12), Math.floor(r() * 4)));
      for (let i = list.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [list[i], list[j]] = [list[j] as CapturedPacket, list[i] as CapturedPacket];
      }
      const ordered = [...list].sort((a, b) => a.frame - b.frame);
      const idx = new CapturedIndex(list);
      expect(idx.packets).toEqual(ordered);
      const odd = (c: CapturedPacket): boolean => ((c.p.info?.flags ?? 0) & 1) !== 0;
      for (let k = 0; k < 300; k++) {
        const psn = Math.floor(r() * 13);
        const after = Math.floor(r() * 420) - 10;
        const before = after + Math.floor(r() * 120);
        expect(idx.next(psn, after)).toBe(ordered.find((c) => c.frame > after && c.p.bth?.psn === psn));
        expect(idx.next(psn, after, odd)).toBe(ordered.find((c) => c.frame > after && c.p.bth?.psn === psn && odd(c)));
        expect(idx.someBetween(psn, after, before, odd)).toBe(ordered.some((c) => c.frame > after && c.frame < before && c.p.bth?.psn === psn && odd(c)));
        expect([...idx.between(after, before)]).toEqual(ordered.filter((c) => c.frame > after && c.frame < before));
      }
    });
  }

  test('an empty side', () => {
    const idx = new CapturedIndex([]);
    expect(idx.next(0, 0)).toBeUndefined();
    expect(idx.someBetween(0, 0, 10, () => true)).toBe(false);
    expect([...idx.between(0, 10)]).toEqual([]);
  });
});

describe('AnswerIndex', () => {
  test('of(kind, psn) keeps the given order; firstAt(psn) is the first of any kind', () => {
    const r = rng(7);
    const kinds = ['ACK', 'NAK', 'READ', 'ATOMIC'] as const;
    const answers = Array.from({ length: 500 }, (_, i) => ({ kind: kinds[Math.floor(r() * 4)] as string, psn: Math.floor(r() * 30), i }));
    const idx = new AnswerIndex(answers);
    for (const kind of [...kinds, 'RNR_NAK']) {
      for (let psn = 0; psn < 32; psn++) expect(idx.of(kind, psn)).toEqual(answers.filter((a) => a.kind === kind && a.psn === psn));
    }
    for (let psn = 0; psn < 32; psn++) expect(idx.firstAt(psn)).toBe(answers.find((a) => a.psn === psn));
  });
});
