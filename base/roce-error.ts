/**
 * The base of every typed error roce-ts throws. Each carries a `code`: a
 * stable string of the form `ROCE_ERR_<NAME>` that programs may match on.
 * Each subclass narrows `code` to its own string-literal union, and no two
 * classes share a code, so a code alone says which class threw; the full list
 * with classes and meanings is docs/errors.md.
 *
 * `instanceof` works through `Symbol.for` brands (undici's way), one for each
 * class from the error's own up to `RoceError`, each on its class's prototype,
 * so `e instanceof RoceError` and `e instanceof WireError` both hold, also
 * across duplicate copies of a module (jest sandboxes, two installed versions).
 */

/** The form every error code has. */
export type RoceErrorCodeFormat = `ROCE_ERR_${string}`;

function brandOf(ctor: object): symbol {
  return Symbol.for(`roce-ts.${(ctor as { name: string }).name}`);
}

/**
 * A class's own brand, kept on the class itself, so that `instanceof` need not look it up. A class
 * holds it once the brands of its chain are on their prototypes (`brandChain` sets both).
 */
const OWN_BRAND = Symbol.for('roce-ts.brand');

/**
 * Puts the brand of every class of the chain from `leaf` up to `RoceError` on that class's
 * prototype, so that each error has them by inheritance. Once per class: defining them on each
 * error, with a registry lookup per brand, cost more than the rest of making it.
 */
function brandChain(leaf: object): void {
  for (let c: object | null = leaf; c !== null && c !== Error; c = Object.getPrototypeOf(c) as object | null) {
    const proto = (c as { prototype: object }).prototype;
    const brand = brandOf(c);
    if (!Object.hasOwn(proto, brand)) Object.defineProperty(proto, brand, { value: true });
    if (!Object.hasOwn(c, OWN_BRAND)) Object.defineProperty(c, OWN_BRAND, { value: brand });
  }
}

export interface RoceErrorOptions {
  /**
   * false: capture no stack trace. For errors that describe input data at an offset (a malformed
   * frame), where the decoder noticed it tells nobody anything, and capturing the stack cost
   * 3–15 µs per error (about ten times decoding the frame).
   */
  stack?: boolean;
}

/** The base of every typed error of roce-ts: a `ROCE_ERR_*` code (docs/errors.md) and a message. */
export abstract class RoceError<C extends RoceErrorCodeFormat = RoceErrorCodeFormat> extends Error {
  readonly code: C;

  constructor(code: C, message: string, opts: RoceErrorOptions = {}) {
    // V8 captures a stack of Error.stackTraceLimit frames when an Error is made; 0 captures none.
    // Restored at once: nothing else runs in between.
    const limit = Error.stackTraceLimit;
    if (opts.stack === false) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = new.target.name;
    this.code = code;
    if (!Object.hasOwn(new.target, OWN_BRAND)) brandChain(new.target);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    const brand = (Object.hasOwn(this, OWN_BRAND) ? (this as unknown as Record<symbol, symbol>)[OWN_BRAND] : undefined) ?? brandOf(this);
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
  }
}
