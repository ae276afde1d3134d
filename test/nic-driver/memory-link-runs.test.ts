/**
 * The memory link's descriptor receive (driver.ts RunReceive): on a direction with no faults, no
 * tap and no serialization delay, frames committed by zero-copy transmit travel as one run of
 * (offset, length) pairs; `rxRun` hands them out without a view per frame, `rxBurst` as views,
 * in order with frames sent by `txBurst`; a full ring drops what does not fit; with a fault, a
 * tap or a line rate on the way, frames travel one by one as before.
 */
import { VirtualClock } from '../../base/clock';
import { createMemoryLink, type MemoryDriver } from '../../nic-driver/memory-link';
import { hasRunReceive } from '../../nic-driver/driver';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { testFrame } from './driver-suite';

/** Commits frames seq..seq+n-1 (lengths from `len`) through txReserve/txCommit. */
function commit(a: MemoryDriver, b: MemoryDriver, seqs: number[], len: (s: number) => number): void {
  for (const s of seqs) {
    const f = testFrame(a, b, s, len(s));
    const off = a.txReserve(f.length);
    expect(off).toBeGreaterThanOrEqual(0);
    a.txSpace.buf.set(f, off);
  }
  a.txCommit();
}

function seqOf(buf: Uint8Array, off: number): number {
  return new DataView(buf.buffer, buf.byteOffset + off).getUint32(18);
}

test('committed frames arrive as a run: rxRun gives their pairs, rxBurst gives views, in order with txBurst frames', () => {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, bandwidthBps: 0, faults: { aToB: { delayNs: 500 } } });
  const { a, b } = link;
  expect(hasRunReceive(b)).toBe(true);
  const len = (s: number): number => 60 + ((s * 37) % 900);
  commit(a, b, [0, 1, 2, 3, 4], len);
  a.txBurst([testFrame(a, b, 5, 100)]); // a frame of its own, after the run
  commit(a, b, [6, 7, 8], len);
  clock.runUntilIdle();
  expect(b.rxPending).toBe(9);
  const desc = new Uint32Array(8);
  // The first run, in pieces of up to 4 (desc has room for 4 pairs).
  expect(b.rxRun(64, desc)).toBe(4);
  const got: number[] = [];
  for (let i = 0; i < 4; i++) {
    expect(desc[2 * i + 1]).toBe(len(i));
    got.push(seqOf(b.rxRunBuffer, desc[2 * i]!));
  }
  expect(b.rxRun(64, desc)).toBe(1);
  got.push(seqOf(b.rxRunBuffer, desc[0]!));
  // Next comes a frame of its own: not a run.
  expect(b.rxRun(64, desc)).toBe(0);
  const views = b.rxBurst(2); // frame 5, then the first frame of the second run as a view
  got.push(...views.map((f) => seqOf(f, 0)));
  expect(b.rxRun(64, desc)).toBe(2);
  for (let i = 0; i < 2; i++) got.push(seqOf(b.rxRunBuffer, desc[2 * i]!));
  expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  expect(b.rxPending).toBe(0);
  expect(b.rxRun(64, desc)).toBe(0);
  expect(b.rxBurst(64)).toEqual([]);
  expect(b.stats.rxFrames).toBe(9);
  expect(a.stats.txFrames).toBe(9);
  link.close();
});

test('a run larger than the room left in the receive ring is cut, and the rest counted as dropped', () => {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, bandwidthBps: 0, rxRing: 5 });
  const { a, b } = link;
  commit(a, b, [0, 1, 2], () => 80);
  commit(a, b, [3, 4, 5, 6], () => 80);
  clock.runUntilIdle();
  expect(b.rxPending).toBe(5);
  expect(b.stats.rxDropped).toBe(2);
  expect(b.rxBurst(64).map((f) => seqOf(f, 0))).toEqual([0, 1, 2, 3, 4]);
  link.close();
});

test('with a fault, a tap or serialization delay on the way, frames travel one by one (no runs)', () => {
  for (const opts of [{ faults: { aToB: { drop: 0.0001 } } }, { tap: new PcapTap() }, { bandwidthBps: 10e9 }]) {
    const clock = new VirtualClock();
    const link = createMemoryLink({ clock, seed: 3, bandwidthBps: 0, ...opts });
    const { a, b } = link;
    commit(a, b, [0, 1, 2], () => 90);
    clock.runUntilIdle();
    const desc = new Uint32Array(8);
    expect(b.rxRun(64, desc)).toBe(0);
    expect(b.rxBurst(64).map((f) => seqOf(f, 0))).toEqual([0, 1, 2]);
    link.close();
  }
});

test('rxBurst over runs of one frame each gives views of the frames, not the runs (a driver wrapper reads by rxBurst)', () => {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, bandwidthBps: 0, faults: { aToB: { delayNs: 500 } } });
  const { a, b } = link;
  commit(a, b, [0], () => 100);
  commit(a, b, [1], () => 120);
  clock.runUntilIdle();
  expect(b.rxPending).toBe(2);
  const got = b.rxBurst(8);
  expect(got.map((f) => f instanceof Uint8Array)).toEqual([true, true]);
  expect(got.map((f) => [seqOf(f, 0), f.length])).toEqual([
    [0, 100],
    [1, 120],
  ]);
});
