/** Gather and scatter across SGE segments: windows inside one segment, copies across several, bounds. */
import { gatherFrom, resolveSges, scatterTo, segOf, segsLength, windowAt, type Seg } from '../../stack/dma';
import { MrTable, MrFault, ProtectionDomain } from '../../stack/memory-region';
import { Access } from '../../stack/access-flags';

/** Three segments of lengths 5, 1 and 40 at odd places of two buffers. */
function layout(): { a: Uint8Array; b: Uint8Array; segs: Seg[]; flat: number[] } {
  const a = Uint8Array.from({ length: 64 }, (_, i) => i);
  const b = Uint8Array.from({ length: 64 }, (_, i) => 200 - i);
  const segs: Seg[] = [
    { buf: a, off: 3, len: 5 },
    { buf: b, off: 60, len: 1 },
    { buf: a, off: 20, len: 40 },
  ];
  const flat = [...a.subarray(3, 8), b[60]!, ...a.subarray(20, 60)];
  return { a, b, segs, flat };
}

test('gather copies any range of the concatenation, across segment boundaries', () => {
  const { segs, flat } = layout();
  expect(segsLength(segs)).toBe(46);
  for (let off = 0; off <= 46; off++) {
    for (const len of [0, 1, 4, 5, 6, 17, 46 - off]) {
      if (off + len > 46) continue;
      expect(Array.from(gatherFrom(segs, off, len))).toEqual(flat.slice(off, off + len));
    }
  }
  // Past the end: what exists, no more.
  expect(Array.from(gatherFrom(segs, 44, 10))).toEqual(flat.slice(44));
});

test('a window is given only for a range inside one segment, pointing at its bytes', () => {
  const { a, segs } = layout();
  const w = windowAt(segs, 7, 30);
  expect(w).not.toBeNull();
  expect(w!.buf).toBe(a);
  expect(w!.at).toBe(21); // byte 7 of the concatenation is byte 1 of the third segment, a[21]
  expect(windowAt(segs, 0, 5)).toMatchObject({ buf: a, at: 3 });
  expect(windowAt(segs, 4, 2)).toBeNull(); // spans the first two segments
  expect(windowAt(segs, 40, 10)).toBeNull(); // runs past the end
  expect(windowAt([], 0, 1)).toBeNull();
});

test('scatter writes across segments from a source window and says when it does not fit', () => {
  const { a, b, segs } = layout();
  const src = Uint8Array.from({ length: 50 }, (_, i) => 100 + i);
  expect(scatterTo(segs, 2, src, 10, 30)).toBe(true);
  expect(Array.from(gatherFrom(segs, 2, 30))).toEqual(Array.from(src.subarray(10, 40)));
  expect(a[2]).toBe(2); // before the first segment: untouched
  expect(b[61]).toBe(139); // after the second segment: untouched
  const before = gatherFrom(segs, 0, 46);
  expect(scatterTo(segs, 40, src, 0, 10)).toBe(false); // 6 bytes fit, 4 do not
  expect(Array.from(gatherFrom(segs, 40, 6))).toEqual(Array.from(src.subarray(0, 6)));
  expect(Array.from(gatherFrom(segs, 0, 40))).toEqual(Array.from(before.subarray(0, 40)));
  expect(scatterTo([segOf(new Uint8Array(4))], 0, src.subarray(0, 4))).toBe(true);
});

test('SGEs resolve to segments of their regions, and a bad one to its fault', () => {
  const mrs = new MrTable();
  const pd = new ProtectionDomain();
  const buf = new Uint8Array(4096);
  const mr = mrs.register(pd, buf, Access.LOCAL_WRITE);
  const r = resolveSges(mrs, pd, [mr.sge(100, 50), mr.sge(0, 0), mr.sge(4000, 96)], true);
  expect(r.fault).toBe(MrFault.OK);
  expect(r.segs).toEqual([
    { buf, off: 100, len: 50 },
    { buf, off: 4000, len: 96 },
  ]);
  expect(resolveSges(mrs, pd, [mr.sge(4000, 97)], false).fault).toBe(MrFault.OUT_OF_BOUNDS);
  expect(resolveSges(mrs, new ProtectionDomain(), [mr.sge(0, 1)], false).fault).toBe(MrFault.BAD_PD);
});
