/**
 * Per-flow state that grows with what a flow has done, not with the capture around it: the ring of
 * recent transmissions (analysis/tx-ring.ts) finds exactly what a ring of TX_RING slots finds while
 * it starts small, and a time series (analysis/figures.ts) gives the bins a series holding every
 * zero gives while it holds none before its first value. Each is held to a reference that keeps
 * the old layout, under seeded random use.
 */
import { TX_RING, TxRing } from '../../analysis/tx-ring';
import { MAX_BINS, TimeSeries, type BinMode } from '../../analysis/figures';
import { Rng } from '../../base/rng';

/** A ring of TX_RING slots that forgets by slot, as the analysis's ring did before it grew. */
class FullRing {
  private readonly psn = new Int32Array(TX_RING).fill(-1);
  private readonly seq = new Float64Array(TX_RING);
  private readonly info = new Map<number, { frame: number; timeNs: number; followerFrame: number; followerNs: number }>();
  private sent = 0;
  private slot(p: number): number {
    const i = p & (TX_RING - 1);
    return this.psn[i] === p && this.sent - (this.seq[i] as number) <= TX_RING ? i : -1;
  }
  get(p: number): unknown {
    const i = this.slot(p);
    return i < 0 ? undefined : { ...this.info.get(i) };
  }
  record(p: number, frame: number, timeNs: number): void {
    const i = p & (TX_RING - 1);
    this.psn[i] = p;
    this.seq[i] = ++this.sent;
    this.info.set(i, { frame, timeNs, followerFrame: 0, followerNs: 0 });
  }
  follow(p: number, frame: number, timeNs: number): void {
    const i = this.slot(p);
    const x = this.info.get(i);
    if (i < 0 || x === undefined || x.followerFrame !== 0) return;
    x.followerFrame = frame;
    x.followerNs = timeNs;
  }
}

test.each([
  ['in order, resent now and then', (r: Rng, i: number) => (r.chance(0.1) ? Math.max(0, i - r.int(200)) : i) & 0xffffff],
  ['in order from near the wrap', (r: Rng, i: number) => (0xfff000 + i - (r.chance(0.05) ? r.int(5000) : 0)) & 0xffffff],
  ['PSNs 4096 apart, colliding at every size', (r: Rng, i: number) => ((i % 3) * 4096 + r.int(4)) & 0xffffff],
  ['at random', (r: Rng) => r.int(1 << 24)],
  ['a few PSNs again and again', (r: Rng) => r.int(20)],
])('the ring of transmissions, %s: what a full ring finds', (_name, psnAt) => {
  const r = new Rng(_name.length);
  const ring = new TxRing();
  const ref = new FullRing();
  // Compared step by step without jest's matchers (20 000 steps); the first difference is reported.
  let first: { step: number; ring: unknown; full: unknown } | null = null;
  for (let i = 0; i < 20_000 && first === null; i++) {
    const p = psnAt(r, i);
    const q = psnAt(r, i + 1);
    if (r.chance(0.7)) {
      ring.record(p, i, i * 10);
      ref.record(p, i, i * 10);
    } else {
      ring.follow(p, i, i * 10);
      ref.follow(p, i, i * 10);
    }
    const got = JSON.stringify(ring.get(q));
    const want = JSON.stringify(ref.get(q));
    if (got !== want) first = { step: i, ring: got, full: want };
    else if (ring.has(p) !== (ref.get(p) !== undefined)) first = { step: i, ring: `has ${ring.has(p)}`, full: `has ${ref.get(p) !== undefined}` };
  }
  expect(first).toBeNull();
});

test('a flow of a few requests keeps a small ring; one of many grows to TX_RING slots', () => {
  const few = new TxRing();
  for (let i = 0; i < 10; i++) few.record(1000 + i, i, i);
  expect(few.slots).toBeLessThanOrEqual(16);
  const many = new TxRing();
  for (let i = 0; i < 3 * TX_RING; i++) many.record(i, i, i);
  expect(many.slots).toBe(TX_RING);
});

/** Bin for bin the same (exact: both sum or take the max of the same values in the same order). */
function sameBins(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The series as it was: every bin from zero held. */
class FullSeries {
  binNs = 1000;
  readonly bins: number[] = [];
  constructor(readonly mode: BinMode) {}
  add(timeNs: number, value: number): void {
    let i = Math.floor(Math.max(0, timeNs) / this.binNs);
    while (i >= MAX_BINS) {
      const out: number[] = [];
      for (let k = 0; k < this.bins.length; k += 2) {
        const x = this.bins[k] ?? 0;
        const y = this.bins[k + 1] ?? 0;
        out.push(this.mode === 'sum' ? x + y : Math.max(x, y));
      }
      this.bins.length = 0;
      this.bins.push(...out);
      this.binNs *= 2;
      i = Math.floor(Math.max(0, timeNs) / this.binNs);
    }
    while (this.bins.length <= i) this.bins.push(0);
    const old = this.bins[i] ?? 0;
    this.bins[i] = this.mode === 'sum' ? old + value : Math.max(old, value);
  }
}

test.each([
  ['sum', 'from the start', 0],
  ['max', 'from the start', 0],
  ['sum', 'late in the capture', 3_000_000],
  ['max', 'late in the capture', 77_777_777],
  ['sum', 'very late, times out of order', 9e9],
] as const)('a time series (%s) of a flow that starts %s: the bins of one that held every zero', (mode, _when, startNs) => {
  const r = new Rng(startNs + mode.length);
  const s = new TimeSeries(mode);
  const ref = new FullSeries(mode);
  let t = startNs;
  for (let i = 0; i < 5000; i++) {
    t += r.int(3000);
    // Now and then a time a little earlier than the last (capture times need not increase).
    const at = r.chance(0.05) ? Math.max(0, t - r.int(50_000)) : t;
    const value = r.chance(0.1) ? 0 : r.int(5000) + r.float();
    s.add(at, value);
    ref.add(at, value);
    if (i % 97 === 0 && (s.binNs !== ref.binNs || !sameBins(s.bins, ref.bins))) {
      // The first point where they part, shown by jest.
      expect({ i, binNs: s.binNs, bins: s.bins }).toEqual({ i, binNs: ref.binNs, bins: ref.bins });
    }
  }
  expect(s.bins).toEqual(ref.bins);
  expect(s.binNs).toBe(ref.binNs);
});
