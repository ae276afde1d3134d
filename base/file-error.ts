/**
 * Why the CLI could not read or write a file, in words. Node's file-system errors are told apart
 * by their exact errno `code` (ENOENT, EISDIR, ...), each said as strerror says it; anything else
 * gives its message. `types.isNativeError` rather than `instanceof Error`: under jest the fs
 * module's errors come from another realm.
 */
import { types } from 'node:util';

const WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large',
  EIO: 'input/output error',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many levels of symbolic links',
  EMFILE: 'too many open files',
};

/** The errno code of a file-system error (ENOENT, EISDIR, ...), or null for anything else. */
export function fileErrorCode(e: unknown): string | null {
  if (!types.isNativeError(e)) return null;
  const code = (e as NodeJS.ErrnoException).code;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) && typeof (e as NodeJS.ErrnoException).syscall === 'string' ? code : null;
}

/**
 * Why a file could not be read (`writing`: written). A file to write whose folder does not exist
 * fails with ENOENT too, which then says so.
 */
export function fileErrorText(e: unknown, writing = false): string {
  if (!types.isNativeError(e)) return String(e);
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' && writing) return 'no such directory';
  if (code !== undefined && WORDS[code] !== undefined) return WORDS[code];
  return e.message;
}
