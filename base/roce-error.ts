/**
 * The base of every typed error roce-ts throws. Each carries a `code`: a
 * stable string of the form `ROCE_ERR_<NAME>` that programs may match on.
 * Each subclass narrows `code` to its own string-literal union, and no two
 * classes share a code, so a code alone says which class threw; the full list
 * with classes and meanings is docs/errors.md.
 *
 * `instanceof` works through `Symbol.for` brands (undici's way), one for each
 * class from the error's own up to `RoceError`, so `e instanceof RoceError`
 * and `e instanceof WireError` both hold, also across duplicate copies of a
 * module (jest sandboxes, two installed versions).
 */

/** The form every error code has. */
export type RoceErrorCodeFormat = `ROCE_ERR_${string}`;

function brandOf(ctor: object): symbol {
  return Symbol.for(`roce-ts.${(ctor as { name: string }).name}`);
}

export abstract class RoceError<C extends RoceErrorCodeFormat = RoceErrorCodeFormat> extends Error {
  readonly code: C;

  constructor(code: C, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    // Brand every class of the chain below Error: the leaf, its parents, RoceError.
    for (let c: object | null = new.target; c !== null && c !== Error; c = Object.getPrototypeOf(c) as object | null) {
      Object.defineProperty(this, brandOf(c), { value: true });
    }
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brandOf(this)] === true;
  }
}
