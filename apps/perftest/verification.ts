/**
 * --verify: each side fills what it sends (or what the peer READs) with a
 * known pattern per slot, and checks what arrives against it: each message as
 * it lands where it can be seen then (SEND, the latency tests' WRITEs and
 * READs), and once the test is over what the peer left in memory (the server
 * of WRITE bandwidth and atomics, the client of READ bandwidth). Both ends
 * must be this implementation.
 */
import { PerftestVerb as Verb } from '../oob/perftest-session';
import type { BufferLayout } from './buffer-layout';
import type { ResolvedConfig } from './config';

/** The verify pattern: byte `j` of slot `s`. */
function patternByte(slot: number, j: number): number {
  return (slot * 29 + j * 7 + 0x5a) & 0xff;
}

/** The `length` pattern bytes of slot `slot`. */
export function pattern(slot: number, length: number): Uint8Array {
  const p = new Uint8Array(length);
  for (let j = 0; j < length; j++) p[j] = patternByte(slot, j);
  return p;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

/** At most this many mismatches are described. */
const MAX_PROBLEMS = 10;

/** The checks of one side and what they found. */
export class Verifier {
  bytesChecked = 0;
  mismatches = 0;
  /** The first mismatches, described. */
  readonly problems: string[] = [];

  constructor(
    private readonly rc: ResolvedConfig,
    private readonly buf: Uint8Array,
    private readonly layout: BufferLayout,
  ) {}

  /** What this side puts in its buffer before the test. */
  fill(): void {
    const { rc, buf, layout } = this;
    const used = Math.min(rc.iters, layout.slots);
    const sender = (rc.role === 'client' && (rc.verb === Verb.WRITE || rc.verb === Verb.SEND)) || (rc.lat && rc.verb !== Verb.READ);
    const readTarget = rc.role === 'server' && rc.verb === Verb.READ;
    if (sender) {
      const n = rc.lat ? 1 : used;
      for (let s = 0; s < n; s++) buf.set(pattern(s, rc.size), s * layout.stride);
    }
    if (readTarget) {
      const n = rc.lat ? 1 : used;
      for (let s = 0; s < n; s++) buf.set(pattern(s, rc.size), layout.half + s * layout.stride);
    }
  }

  /** Checks the bytes at `offset` against `expected`; `byteLen` is what the completion says arrived. */
  check(offset: number, expected: Uint8Array, byteLen: number, what: string): void {
    const got = this.buf.subarray(offset, offset + expected.length);
    this.bytesChecked += expected.length;
    if (byteLen !== this.rc.size && byteLen !== expected.length) {
      this.mismatches++;
      if (this.problems.length < MAX_PROBLEMS) this.problems.push(`${what}: ${byteLen} bytes arrived, expected ${this.rc.size}`);
      return;
    }
    if (!sameBytes(got, expected)) {
      this.mismatches++;
      if (this.problems.length < MAX_PROBLEMS) {
        let at = 0;
        while (at < expected.length && got[at] === expected[at]) at++;
        this.problems.push(`${what}: byte ${at} is 0x${(got[at] ?? 0).toString(16)}, expected 0x${(expected[at] ?? 0).toString(16)}`);
      }
    }
  }

  /** Checks done once the whole test is over (what the server of a one-sided test holds, what READs brought back). */
  checkAtEnd(): void {
    const { rc, buf, layout } = this;
    if (!rc.verify || rc.lat) return;
    const used = Math.min(rc.iters, layout.slots);
    if (rc.role === 'server' && rc.verb === Verb.WRITE) {
      for (let s = 0; s < used; s++) this.check(layout.half + s * layout.stride, pattern(s, rc.size), rc.size, `slot ${s} written by the client`);
    } else if (rc.role === 'client' && rc.verb === Verb.READ) {
      for (let s = 0; s < used; s++) this.check(s * layout.stride, pattern(s, rc.size), rc.size, `slot ${s} read from the server`);
    } else if (rc.role === 'server' && rc.verb === Verb.ATOMIC) {
      const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
      for (let s = 0; s < used; s++) {
        const n = rc.atomicType === 'FETCH_AND_ADD' ? Math.floor(rc.iters / used) + (s < rc.iters % used ? 1 : 0) : 0;
        const got = view.getBigUint64(layout.half + s * layout.stride, true);
        this.bytesChecked += 8;
        if (got !== BigInt(n)) {
          this.mismatches++;
          if (this.problems.length < MAX_PROBLEMS) this.problems.push(`atomic slot ${s} holds ${got}, expected ${n}`);
        }
      }
    }
  }
}
