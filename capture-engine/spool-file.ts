/**
 * A temporary file for the runs of a SortedSpool (base/sorted-spool.ts). It is unlinked as soon as
 * it is open, so nothing is left behind however the command ends; its space is taken from the
 * temporary directory until the file is closed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SpoolStore } from '../base/sorted-spool';
import { RoceError } from '../base/roce-error';
import { fileErrorText } from '../base/file-error';

export interface SpoolFile extends SpoolStore {
  close(): void;
}

/** Writing or reading the spool file failed (the temporary directory is full, say). */
export class SpoolFileError extends RoceError<'ROCE_ERR_SPOOL'> {
  constructor(message: string) {
    super('ROCE_ERR_SPOOL', message);
  }
}

/** A spool file in `dir` (default: the system's temporary directory), or null when none can be made there. */
export function openSpoolFile(dir: string = os.tmpdir()): SpoolFile | null {
  let where: string;
  try {
    where = fs.mkdtempSync(path.join(dir, 'roce-spool-'));
  } catch {
    return null;
  }
  const file = path.join(where, 'runs');
  let fd: number;
  try {
    fd = fs.openSync(file, 'w+', 0o600);
  } catch {
    return null;
  } finally {
    fs.rmSync(file, { force: true });
    fs.rmSync(where, { recursive: true, force: true });
  }
  let open = true;
  let size = 0;
  const failed = (what: string, e: unknown): SpoolFileError =>
    new SpoolFileError(`the temporary spool file in ${dir} could not be ${what}: ${fileErrorText(e)}`);
  return {
    append(bytes) {
      const start = size;
      try {
        let done = 0;
        while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done, start + done);
      } catch (e) {
        throw failed('written', e);
      }
      size += bytes.length;
      return start;
    },
    read(into, position) {
      try {
        return fs.readSync(fd, into, 0, into.length, position);
      } catch (e) {
        throw failed('read', e);
      }
    },
    close() {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
}
