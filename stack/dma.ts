/**
 * Moving bytes between packets and registered memory: SGE lists resolved to
 * views of region buffers (checked against keys, bounds, PD and access), and
 * gather/scatter at a byte offset across those views.
 */
import type { Sge } from './types';
import { type MrTable, type ProtectionDomain, MrFault } from './memory-region';

export interface Resolved {
  fault: MrFault;
  segs: Uint8Array[];
}

/** Resolves an SGE list to buffer views; `write` when the stack will write into them. */
export function resolveSges(mrs: MrTable, pd: ProtectionDomain, sgList: readonly Sge[], write: boolean): Resolved {
  const segs: Uint8Array[] = [];
  for (const s of sgList) {
    if (s.length === 0) continue;
    const hit = mrs.checkLocal(pd, s, write);
    if (hit.fault !== MrFault.OK || hit.mr === null) return { fault: hit.fault, segs: [] };
    segs.push(hit.mr.buffer.subarray(hit.offset, hit.offset + s.length));
  }
  return { fault: MrFault.OK, segs };
}

/** `len` bytes from `offset` of the concatenated views: a view when they lie in one segment, else a copy. */
export function gatherFrom(segs: readonly Uint8Array[], offset: number, len: number): Uint8Array {
  let off = offset;
  let i = 0;
  while (i < segs.length && off >= (segs[i] as Uint8Array).length) {
    off -= (segs[i] as Uint8Array).length;
    i++;
  }
  const first = segs[i];
  if (first === undefined) return new Uint8Array(0);
  if (off + len <= first.length) return first.subarray(off, off + len);
  const out = new Uint8Array(len);
  let done = 0;
  while (done < len && i < segs.length) {
    const s = segs[i] as Uint8Array;
    const n = Math.min(len - done, s.length - off);
    out.set(s.subarray(off, off + n), done);
    done += n;
    off = 0;
    i++;
  }
  return out;
}

/** Writes `data` at `offset` of the concatenated views. Returns false when it does not fit. */
export function scatterTo(segs: readonly Uint8Array[], offset: number, data: Uint8Array): boolean {
  let off = offset;
  let i = 0;
  while (i < segs.length && off >= (segs[i] as Uint8Array).length) {
    off -= (segs[i] as Uint8Array).length;
    i++;
  }
  let done = 0;
  while (done < data.length) {
    const s = segs[i];
    if (s === undefined) return false;
    const n = Math.min(data.length - done, s.length - off);
    s.set(data.subarray(done, done + n), off);
    done += n;
    off = 0;
    i++;
  }
  return true;
}
