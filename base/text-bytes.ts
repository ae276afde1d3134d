/**
 * Text written straight into UTF-8 bytes, for output that is made of many small pieces
 * (`roce decode` prints a line or a JSON object per frame).
 *
 * Building a JavaScript string per line and encoding it on write costs more than decoding the
 * frame: template strings, `padStart`, `toFixed` and `JSON.stringify` allocate, and one non-ASCII
 * character (the summary's arrow) turns the whole line into a two-byte string whose UTF-8 encoding
 * is slow. Here each piece goes into a fixed chunk; a full chunk is handed to `sink`, which says
 * whether it is done with it (a synchronous write): then the chunk is written again from the
 * start, else a fresh one is started and the sink keeps the one it was given (an asynchronous
 * write). Reusing it keeps memory flat: a fresh 64 KiB chunk per 100 JSON lines is memory outside
 * the JavaScript heap that the collector frees late.
 *
 * Every method writes exactly what the named JavaScript conversion would produce (`String(n)`,
 * `JSON.stringify(s)`), taking a fast path only where it is provably the same and the conversion
 * itself otherwise; `seconds` and `nanoseconds` write the decimal digits of two integers.
 */

const DIGIT_0 = 0x30;
const ENCODER = new TextEncoder();

/** A string as UTF-8 bytes, for constant pieces encoded once and copied with `TextBytes.bytes`. */
export function utf8(text: string): Uint8Array {
  return ENCODER.encode(text);
}

/**
 * Characters of a string that `TextBytes.text` copies one at a time, at most: past about thirty
 * one call into `TextEncoder.encodeInto` costs less (about 170 ns against 7 ns a character).
 */
const LOOP_MAX_CHARS = 32;
const SPACE = 0x20;
const QUOTE = 0x22;
const HEX = '0123456789abcdef';
/** 10^i for i = 0…9. */
const POW10: readonly number[] = Array.from({ length: 10 }, (_, i) => 10 ** i);

export class TextBytes {
  private chunk: Uint8Array;
  private pos = 0;
  private readonly encoder = new TextEncoder();

  /**
   * @param sink receives each full chunk (and the last one on `end`); true when it is done with the
   *   chunk (it may be reused), else it owns the chunk afterwards.
   * @param chunkSize bytes per chunk; a single piece longer than this gets a chunk of its own size.
   * @param fresh where a new chunk of `chunkSize` bytes comes from (default: a new allocation); a
   *   writer whose chunks come back to it, as `roce decode`'s worker threads', hands out those
   */
  constructor(
    // biome-ignore lint/suspicious/noConfusingVoidType: the sink is a stream's write (false: wait for 'drain') or any callback that returns nothing
    private readonly sink: (chunk: Uint8Array) => boolean | void,
    private readonly chunkSize = 1 << 16,
    private readonly fresh: (size: number) => Uint8Array = (size) => new Uint8Array(size),
  ) {
    this.chunk = fresh(chunkSize);
  }

  /** Bytes written since the last hand-over to the sink. */
  get pending(): number {
    return this.pos;
  }

  /** Hands what has been written to the sink (nothing when empty). */
  end(): void {
    if (this.pos === 0) return;
    const full = this.chunk.subarray(0, this.pos);
    this.pos = 0;
    if (this.sink(full) !== true || this.chunk.length !== this.chunkSize) this.chunk = this.fresh(this.chunkSize);
  }

  /** Makes room for `n` more bytes. */
  private room(n: number): void {
    if (this.pos + n <= this.chunk.length) return;
    this.end();
    if (n > this.chunk.length) this.chunk = new Uint8Array(n);
  }

  /** One byte (an ASCII character code). */
  byte(b: number): void {
    this.room(1);
    this.chunk[this.pos++] = b;
  }

  /** Bytes as they are. */
  bytes(b: Uint8Array): void {
    const n = b.length;
    this.room(n);
    if (n > 16) this.chunk.set(b, this.pos);
    else {
      // A short copy is cheaper as a loop than as a call into `set`.
      const c = this.chunk;
      const p = this.pos;
      for (let i = 0; i < n; i++) c[p + i] = b[i] as number;
    }
    this.pos += n;
  }

  /** A string, UTF-8 encoded (a short one of ASCII is copied a character at a time). */
  text(s: string): void {
    const n = s.length;
    if (n > LOOP_MAX_CHARS && this.pos + n * 3 <= this.chunk.length) {
      // Where the encoder's worst case fits, so a chunk is handed over where the loop would hand it.
      this.pos += this.encoder.encodeInto(s, this.chunk.subarray(this.pos)).written;
      return;
    }
    this.room(n);
    const c = this.chunk;
    let p = this.pos;
    for (let i = 0; i < n; i++) {
      const code = s.charCodeAt(i);
      if (code >= 0x80) {
        this.pos = p;
        this.utf8(s.slice(i));
        return;
      }
      c[p++] = code;
    }
    this.pos = p;
  }

  private utf8(s: string): void {
    this.room(s.length * 3);
    this.pos += this.encoder.encodeInto(s, this.chunk.subarray(this.pos)).written;
  }

  /** `String(n)` for an integer 0 ≤ n ≤ 2^53 - 1; any other number as `String(n)`. */
  uint(n: number): void {
    if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) {
      this.text(String(n));
      return;
    }
    const digits = this.digitsOf(n);
    this.room(digits);
    this.put(n, digits);
  }

  /** A 32-bit IPv4 address in dotted decimal, as packets/bytes.ts `ipv4ToString` writes it. */
  ipv4(a: number): void {
    this.room(15);
    const c = this.chunk;
    let p = this.pos;
    for (let shift = 24; shift >= 0; shift -= 8) {
      const b = (a >>> shift) & 0xff;
      if (b >= 100) {
        const h = (b / 100) | 0;
        c[p++] = DIGIT_0 + h;
        const t = ((b - h * 100) / 10) | 0;
        c[p++] = DIGIT_0 + t;
      } else if (b >= 10) c[p++] = DIGIT_0 + ((b / 10) | 0);
      c[p++] = DIGIT_0 + (b % 10);
      if (shift !== 0) c[p++] = 0x2e; // '.'
    }
    this.pos = p;
  }

  /** `String(n).padStart(width, ' ')` for an integer 0 ≤ n ≤ 2^53 - 1. */
  padUint(n: number, width: number): void {
    if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) {
      this.text(String(n).padStart(width, ' '));
      return;
    }
    const digits = this.digitsOf(n);
    this.spaces(width - digits);
    this.room(digits);
    this.put(n, digits);
  }

  /** A JSON number: `JSON.stringify(x)` (`null` for NaN and the infinities). */
  jsonNumber(x: number): void {
    if (Number.isSafeInteger(x)) {
      if (x < 0) {
        this.byte(0x2d);
        this.uint(-x);
      } else this.uint(x);
    } else this.text(Number.isFinite(x) ? String(x) : 'null');
  }

  /**
   * A time of `sec` whole seconds (rounded down: negative before zero) and `nsec` nanoseconds past
   * them (0 ≤ nsec < 10^9), as decimal seconds with `digits` decimals (0-9), right-aligned in
   * `width`: `1705320000.000001184`, `0.000002`, `-0.000001`. Nanoseconds with nonzero digits beyond
   * `digits` are printed with all 9, so no digit is ever dropped. Nothing is rounded: the digits are
   * those of the two integers.
   */
  seconds(sec: number, nsec: number, digits: number, width = 0): void {
    if (digits === 9 && sec >= 0 && width === 0) {
      // The commonest case (a ns capture's time since the epoch or since its first frame).
      const wd = this.digitsOf(sec);
      this.room(wd + 10);
      this.put(sec, wd);
      this.chunk[this.pos++] = 0x2e; // '.'
      this.put(nsec, 9);
      return;
    }
    let whole = sec;
    let frac = nsec;
    const negative = sec < 0;
    if (negative) {
      // sec + nsec/10^9 = −((−sec − 1) + (10^9 − nsec)/10^9) when nsec > 0.
      if (frac === 0) whole = -sec;
      else {
        whole = -sec - 1;
        frac = 1e9 - frac;
      }
    }
    let d = digits;
    let shown = frac;
    if (d !== 9) {
      const unit = POW10[9 - d];
      if (unit !== undefined && frac % unit === 0) shown = frac / unit;
      else d = 9;
    }
    const wholeDigits = this.digitsOf(whole);
    const len = (negative ? 1 : 0) + wholeDigits + (d > 0 ? d + 1 : 0);
    if (width > len) this.spaces(width - len);
    this.room(len);
    if (negative) this.chunk[this.pos++] = 0x2d; // '-'
    this.put(whole, wholeDigits);
    if (d > 0) {
      this.chunk[this.pos++] = 0x2e; // '.'
      this.put(shown, d);
    }
  }

  /**
   * The same time as a JSON integer of nanoseconds, exact at any size: below 2^53 it is
   * `jsonNumber(sec * 10^9 + nsec)`; beyond, its digits are written from the two integers.
   */
  nanoseconds(sec: number, nsec: number): void {
    // |sec| < 9·10^6 keeps sec · 10^9 + nsec below 2^53 ≈ 9.007·10^15.
    if (sec >= 0 && sec < 9e6) {
      const n = sec * 1e9 + nsec;
      const digits = this.digitsOf(n);
      this.room(digits);
      this.put(n, digits);
      return;
    }
    if (sec > -9e6 && sec < 0) {
      this.jsonNumber(sec * 1e9 + nsec);
      return;
    }
    let whole = sec;
    let frac = nsec;
    if (sec < 0) {
      this.byte(0x2d);
      if (frac === 0) whole = -sec;
      else {
        whole = -sec - 1;
        frac = 1e9 - frac;
      }
    }
    this.uint(whole);
    this.room(9);
    this.put(frac, 9);
  }

  /** `'0x' + (n >>> 0).toString(16).padStart(digits, '0')` for digits ≥ the value's own. */
  hex(n: number, digits: number): void {
    let v = n >>> 0;
    let own = 1;
    for (let rest = v >>> 4; rest !== 0; rest >>>= 4) own++;
    const width = Math.max(own, digits);
    this.room(width + 2);
    const c = this.chunk;
    c[this.pos] = DIGIT_0;
    c[this.pos + 1] = 0x78; // 'x'
    const start = this.pos + 2;
    for (let i = start + width - 1; i >= start; i--) {
      c[i] = HEX.charCodeAt(v & 0xf);
      v >>>= 4;
    }
    this.pos = start + width;
  }

  /** `JSON.stringify(s)`. */
  jsonString(s: string): void {
    const n = s.length;
    this.room(n + 2);
    const c = this.chunk;
    let p = this.pos;
    c[p++] = QUOTE;
    for (let i = 0; i < n; i++) {
      const code = s.charCodeAt(i);
      // Control characters, '"', '\' and anything beyond ASCII take JSON.stringify's own path.
      if (code < SPACE || code === QUOTE || code === 0x5c || code >= 0x7f) {
        this.text(JSON.stringify(s));
        return;
      }
      c[p++] = code;
    }
    c[p++] = QUOTE;
    this.pos = p;
  }

  /** `n` spaces (none when n ≤ 0). */
  spaces(n: number): void {
    if (n <= 0) return;
    this.room(n);
    const c = this.chunk;
    const end = this.pos + n;
    // A few spaces are cheaper as a loop than as a call into `fill`.
    if (n > 16) c.fill(SPACE, this.pos, end);
    else for (let i = this.pos; i < end; i++) c[i] = SPACE;
    this.pos = end;
  }

  private digitsOf(n: number): number {
    if (n < 1e5) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 1e4 ? 4 : 5;
    if (n < 1e10) return n < 1e6 ? 6 : n < 1e7 ? 7 : n < 1e8 ? 8 : n < 1e9 ? 9 : 10;
    let d = 11;
    for (let rest = Math.floor(n / 1e11); rest >= 1; rest = Math.floor(rest / 10)) d++;
    return d;
  }

  /** Writes the integer 0 ≤ n < 10^digits as exactly `digits` decimal digits (room already made). */
  private put(n: number, digits: number): void {
    const c = this.chunk;
    const end = this.pos + digits;
    if (n < 0x80000000) {
      let v = n | 0;
      for (let i = end - 1; i >= this.pos; i--) {
        const q = (v / 10) | 0;
        c[i] = DIGIT_0 + (v - q * 10);
        v = q;
      }
    } else {
      let v = n;
      for (let i = end - 1; i >= this.pos; i--) {
        const q = Math.floor(v / 10);
        c[i] = DIGIT_0 + (v - q * 10);
        v = q;
      }
    }
    this.pos = end;
  }
}

/** The text `write` produces, as a string (for callers that want one line, not a stream). */
export function textOf(write: (t: TextBytes) => void): string {
  const parts: Uint8Array[] = [];
  const t = new TextBytes((chunk) => {
    parts.push(chunk);
  }, 256);
  write(t);
  t.end();
  const decoder = new TextDecoder();
  let s = '';
  for (let i = 0; i < parts.length; i++) s += decoder.decode(parts[i], { stream: i < parts.length - 1 });
  return s;
}
