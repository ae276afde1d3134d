/**
 * `JSON.stringify(value)` written in pieces: an object's properties one by one, and the elements of
 * its array properties one by one, so that no single string holds the whole text. V8 caps a string
 * at about 512 M characters, and a report that lists millions of items (roce analyze --json on a
 * capture of millions of messages) is longer than that: stringified whole, it throws a RangeError.
 * The pieces, joined, are exactly what `JSON.stringify(value)` returns.
 */

/** Pieces are gathered up to about this many characters before `write` is called. */
const PIECE_CHARS = 1 << 20;

/**
 * Writes `JSON.stringify(value)` through `write`, in pieces of about `PIECE_CHARS` characters at
 * most (one item may be longer). Once `stopped` says so (checked after each write: the reader has
 * gone), nothing more is made.
 */
export function writeJsonPieces(value: unknown, write: (text: string) => void, stopped: () => boolean = () => false): void {
  let parts: string[] = [];
  let size = 0;
  let halted = false;
  const put = (s: string): void => {
    if (halted) return;
    parts.push(s);
    size += s.length;
    if (size >= PIECE_CHARS) {
      write(parts.join(''));
      parts = [];
      size = 0;
      halted = stopped();
    }
  };
  const whole = (v: unknown): string | undefined => JSON.stringify(v);
  const isPlainObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
  const array = (a: readonly unknown[]): void => {
    put('[');
    // JSON.stringify writes null for an element it cannot represent (undefined, a function).
    for (let i = 0; i < a.length && !halted; i++) put(`${i > 0 ? ',' : ''}${whole(a[i]) ?? 'null'}`);
    put(']');
  };
  if (Array.isArray(value)) array(value);
  else if (isPlainObject(value)) {
    put('{');
    let first = true;
    for (const [k, v] of Object.entries(value)) {
      if (Array.isArray(v)) {
        put(`${first ? '' : ','}${JSON.stringify(k)}:`);
        array(v);
      } else {
        const text = whole(v);
        // A property JSON.stringify leaves out (undefined, a function, a symbol) is left out here too.
        if (text === undefined) continue;
        put(`${first ? '' : ','}${JSON.stringify(k)}:${text}`);
      }
      first = false;
    }
    put('}');
  } else {
    const text = whole(value);
    if (text !== undefined) put(text);
  }
  if (parts.length > 0 && !halted) write(parts.join(''));
}
