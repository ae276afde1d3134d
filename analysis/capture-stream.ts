/**
 * Reading a capture file from disk in pieces, so analysing a capture takes
 * memory that does not grow with the file. The records come from the same
 * readers `iterateCapture` runs over a file in memory (`iterateCaptureBytes` in
 * packets/pcap.ts), here over a `CaptureBytes` source that reads the file a
 * chunk at a time: classic pcap a record at a time, pcapng a block at a time,
 * with the same records, offsets and errors.
 *
 * A pipe, a FIFO or standard input (`-`) is read as it comes, forward only
 * (`tcpdump -U -w - | roce decode -`): its length is unknown until it ends, so
 * the source reports where it ended and how (at a record's or block's boundary,
 * or inside one), and each record is handed on as soon as it has arrived.
 *
 * Each yielded record's `data` is a view into a reused buffer: valid only
 * until the next record is requested.
 */
import * as fs from 'node:fs';
import { WireError, WireErrorCode } from '../packets/errors';
import { internalError } from '../base/programming-error';
import { type CaptureBytes, type CaptureRecord, type CaptureWindow, captureFormat, iterateCapture, iterateCaptureBytes } from '../packets/pcap';

/** Bytes read at once (and the size of the read buffer, unless a record or block is larger). */
const CHUNK = 1 << 20;

export interface StreamResult {
  format: 'pcap' | 'pcapng';
  error: WireError | null;
}

/** The path that names standard input. */
export const STDIN_PATH = '-';

export interface StreamOptions {
  /**
   * Called before each read of a pipe, which may wait for its writer: a command that prints as it
   * goes hands over what it has, so a live capture's lines appear as its frames arrive.
   */
  beforeWait?: () => void;
  /**
   * Bytes a file is read in at once, and the read buffer's first size (default 1 MiB): a test reads
   * a small file in many chunks, as a large one is read in production.
   */
  chunkBytes?: number;
}

/**
 * Streams the records of the capture at `path` (`-`: standard input). The generator's return
 * value says how reading ended. Throws only when the file cannot be opened or read.
 */
export function* streamCaptureFile(path: string, opts: StreamOptions = {}): Generator<CaptureRecord, StreamResult> {
  const stdin = path === STDIN_PATH;
  const fd = stdin ? 0 : fs.openSync(path, 'r');
  try {
    const st = fs.fstatSync(fd);
    if (st.isFile()) {
      const src = fileBytes(fd, st.size, opts.chunkBytes ?? CHUNK);
      const { format } = captureFormat(src);
      const error = yield* iterateCaptureBytes(src);
      return { format, error };
    }
    return yield* streamCapturePipe(fdReader(fd), opts.beforeWait);
  } finally {
    if (!stdin) fs.closeSync(fd);
  }
}

/**
 * Reads into `into` from index `at` as many bytes as have arrived (waiting for at least one);
 * 0 when the input has ended.
 */
export type PipeRead = (into: Uint8Array, at: number) => number;

/** The records of a capture read as it comes, forward only, through `read`; the return value says how reading ended. */
export function* streamCapturePipe(read: PipeRead, beforeWait?: () => void): Generator<CaptureRecord, StreamResult> {
  const src = pipeBytes(read, beforeWait);
  let format: StreamResult['format'] = 'pcap';
  try {
    format = captureFormat(src).format;
    const error = yield* iterateCaptureBytes(src);
    return { format, error };
  } catch (e) {
    // The readers return what they find wrong; what is thrown here is the pipe's end (or a failed read).
    const total = src.total;
    if (!(e instanceof WireError) || total === null) throw e;
    // Ending where a record or block would start is the end of the capture (as a file's end is);
    // before the magic, or inside a header, record or block, it is a truncation.
    if (e.offset === total && total > 0) return { format, error: null };
    return { format, error: total === 0 ? new WireError(WireErrorCode.Truncated, 0, 'capture magic needs 4 bytes but only 0 remain') : e };
  }
}

/** A PipeRead over a file descriptor (a pipe, a FIFO, a terminal: read where it stands). */
function fdReader(fd: number): PipeRead {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  return (into, at) => {
    for (;;) {
      try {
        return fs.readSync(fd, into, at, into.length - at, null);
      } catch (e) {
        // A pipe another process made non-blocking: nothing has arrived yet.
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
        Atomics.wait(sleeper, 0, 0, PIPE_RETRY_MS);
      }
    }
  };
}

/** How long to wait for a non-blocking pipe that has nothing yet, before trying again. */
const PIPE_RETRY_MS = 1;

/**
 * A pipe read forward as the readers ask. The buffer keeps what the current window needs onward,
 * and a read takes what the pipe has (at least one byte, waiting for it), so a record is handed on
 * as soon as it is whole. The length is unknown: reads go on until the pipe ends; asking for bytes
 * past its end then throws a Truncated WireError at the offset asked for, and `total` says how many
 * bytes the pipe carried.
 */
function pipeBytes(readSome: PipeRead, beforeWait: (() => void) | undefined): CaptureBytes & { readonly total: number | null } {
  let buf = new Uint8Array(CHUNK);
  let from = 0; // stream offset of buf[0]
  let have = 0; // valid bytes in buf
  let ended = false;
  const w: CaptureWindow = { buf, view: new DataView(buf.buffer), at: 0, end: 0 };
  let total: number | null = null;
  return {
    length: Number.MAX_SAFE_INTEGER,
    get total(): number | null {
      return total;
    },
    window(off: number, n: number): CaptureWindow {
      if (off < from) throw internalError(`a pipe is read forward only (asked for byte ${off}, kept from ${from})`);
      if (off + n > from + have) {
        // Keep [off, from + have); skip what lies before `off` (read but not asked for again).
        let skip = off - from - have;
        if (skip < 0) buf.copyWithin(0, off - from, have);
        have = Math.max(0, from + have - off);
        from = off;
        if (n > buf.length) {
          const bigger = new Uint8Array(Math.max(n, buf.length * 2));
          bigger.set(buf.subarray(0, have));
          buf = bigger;
          w.buf = buf;
          w.view = new DataView(buf.buffer);
        }
        while (skip > 0 && !ended) {
          beforeWait?.();
          const r = readSome(buf.subarray(0, Math.min(skip, buf.length)), 0);
          if (r === 0) ended = true;
          skip -= r;
        }
        while (have < n && !ended) {
          beforeWait?.();
          const r = readSome(buf, have);
          if (r === 0) ended = true;
          have += r;
        }
        if (have < n) {
          total = skip > 0 ? off - skip : off + have;
          throw new WireError(
            WireErrorCode.Truncated,
            off,
            total < off
              ? `the input ended at byte ${total}, before the ${n} bytes that start here`
              : `the input ended after ${total - off} of the ${n} bytes that start there`,
          );
        }
      }
      w.at = off - from;
      w.end = have;
      return w;
    },
  };
}

/**
 * A capture file read as the readers ask: each window is read into one reused buffer (grown to
 * the largest record or block), a chunk at a time, so a window that lies in what was read last
 * costs no read.
 */
function fileBytes(fd: number, size: number, chunk: number): CaptureBytes {
  let buf = new Uint8Array(chunk);
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

/**
 * Hands each record of the capture at `source` (a path, read in pieces) or held whole to `take`, in
 * order; returns why reading ended early, or null. A record's `data` is valid only during `take`.
 */
export function forEachRecord(source: string | Uint8Array, take: (rec: CaptureRecord) => void): WireError | null {
  if (typeof source === 'string') {
    const it = streamCaptureFile(source);
    for (;;) {
      const step = it.next();
      if (step.done === true) return step.value.error;
      take(step.value);
    }
  }
  const it = iterateCapture(source);
  for (;;) {
    const step = it.next();
    if (step.done === true) return step.value;
    take(step.value);
  }
}
