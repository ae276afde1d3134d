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
    private rc: ResolvedConfig,
    private readonly buf: Uint8Array,
    private layout: BufferLayout,
  ) {}

  /** perftest -a: the checks of the next size (what was checked so far stays counted). */
  retarget(rc: ResolvedConfig, layout: BufferLayout): void {
    this.rc = rc;
    this.layout = layout;
  }

  /** What this side puts in its buffer before the test (in the area of every QP). */
  fill(): void {
    const { rc, buf, layout } = this;
    const used = Math.min(rc.iters, layout.slots);
    // -b: both sides send, and both are the target of the peer's requests.
    const sends = rc.role === 'client' || rc.duplex || rc.lat;
    const serves = rc.role === 'server' || rc.duplex;
    const sender = sends && (rc.verb === Verb.WRITE || rc.verb === Verb.SEND);
    const readTarget = serves && rc.verb === Verb.READ;
    const n = rc.lat ? 1 : used;
    for (let q = 0; q < layout.qps; q++) {
      for (let s = 0; s < n; s++) {
        if (sender) buf.set(pattern(s, rc.size), layout.sendBase(q) + s * layout.stride);
        if (readTarget) buf.set(pattern(s, rc.size), layout.targetBase(q) + s * layout.stride);
      }
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

  /** Checks an 8-byte value (what an atomic returned or left). */
  checkValue(got: bigint, expected: bigint, what: string): void {
    this.bytesChecked += 8;
    if (got !== expected) {
      this.mismatches++;
      if (this.problems.length < MAX_PROBLEMS) this.problems.push(`${what} ${got}, expected ${expected}`);
    }
  }

  /** Checks done once the whole test is over (what the server of a one-sided test holds, what READs brought back), for every QP. */
  checkAtEnd(): void {
    const { rc, layout, buf } = this;
    if (!rc.verify) return;
    if (rc.lat) {
      // ib_atomic_lat: every atomic went to the server's first slot.
      if (rc.verb === Verb.ATOMIC && rc.role === 'server') {
        const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
        this.checkValue(
          view.getBigUint64(layout.targetBase(0), true),
          BigInt(rc.atomicType === 'FETCH_AND_ADD' ? rc.iters : 0),
          "the slot the client's atomics went to holds",
        );
      }
      return;
    }
    for (let q = 0; q < layout.qps; q++) this.checkQpAtEnd(q, layout.qps > 1 ? `QP ${q} ` : '');
  }

  private checkQpAtEnd(q: number, qpName: string): void {
    const { rc, buf, layout } = this;
    const used = Math.min(rc.iters, layout.slots);
    const serves = rc.role === 'server' || rc.duplex;
    const sends = rc.role === 'client' || rc.duplex;
    if (serves && rc.verb === Verb.WRITE) {
      for (let s = 0; s < used; s++)
        this.check(layout.targetBase(q) + s * layout.stride, pattern(s, rc.size), rc.size, `${qpName}slot ${s} written by the client`);
    } else if (sends && rc.verb === Verb.READ) {
      for (let s = 0; s < used; s++)
        this.check(layout.sendBase(q) + s * layout.stride, pattern(s, rc.size), rc.size, `${qpName}slot ${s} read from the server`);
    } else if (serves && rc.verb === Verb.ATOMIC) {
      const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
      for (let s = 0; s < used; s++) {
        const n = rc.atomicType === 'FETCH_AND_ADD' ? Math.floor(rc.iters / used) + (s < rc.iters % used ? 1 : 0) : 0;
        this.checkValue(view.getBigUint64(layout.targetBase(q) + s * layout.stride, true), BigInt(n), `${qpName}atomic slot ${s} holds`);
      }
    }
  }
}
