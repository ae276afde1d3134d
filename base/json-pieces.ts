/**
 * `JSON.stringify(value)` written in pieces: an object's properties one by one, and the elements of
 * its array properties one by one, so that no single string holds the whole text. V8 caps a string
 * at about 512 M characters, and a report that lists millions of items (roce analyze --json on a
 * capture of millions of messages) is longer than that: stringified whole, it throws a RangeError.
 * The pieces, joined, are exactly what `JSON.stringify(value)` returns.
 */

import { ProgrammingError, ProgrammingErrorCode } from './programming-error';

/**
 * A list given as its items' texts, in order, made earlier (a list kept outside the heap, read
 * back from a SortedSpool). In a value written by `writeJsonPieces` the texts are JSON, and the list
 * goes out as `[t1,t2,...]` without its items being objects again; `roce analyze`'s text report
 * takes one of its lines the same way. `JSON.stringify` of it is a programming error.
 */
export class TextList {
  constructor(
    /** The items' texts, in order (called once, when the list is written). */
    readonly texts: () => Iterable<string>,
    readonly length: number,
  ) {}

  toJSON(): never {
    throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a TextList is written by writeJsonPieces or a report writer, not JSON.stringify');
  }
}

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
  // Only plain objects are taken apart: JSON.stringify treats others (boxed primitives, toJSON) its own way.
  const isPlainObject = (v: unknown): v is Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
    const proto = Object.getPrototypeOf(v) as unknown;
    return proto === Object.prototype || proto === null;
  };
  const array = (a: readonly unknown[]): void => {
    put('[');
    // JSON.stringify writes null for an element it cannot represent (undefined, a function).
    for (let i = 0; i < a.length && !halted; i++) put(`${i > 0 ? ',' : ''}${whole(a[i]) ?? 'null'}`);
    put(']');
  };
  const texts = (list: TextList): void => {
    put('[');
    let i = 0;
    for (const t of list.texts()) {
      if (halted) break;
      put(`${i++ > 0 ? ',' : ''}${t}`);
    }
    put(']');
  };
  // Objects are written property by property at any depth, so a list deep in the value (a report
  // inside an event) is written in pieces too; the text is the same as JSON.stringify's.
  const object = (o: Record<string, unknown>): void => {
    put('{');
    let first = true;
    for (const [k, v] of Object.entries(o)) {
      if (halted) break;
      const key = `${first ? '' : ','}${JSON.stringify(k)}:`;
      if (v instanceof TextList) {
        put(key);
        texts(v);
      } else if (Array.isArray(v)) {
        put(key);
        array(v);
      } else if (isPlainObject(v)) {
        put(key);
        object(v);
      } else {
        const text = whole(v);
        // A property JSON.stringify leaves out (undefined, a function, a symbol) is left out here too.
        if (text === undefined) continue;
        put(`${key}${text}`);
      }
      first = false;
    }
    put('}');
  };
  if (value instanceof TextList) texts(value);
  else if (Array.isArray(value)) array(value);
  else if (isPlainObject(value)) object(value);
  else {
    const text = whole(value);
    if (text !== undefined) put(text);
  }
  if (parts.length > 0 && !halted) write(parts.join(''));
}
