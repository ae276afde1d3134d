/**
 * The base of roce-ts's typed errors. `instanceof` works through a
 * `Symbol.for` brand named after the class (undici's way), so it holds across
 * duplicate copies of a module (jest sandboxes, two installed versions).
 */
function brandOf(ctor: abstract new (...args: never[]) => unknown): symbol {
  return Symbol.for(`roce-ts.${ctor.name}`);
}

export abstract class BrandedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
    Object.defineProperty(this, brandOf(new.target), { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brandOf(this)] === true;
  }
}
