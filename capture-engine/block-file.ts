/**
 * What the two block readers (capture-engine/pcap-block-reader.ts, capture-engine/pcapng-block-reader.ts) do with the
 * file itself: open it when it is a regular file that starts as their format does, and read a piece
 * of it into a batch's buffer.
 */
import * as fs from 'node:fs';
import { WireError, WireErrorCode } from '../packets/errors';

/**
 * Opens `path` when it is a regular file of at least `headLen` bytes whose first `headLen` bytes
 * `accept` takes (its verdict is returned with the file); null otherwise, with the file closed
 * (standard input, a pipe, another format: the record-by-record reader takes those).
 */
export function openBlockFile<T>(path: string, headLen: number, accept: (head: DataView) => T | null): { fd: number; size: number; head: T } | null {
  if (path === '-') return null;
  const fd = fs.openSync(path, 'r');
  try {
    const st = fs.fstatSync(fd);
    if (st.isFile() && st.size >= headLen) {
      const bytes = new Uint8Array(headLen);
      if (fs.readSync(fd, bytes, 0, headLen, 0) === headLen) {
        const head = accept(new DataView(bytes.buffer));
        if (head !== null) return { fd, size: st.size, head };
      }
    }
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  fs.closeSync(fd);
  return null;
}

/**
 * Fills `buf` from its start with the bytes of a `size`-byte file from `off` on, as many as fit;
 * returns how many. A record or block cut by the buffer's end is the caller's to read again.
 */
export function readBlock(fd: number, buf: Uint8Array, off: number, size: number): number {
  const n = Math.min(buf.length, size - off);
  for (let got = 0; got < n; ) {
    const r = fs.readSync(fd, buf, got, n - got, off + got);
    if (r <= 0) throw new WireError(WireErrorCode.Truncated, off + got, `capture file shrank while it was read (${off + got} of ${size} bytes)`);
    got += r;
  }
  return n;
}
