/**
 * Where the bytes a READ returns come from, in a responder replay. The capture shows how bytes got
 * into the responder's memory only when a WRITE it holds put them there; an application can change
 * its own memory at any time without a frame on the wire (rping rewrites its buffer between
 * iterations). So the stack's memory is given, just before each READ is fed, what the real
 * responder returned for it, except the bytes a captured WRITE wrote: those the stack wrote itself,
 * and the READ data is checked against them. Where two READs of the same bytes returned different
 * data with no WRITE between them, the memory changed outside the capture: reported as unverifiable.
 */
import { OpFlag } from '../../packets/opcodes';
import { psnAdd } from '../../base/psn';
import type { CapturedPacket } from './conversation';
import type { CapturedIndex } from './captured-index';
import { type Difference, DiffClass } from './differences';

type Span = [bigint, bigint];

/** Adds [lo, hi) to a sorted list of disjoint spans, merging. */
function addSpan(list: Span[], lo: bigint, hi: bigint): void {
  if (hi <= lo) return;
  const out: Span[] = [];
  let a = lo;
  let b = hi;
  for (const [x, y] of list) {
    if (y < a || x > b) out.push([x, y]);
    else {
      if (x < a) a = x;
      if (y > b) b = y;
    }
  }
  out.push([a, b]);
  out.sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : 0));
  list.splice(0, list.length, ...out);
}

/** The parts of [lo, hi) that `list` covers (inside) or does not (outside). */
function split(list: readonly Span[], lo: bigint, hi: bigint): { inside: Span[]; outside: Span[] } {
  const inside: Span[] = [];
  const outside: Span[] = [];
  let at = lo;
  for (const [x, y] of list) {
    if (y <= at || x >= hi) continue;
    if (x > at) outside.push([at, x]);
    const e = y < hi ? y : hi;
    inside.push([x > at ? x : at, e]);
    at = e;
  }
  if (at < hi) outside.push([at, hi]);
  return { inside, outside };
}

const isReadResponse = (x: CapturedPacket): boolean => ((x.p.info?.flags ?? 0) & OpFlag.READ) !== 0;

export class ReadSource {
  /** Per R_Key, the bytes captured WRITEs put there. */
  private readonly written = new Map<number, Span[]>();
  /** Per R_Key, the bytes given to the stack from captured READ responses. */
  private readonly given = new Map<number, Span[]>();
  /** The WRITE message being fed: its R_Key and the address of its next packet. */
  private write: { rkey: number; va: bigint } | null = null;
  private readonly changed: number[] = [];

  constructor(
    private readonly mrs: ReadonlyMap<number, { lo: bigint; buf: Uint8Array }>,
    private readonly mtu: number,
  ) {}

  /** Request `c` is about to be fed to the stack; `responses` are the real responder's. */
  beforeRequest(c: CapturedPacket, responses: CapturedIndex): void {
    const p = c.p;
    const b = p.bth;
    const f = p.info?.flags ?? 0;
    if (b === null) return;
    if ((f & OpFlag.WRITE) !== 0) {
      if ((f & OpFlag.START) !== 0) this.write = p.reth === null ? null : { rkey: p.reth.rkey, va: p.reth.va };
      const w = this.write;
      if (w !== null) {
        // Only the bytes the capture holds are known (a truncated frame's rest went to the stack as zeros).
        if (p.payloadCaptured === p.payloadLength) addSpan(this.spans(this.written, w.rkey), w.va, w.va + BigInt(p.payloadLength));
        w.va += BigInt(p.payloadLength);
      }
      if ((f & OpFlag.END) !== 0) this.write = null;
      return;
    }
    if ((f & OpFlag.ATOMIC_WRITE) !== 0) {
      // An ATOMIC WRITE's 8 bytes are written as a WRITE's are.
      if (p.reth !== null && p.payloadCaptured === p.payloadLength)
        addSpan(this.spans(this.written, p.reth.rkey), p.reth.va, p.reth.va + BigInt(p.payloadLength));
      return;
    }
    const reth = p.reth;
    if ((f & OpFlag.READ) === 0 || reth === null) return;
    const mr = this.mrs.get(reth.rkey);
    if (mr === undefined) return;
    const n = Math.max(1, Math.ceil(reth.dmaLength / this.mtu));
    const written = this.spans(this.written, reth.rkey);
    const given = this.spans(this.given, reth.rkey);
    for (let i = 0; i < n; i++) {
      const psn = psnAdd(b.psn, i);
      const r = responses.next(psn, c.frame, isReadResponse);
      if (r === undefined) continue;
      const bytes = r.bytes.subarray(r.p.payloadOff, r.p.payloadOff + r.p.payloadCaptured);
      const va = reth.va + BigInt(i * this.mtu);
      for (const [lo, hi] of split(written, va, va + BigInt(bytes.length)).outside) {
        if (lo < mr.lo || hi - mr.lo > BigInt(mr.buf.length)) continue;
        const src = bytes.subarray(Number(lo - va), Number(hi - va));
        const at = Number(lo - mr.lo);
        for (const [x, y] of split(given, lo, hi).inside) {
          const a = Number(x - lo);
          const e = Number(y - lo);
          if (Buffer.compare(mr.buf.subarray(at + a, at + e), src.subarray(a, e)) !== 0) {
            this.changed.push(r.frame);
            break;
          }
        }
        mr.buf.set(src, at);
        addSpan(given, lo, hi);
      }
    }
  }

  /** A capture gap: lost requests may have written anywhere, so no byte is known from a WRITE any more. */
  forget(): void {
    this.written.clear();
    this.write = null;
  }

  private spans(m: Map<number, Span[]>, rkey: number): Span[] {
    let s = m.get(rkey);
    if (s === undefined) m.set(rkey, (s = []));
    return s;
  }

  differences(): Difference[] {
    if (this.changed.length === 0) return [];
    return [
      {
        class: DiffClass.UNVERIFIABLE,
        kind: 'readData',
        psn: null,
        count: this.changed.length,
        frames: this.changed.slice(0, 16),
        expected: 'READ data the capture shows the source of',
        got: `${this.changed.length} READ response(s) return bytes that changed since an earlier READ of them with no WRITE in the capture (the application wrote its memory locally)`,
        rule: 'READ data can be checked only where the capture shows how the bytes got there (an earlier WRITE)',
      },
    ];
  }
}
