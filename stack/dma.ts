/**
 * Moving bytes between packets and registered memory: SGE lists resolved to
 * segments of region buffers (checked against keys, bounds, PD and access), and
 * gather/scatter at a byte offset across those segments.
 *
 * A segment names its bytes as (buffer, offset, length) rather than as a view:
 * creating a `Uint8Array` view costs about 50 ns, more than the rest of a small
 * packet's copy, so views are made only where a copy of more than a few bytes needs one.
 */
import type { Sge } from './sge';
import { type MrLookup, type ProtectionDomain, MrFault } from './memory-region';
import { copyBytes } from '../packets/bytes';

/** `len` bytes at `off` of a region's buffer. */
export interface Seg {
  readonly buf: Uint8Array;
  readonly off: number;
  readonly len: number;
}

export interface Resolved {
  fault: MrFault;
  segs: Seg[];
}

const NONE: Seg[] = [];

/** Resolves an SGE list to region segments; `write` when the stack will write into them. */
export function resolveSges(mrs: MrLookup, pd: ProtectionDomain, sgList: readonly Sge[], write: boolean): Resolved {
  const segs: Seg[] = [];
  for (const s of sgList) {
    if (s.length === 0) continue;
    const hit = mrs.checkLocal(pd, s, write);
    if (hit.fault !== MrFault.OK || hit.mr === null) return { fault: hit.fault, segs: NONE };
    segs.push({ buf: hit.mr.buffer, off: hit.offset, len: s.length });
  }
  return { fault: MrFault.OK, segs };
}

/** One segment over the whole of `bytes` (inline data). */
export function segOf(bytes: Uint8Array): Seg {
  return { buf: bytes, off: 0, len: bytes.length };
}

/** Total bytes of a segment list. */
export function segsLength(segs: readonly Seg[]): number {
  let n = 0;
  for (const s of segs) n += s.len;
  return n;
}

/** A run of bytes inside one buffer; `windowAt` answers with one reused object. */
export interface Window {
  buf: Uint8Array;
  at: number;
}

const WINDOW: Window = { buf: new Uint8Array(0), at: 0 };

/**
 * Where `len` bytes from `offset` of the concatenated segments lie, when they lie in one segment:
 * the buffer and the index in it (valid until the next call). Null when they span segments.
 */
export function windowAt(segs: readonly Seg[], offset: number, len: number): Window | null {
  let off = offset;
  for (const s of segs) {
    if (off < s.len) {
      if (off + len > s.len) return null;
      WINDOW.buf = s.buf;
      WINDOW.at = s.off + off;
      return WINDOW;
    }
    off -= s.len;
  }
  return null;
}

/**
 * Copies `len` bytes between `offset` of the concatenated segments and `other[otherOff..]`: into the
 * segments when `into`, out of them otherwise. Returns how many bytes the segments had room for.
 */
function move(segs: readonly Seg[], offset: number, other: Uint8Array, otherOff: number, len: number, into: boolean): number {
  let off = offset;
  let done = 0;
  for (const s of segs) {
    if (done >= len) break;
    if (off >= s.len) {
      off -= s.len;
      continue;
    }
    const n = Math.min(len - done, s.len - off);
    if (into) copyBytes(s.buf, s.off + off, other, otherOff + done, n);
    else copyBytes(other, otherOff + done, s.buf, s.off + off, n);
    done += n;
    off = 0;
  }
  return done;
}

/** A copy of `len` bytes from `offset` of the concatenated segments (the bytes past their end read as nothing). */
export function gatherFrom(segs: readonly Seg[], offset: number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  const done = move(segs, offset, out, 0, len, false);
  return done === len ? out : out.subarray(0, done);
}

/**
 * Writes `len` bytes of `src` from `srcOff` at `offset` of the concatenated segments.
 * Returns false when they do not fit (nothing past the end is written).
 */
export function scatterTo(segs: readonly Seg[], offset: number, src: Uint8Array, srcOff = 0, len = src.length - srcOff): boolean {
  return move(segs, offset, src, srcOff, len, true) === len;
}
