/**
 * Why the CLI could not read a file, in words. Node's file-system errors are
 * told apart by their exact errno `code` (ENOENT, EISDIR); anything else gives
 * its message. `types.isNativeError` rather than `instanceof Error`: under jest
 * the fs module's errors come from another realm.
 */
import { types } from 'node:util';

export function fileErrorText(e: unknown): string {
  if (!types.isNativeError(e)) return String(e);
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'is a directory';
  return e.message;
}
