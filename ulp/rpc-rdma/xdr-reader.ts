/**
 * A bounds-checked reader of XDR (RFC 4506): big-endian words, hypers, opaques and strings padded
 * to 4 bytes. Every read past `end` throws `WireError` (Truncated), and an opaque longer than
 * `MAX_OPAQUE` throws BadLength, so a malformed message is a typed error, never a crash.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';

const MAX_OPAQUE = 1 << 20;

export class XdrReader {
  constructor(
    readonly view: DataView,
    public o: number,
    readonly end: number,
  ) {}
  u32(what: string): number {
    need(this.end, this.o, 4, what);
    const v = this.view.getUint32(this.o);
    this.o += 4;
    return v;
  }
  u64(what: string): bigint {
    need(this.end, this.o, 8, what);
    const v = this.view.getBigUint64(this.o);
    this.o += 8;
    return v;
  }
  skip(n: number, what: string): void {
    need(this.end, this.o, n, what);
    this.o += n;
  }
  /** An XDR opaque<> (length, bytes, zero padding to 4); with `moved`, only its length is inline (the bytes travel in a chunk). */
  opaque(what: string, moved = false): Uint8Array {
    const at = this.o;
    const len = this.u32(`${what}'s length`);
    if (len > MAX_OPAQUE) throw new WireError(WireErrorCode.BadLength, at, `${what} of ${len} bytes`);
    if (moved) return new Uint8Array(0);
    const padded = (len + 3) & ~3;
    need(this.end, this.o, padded, what);
    const b = new Uint8Array(this.view.buffer, this.view.byteOffset + this.o, len);
    this.o += padded;
    return b;
  }
  /** An XDR string<> as text (UTF-8, as NFSv4's utf8str and component4 are). */
  text(what: string): string {
    return Buffer.from(this.opaque(what)).toString('utf8');
  }
  /** A counted array's count, bounded by `max` elements. */
  count(what: string, max: number): number {
    const n = this.u32(what);
    if (n > max) throw new WireError(WireErrorCode.BadLength, this.o - 4, `${what}: ${n} elements`);
    return n;
  }
}
