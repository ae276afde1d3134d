/**
 * A property a fuzz target checks beyond "no untyped exception" was broken: two readers that
 * must agree do not, say. It is deliberately not a `RoceError`, so the fuzzer reports it.
 */
export class FuzzFinding extends Error {
  override readonly name = 'FuzzFinding';
}
