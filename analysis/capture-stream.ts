/**
 * Reading a capture file from disk in pieces, so analysing a capture takes
 * memory that does not grow with the file. The records come from the same
 * readers `iterateCapture` runs over a file in memory (`iterateCaptureBytes` in
 * packets/pcap.ts), here over a `CaptureBytes` source that reads the file a
 * chunk at a time: classic pcap a record at a time, pcapng a block at a time,
 * with the same records, offsets and errors.
 *
 * Each yielded record's `data` is a view into a reused buffer: valid only
 * until the next record is requested.
 */
import * as fs from 'node:fs';
import { WireError, WireErrorCode } from '../packets/errors';
import { type CaptureBytes, type CaptureRecord, type CaptureWindow, captureFormat, iterateCaptureBytes } from '../packets/pcap';

/** Bytes read at once (and the size of the read buffer, unless a record or block is larger). */
const CHUNK = 1 << 20;

export interface StreamResult {
  format: 'pcap' | 'pcapng';
  error: WireError | null;
}

/**
 * Streams the records of the capture at `path`. The generator's return value
 * says how reading ended. Throws only when the file cannot be opened or read.
 */
export function* streamCaptureFile(path: string): Generator<CaptureRecord, StreamResult> {
  const fd = fs.openSync(path, 'r');
  try {
    const src = fileBytes(fd, fs.fstatSync(fd).size);
    const { format } = captureFormat(src);
    const error = yield* iterateCaptureBytes(src);
    return { format, error };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A capture file read as the readers ask: each window is read into one reused buffer (grown to
 * the largest record or block), a chunk at a time, so a window that lies in what was read last
 * costs no read.
 */
function fileBytes(fd: number, size: number): CaptureBytes {
  let buf = new Uint8Array(CHUNK);
  let from = 0; // file offset of buf[0]
  let have = 0; // valid bytes in buf
  const w: CaptureWindow = { buf, view: new DataView(buf.buffer), at: 0, end: 0 };
  return {
    length: size,
    window(off: number, n: number): CaptureWindow {
      if (off < from || off + n > from + have) {
        if (n > buf.length) {
          buf = new Uint8Array(Math.max(n, buf.length * 2));
          w.buf = buf;
          w.view = new DataView(buf.buffer);
        }
        // Read from `off` as much as fits: the next records usually follow.
        from = off;
        have = 0;
        while (have < n) {
          const r = fs.readSync(fd, buf, have, Math.min(buf.length - have, size - off - have), off + have);
          if (r <= 0) break;
          have += r;
        }
        if (have < n) throw new WireError(WireErrorCode.Truncated, off + have, `capture file shrank while it was read (${off + have} of ${size} bytes)`);
      }
      w.at = off - from;
      w.end = have;
      return w;
    },
  };
}
